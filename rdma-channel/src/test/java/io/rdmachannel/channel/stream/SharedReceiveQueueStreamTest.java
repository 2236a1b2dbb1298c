package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * SRQ mode on the shm provider: the connections a listener accepts take their receives from one shared receive
 * queue per device, reserve only their minimum credits (and spares) while idle, borrow while busy, and give back
 * what they reserved when they close. The clients here keep receive queues of their own, so the shared queue's
 * account is the listener's alone.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SharedReceiveQueueStreamTest {
    private static final int MINIMUM = StreamConfiguration.SHARED_RECEIVE_CREDITS_DEFAULT;
    private static final int SPARES = StreamConfiguration.CONTROL_WINDOW_DEFAULT;

    private final ExecutorService threads = Executors.newThreadPerTaskExecutor(
        Thread.ofPlatform().daemon().factory());
    private final List<AutoCloseable> open = new ArrayList<>();
    private final List<StreamConnection> accepted = new ArrayList<>();
    private final List<StreamConnection> clients = new ArrayList<>();
    private final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
    private final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
    private StreamTransport transport;
    private StreamListener listener;

    @AfterEach
    void closeAll() {
        for (final StreamConnection connection : clients) {
            connection.wakeDirectWaiters();
            connection.close();
        }
        for (final StreamConnection connection : accepted) {
            connection.wakeDirectWaiters();
            connection.close();
        }
        if (listener != null) {
            listener.close();
        }
        threads.shutdownNow();
        if (transport != null) {
            StreamTransports.close(transport);
        }
    }

    /** A transport whose shared receive queues hold {@code size} receives, and a listener in SRQ mode. */
    private void listen(final int size) throws IOException {
        listen(size, StreamConfiguration.RNR_RETRY_COUNT_DEFAULT);
    }

    /** The same with {@code rnrRetries} RNR retries: with 0 a message that finds no receive fails its connection. */
    private void listen(final int size, final int rnrRetries) throws IOException {
        transport = WithProperty.open(StreamConfiguration.SHARED_RECEIVE_QUEUE_SIZE_PROP_NAME, String.valueOf(size),
            () -> WithProperty.open(StreamConfiguration.RNR_RETRY_COUNT_PROP_NAME, String.valueOf(rnrRetries),
                () -> StreamTransports.open(RdmaProviders.byName("shm"))));
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64,
            new StreamOptions().sharedReceiveQueue(true), serverWaker);
    }

    /** Connect a client with a receive queue of its own; the accepted end is in SRQ mode. */
    private RsocketConnection connect() throws IOException {
        final SocketAddress address = listener.localAddress();
        clients.add(BlockingStream.connect(transport.connect(address, null, new StreamOptions(), clientWaker),
            clientWaker));
        final StreamConnection server = BlockingStream.accept(listener, serverWaker);
        accepted.add(server);
        return (RsocketConnection) server;
    }

    @Test
    void shouldReserveOnlyTheMinimumCreditsForAnIdleConnection() throws IOException {
        listen(StreamConfiguration.SHARED_RECEIVE_QUEUE_SIZE_DEFAULT);
        final RsocketConnection first = connect();
        final RsocketConnection second = connect();

        final SharedReceivePool pool = first.sharedReceivePool();
        assertNotNull(pool, first::describe);
        assertSame(pool, second.sharedReceivePool());
        assertNull(((RsocketConnection) clients.get(0)).sharedReceivePool(), "the client asked for its own queue");
        // one batch posted; each idle connection holds its minimum credits and spares, not 388 receives
        assertEquals(SharedReceivePool.POST_BATCH, pool.posted());
        assertEquals(SharedReceivePool.POST_BATCH - 2 * (MINIMUM + SPARES), pool.unreserved());
        assertEquals(MINIMUM + SPARES, first.sharedAccount()[0]);
        assertEquals(MINIMUM, first.sharedAccount()[1]);
        assertTrue(first.describe().contains("sharedReceiveQueue=true"), first::describe);
    }

    @Test
    void shouldCarryDataBothWaysAndGrowTheWindowWhileBusy() throws Exception {
        listen(StreamConfiguration.SHARED_RECEIVE_QUEUE_SIZE_DEFAULT);
        final RsocketConnection server = connect();
        final StreamConnection client = clients.get(0);
        int widest = 0;
        final ByteBuffer message = ByteBuffer.allocate(64);
        final ByteBuffer reply = ByteBuffer.allocate(64);
        // many small messages in flight: credits, not ring space, run out, so the window doubles
        final CompletableFuture<Long> sent = write(client, clientWaker, 4 << 20, 64, 1);
        final CRC32 crc = new CRC32();
        final ByteBuffer in = ByteBuffer.allocate(64);
        long received = 0;
        while (true) {
            in.clear();
            final int n = BlockingStream.read(server, in, serverWaker);
            if (n < 0) {
                break;
            }
            crc.update(in.array(), 0, n);
            received += n;
            widest = Math.max(widest, server.sharedAccount()[1]);
        }
        assertEquals(sent.get(60, TimeUnit.SECONDS), crc.getValue(), server::describe);
        assertEquals(4 << 20, received);
        assertTrue(widest > MINIMUM, "the window never grew: " + widest + "; " + server.describe());
        // and back: the SRQ side sends as any connection does
        message.put(new byte[] {1, 2, 3}).flip();
        BlockingStream.writeFully(server, message, serverWaker);
        assertEquals(3, BlockingStream.read(client, reply, clientWaker));
    }

    @Test
    void shouldCarryDataInMessageModeWithTheSharedQueuesBuffers() throws Exception {
        // iWARP: each message is a SEND of 4 bytes into a receive's buffer, here one of the shared queue's
        transport = IwarpEmulation.transport();
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64,
            new StreamOptions().sharedReceiveQueue(true), serverWaker);
        final RsocketConnection server = connect();
        assertTrue(server.describe().contains("messageMode=true"), server::describe);
        assertNotNull(server.sharedReceivePool().messageRegion(), server::describe);
        final CompletableFuture<Long> sent = write(clients.get(0), clientWaker, 1 << 20, 1000, 7);
        final CompletableFuture<Long> received = read(server, serverWaker);
        try {
            assertEquals(sent.get(20, TimeUnit.SECONDS), received.get(20, TimeUnit.SECONDS), server::describe);
        } catch (final TimeoutException ex) {
            throw new AssertionError("server " + server.describe() + "; client " + clients.get(0).describe(), ex);
        }
        assertTrue(server.sharedAccount()[1] > MINIMUM, server::describe);
    }

    @Test
    void shouldLetTwoBusyConnectionsShareAQueueSmallerThanOneWindow() throws Exception {
        // 64 receives: 24 reserved by two connections, 40 to borrow, far below a window of 384
        listen(64);
        final RsocketConnection first = connect();
        final RsocketConnection second = connect();
        final CompletableFuture<Long> firstSent = write(clients.get(0), clientWaker, 8 << 20, 1000, 1);
        final CompletableFuture<Long> secondSent = write(clients.get(1), clientWaker, 8 << 20, 100, 2);
        final CompletableFuture<Long> firstRead = read(first, serverWaker);
        final CompletableFuture<Long> secondRead = read(second, serverWaker);
        try {
            assertEquals(firstSent.get(60, TimeUnit.SECONDS), firstRead.get(60, TimeUnit.SECONDS), first::describe);
            assertEquals(secondSent.get(60, TimeUnit.SECONDS), secondRead.get(60, TimeUnit.SECONDS),
                second::describe);
        } catch (final ExecutionException ex) {
            throw new AssertionError("first: " + first.describe() + "; second: " + second.describe() + "; clients: "
                + clients.get(0).describe() + "; " + clients.get(1).describe(), ex);
        }
        final SharedReceivePool pool = first.sharedReceivePool();
        assertEquals(64, pool.posted());
        assertTrue(pool.unreserved() >= 0 && pool.unreserved() <= 64 - 2 * (MINIMUM + SPARES), pool::toString);
    }

    @Test
    void shouldRefuseAConnectionTheQueueCannotBackAndAdmitOneOnceAnotherCloses() throws Exception {
        listen(64);
        final int fit = 64 / (MINIMUM + SPARES);
        for (int i = 0; i < fit; i++) {
            connect();
        }
        final SharedReceivePool pool = ((RsocketConnection) accepted.get(0)).sharedReceivePool();
        assertEquals(64 - fit * (MINIMUM + SPARES), pool.unreserved());

        final IOException refused = assertThrows(IOException.class, () -> BlockingStream.connect(
            transport.connect(listener.localAddress(), null, new StreamOptions(), clientWaker), clientWaker));
        assertNotNull(refused.getMessage());

        // a connection that closes gives its reservation back: the next one fits
        final StreamConnection last = accepted.remove(accepted.size() - 1);
        last.close();
        assertEquals(64 - (fit - 1) * (MINIMUM + SPARES), pool.unreserved());
        connect();
    }

    @Test
    void shouldGiveEveryReceiveBackWhenConnectionsClose() throws Exception {
        listen(StreamConfiguration.SHARED_RECEIVE_QUEUE_SIZE_DEFAULT);
        final List<CompletableFuture<Long>> writes = new ArrayList<>();
        final List<CompletableFuture<Long>> reads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            final RsocketConnection server = connect();
            writes.add(write(clients.get(i), clientWaker, 1 << 20, 200, i));
            reads.add(read(server, serverWaker));
        }
        for (int i = 0; i < 4; i++) {
            assertEquals(writes.get(i).get(60, TimeUnit.SECONDS), reads.get(i).get(60, TimeUnit.SECONDS));
        }
        final SharedReceivePool pool = ((RsocketConnection) accepted.get(0)).sharedReceivePool();
        for (final StreamConnection connection : accepted) {
            connection.close();
        }
        accepted.clear();
        assertEquals(pool.posted(), pool.unreserved(), pool::toString);
    }

    /**
     * Every credit is backed by a receive, also after a connection closed with messages it never polled: with no RNR
     * retry allowed, a message that found the shared queue empty would fail its connection. A connection grows its
     * window, stops reading, lets its peer use every credit, and closes; then five connections take the whole queue
     * and their peers send every credit they have at once, none read until all arrived.
     */
    @Test
    void shouldBackEveryCreditAfterAConnectionClosedWithMessagesItNeverPolled() throws Exception {
        listen(64, 0);
        final RsocketConnection busy = connect();
        final StreamConnection busyClient = clients.get(0);
        final ByteBuffer one = ByteBuffer.allocate(1);
        final ByteBuffer in = ByteBuffer.allocate(1);
        // credits run out while the reader keeps up: the window grows by borrowing
        for (int i = 0; i < 2000 && busy.sharedAccount()[0] < 30; i++) {
            BlockingStream.writeFully(busyClient, one.clear(), clientWaker);
            assertEquals(1, BlockingStream.read(busy, in.clear(), serverWaker));
        }
        final int reserved = busy.sharedAccount()[0];
        assertTrue(reserved >= 30, () -> "the window did not grow: " + busy.describe());
        // the reader stops; the peer uses every credit it was granted
        int sent = 0;
        while (busyClient.write(one.clear()) == 1) {
            sent++;
        }
        final int unread = sent;
        assertTrue(unread >= 20, () -> unread + " messages sent; " + busy.describe());
        // shm moves a message while it is posted: each took a shared receive, and none was polled
        final SharedReceivePool pool = busy.sharedReceivePool();
        accepted.remove(busy);
        busy.close();
        assertEquals(pool.posted(), pool.unreserved(), pool::toString);

        final int fit = 64 / (MINIMUM + SPARES);
        final List<RsocketConnection> servers = new ArrayList<>();
        for (int i = 0; i < fit; i++) {
            servers.add(connect());
        }
        for (int i = 1; i <= fit; i++) {
            for (int m = 0; m < MINIMUM; m++) {
                BlockingStream.writeFully(clients.get(i), one.clear(), clientWaker);
            }
        }
        // a message that found no receive failed its sender's queue pair (and never arrives: the reader waits)
        assertTimeoutPreemptively(Duration.ofSeconds(20), () -> {
            for (final RsocketConnection server : servers) {
                for (int m = 0; m < MINIMUM; m++) {
                    assertEquals(1, BlockingStream.read(server, in.clear(), serverWaker), server::describe);
                }
            }
        }, () -> "a message was lost; clients: " + clients.stream().map(StreamConnection::describe).toList());
    }

    /** Write {@code total} random bytes in pieces of up to {@code piece}, then shut the output down; their CRC-32. */
    private CompletableFuture<Long> write(final StreamConnection connection, final BlockingStream.Waker waker,
        final int total, final int piece, final long seed) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return BlockingStream.writeRandom(connection, waker, total, piece, seed);
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, threads);
    }

    /** Read to the end of the stream; the CRC-32 of what came. */
    private CompletableFuture<Long> read(final StreamConnection connection, final BlockingStream.Waker waker) {
        return CompletableFuture.supplyAsync(() -> {
            final ByteBuffer in = ByteBuffer.allocate(8192);
            final CRC32 crc = new CRC32();
            try {
                while (true) {
                    in.clear();
                    final int n = BlockingStream.read(connection, in, waker);
                    if (n < 0) {
                        return crc.getValue();
                    }
                    crc.update(in.array(), 0, n);
                }
            } catch (final IOException ex) {
                throw new IllegalStateException(ex);
            }
        }, threads);
    }
}
