package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Connections that reuse the memory of ended ones (two shm transports, as two processes have), in RC and in XRC
 * mode: every byte of each connection arrives intact although its rings and target SGL held another connection's
 * data and addresses, and with the pool turned off nothing is reused.
 */
class ConnectionMemoryReuseTest {
    private static final int CYCLES = 40;
    private static final int BYTES = 300_000;

    private StreamTransport serverTransport;
    private StreamTransport clientTransport;
    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(
        Thread.ofPlatform().daemon().factory());

    @AfterEach
    void close() {
        threads.shutdownNow();
        if (clientTransport != null) {
            StreamTransports.close(clientTransport);
        }
        if (serverTransport != null) {
            StreamTransports.close(serverTransport);
        }
    }

    private void open(final int poolSize) throws IOException {
        serverTransport = WithProperty.open(StreamConfiguration.MEMORY_POOL_SIZE_PROP_NAME, Integer.toString(poolSize),
            () -> StreamTransports.open(RdmaProviders.byName("shm")));
        clientTransport = WithProperty.open(StreamConfiguration.MEMORY_POOL_SIZE_PROP_NAME, Integer.toString(poolSize),
            () -> StreamTransports.open(RdmaProviders.byName("shm")));
    }

    @ParameterizedTest(name = "xrc={0}")
    @ValueSource(booleans = {false, true})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldCarryEveryByteOverConnectionsThatReuseEndedOnesMemory(final boolean xrc) throws Exception {
        open(StreamConfiguration.MEMORY_POOL_SIZE_DEFAULT);

        churn(xrc);

        final long serverReused = reused(serverTransport);
        final long clientReused = reused(clientTransport);
        assertTrue(serverReused >= CYCLES - 2, "the server reused memory " + serverReused + " times");
        assertTrue(clientReused >= CYCLES - 2, "the client reused memory " + clientReused + " times");
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void shouldReuseNothingWithThePoolOff() throws Exception {
        open(0);

        churn(false);

        assertEquals(0, reused(serverTransport));
        assertEquals(0, reused(clientTransport));
        assertEquals(0, ((RsocketTransport) clientTransport).contexts().getFirst().memoryPool().idleCount());
    }

    private static long reused(final StreamTransport transport) {
        return ((RsocketTransport) transport).contexts().getFirst().memoryPool().reusedCount();
    }

    /**
     * Connections one after the other, each sending a different pseudo-random stream both ways at once and checking
     * what it received; in XRC mode (the peer writes through our target into the ring named by our XRC shared
     * receive queue) or RC.
     */
    private void churn(final boolean xrc) throws Exception {
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        try (StreamListener listener = serverTransport.listen(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8, new StreamOptions().xrc(xrc),
            serverWaker)) {
            final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
            for (int i = 0; i < CYCLES; i++) {
                final long seed = i;
                final CompletableFuture<StreamConnection> accepted = CompletableFuture.supplyAsync(
                    () -> call(() -> BlockingStream.accept(listener, serverWaker)), threads);
                try (StreamConnection client = BlockingStream.connect(clientTransport.connect(
                    listener.localAddress(), null, new StreamOptions().xrc(xrc), clientWaker), clientWaker);
                    StreamConnection server = accepted.get(30, TimeUnit.SECONDS)) {
                    assertEquals(xrc ? "XRC" : "RC", ((RsocketConnection) client).info().mode());
                    final CompletableFuture<Void> serverSide = CompletableFuture.runAsync(
                        () -> call(() -> exchange(server, serverWaker, seed * 2 + 1, seed * 2, "server", seed)),
                        threads);
                    exchange(client, clientWaker, seed * 2, seed * 2 + 1, "client", seed);
                    serverSide.get(30, TimeUnit.SECONDS);
                }
            }
        }
    }

    private Void exchange(final StreamConnection connection, final BlockingStream.Waker waker, final long sendSeed,
        final long receiveSeed, final String side, final long cycle) throws Exception {
        final CompletableFuture<Void> sending = CompletableFuture.runAsync(() -> call(() -> {
            final ByteBuffer data = pattern(sendSeed);
            BlockingStream.writeFully(connection, data, waker);
            return null;
        }), threads);
        final ByteBuffer received = ByteBuffer.allocateDirect(BYTES);
        while (received.hasRemaining()) {
            if (BlockingStream.read(connection, received, waker) < 0) {
                throw new IOException(side + " of cycle " + cycle + ": end of stream after " + received.position());
            }
        }
        sending.get(30, TimeUnit.SECONDS);
        assertEquals(crc(pattern(receiveSeed)), crc(received.flip()), side + " of cycle " + cycle
            + " received other bytes than its peer sent");
        return null;
    }

    private static ByteBuffer pattern(final long seed) {
        final SplittableRandom random = new SplittableRandom(seed);
        final ByteBuffer data = ByteBuffer.allocateDirect(BYTES);
        while (data.remaining() >= Long.BYTES) {
            data.putLong(random.nextLong());
        }
        while (data.hasRemaining()) {
            data.put((byte) random.nextInt());
        }
        return data.flip();
    }

    private static long crc(final ByteBuffer data) {
        final CRC32C crc = new CRC32C();
        crc.update(data.duplicate());
        return crc.getValue();
    }

    @FunctionalInterface
    private interface Step<T> {
        T run() throws Exception;
    }

    private static <T> T call(final Step<T> step) {
        try {
            return step.run();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        } catch (final RuntimeException ex) {
            throw ex;
        } catch (final Exception ex) {
            throw new IllegalStateException(ex);
        }
    }
}
