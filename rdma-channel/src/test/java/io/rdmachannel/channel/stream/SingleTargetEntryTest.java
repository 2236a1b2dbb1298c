package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Engines that advertise a target SGL of one entry ({@code rdmachannel.stream.targetSglEntries=1}): the peer
 * publishes every ring half into that one slot, so a region may arrive while the slot is still in use.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SingleTargetEntryTest {
    private StreamTransport transport;
    private ExecutorService threads;
    private StreamListener listener;
    private final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
    private final BlockingStream.Waker clientWaker = new BlockingStream.Waker();

    @BeforeEach
    void open() throws IOException {
        transport = WithProperty.open(StreamConfiguration.TARGET_SGL_ENTRIES_PROP_NAME, "1",
            () -> StreamTransports.open(RdmaProviders.byName("shm")));
        threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            new StreamOptions(), serverWaker);
    }

    @AfterEach
    void close() {
        listener.close();
        threads.shutdownNow();
        StreamTransports.close(transport);
    }

    @Test
    void shouldDescribeAConnectionWithOneTargetEntry() throws Exception {
        try (StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions(), clientWaker), clientWaker);
            StreamConnection server = BlockingStream.accept(listener, serverWaker)) {
            assertTrue(client.describe().contains("targetLength=" + StreamConfiguration.RECEIVE_BUFFER_LENGTH_DEFAULT
                / 2 + ","), client::describe);
            assertTrue(server.describe().contains("targetSge=0"), server::describe);
        }
    }

    @Test
    void shouldStreamThroughOneTargetEntry() throws Exception {
        final long total = 32L << 20;
        final CompletableFuture<Long> server = CompletableFuture.supplyAsync(() -> {
            try (StreamConnection connection = BlockingStream.accept(listener, serverWaker)) {
                final CRC32 crc = new CRC32();
                final ByteBuffer buffer = ByteBuffer.allocate(100_000);
                while (BlockingStream.read(connection, buffer.clear(), serverWaker) > 0) {
                    crc.update(buffer.flip());
                }
                return crc.getValue();
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, threads);
        try (StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
            new StreamOptions(), clientWaker), clientWaker)) {
            final CRC32 crc = new CRC32();
            final Random random = new Random(17);
            final byte[] chunk = new byte[200_000];
            long sent = 0;
            while (sent < total) {
                final int size = (int) Math.min(total - sent, 1 + random.nextInt(chunk.length));
                random.nextBytes(chunk);
                crc.update(chunk, 0, size);
                BlockingStream.writeFully(client, ByteBuffer.wrap(chunk, 0, size), clientWaker);
                sent += size;
            }
            client.shutdownOutput();
            assertEquals(crc.getValue(), server.get(30, TimeUnit.SECONDS), client::describe);
        }
    }
}
