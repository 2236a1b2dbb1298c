package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.cm.CmConnection;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.ConnectionRequestFilter;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Where a connection request leaves from: the connecting thread sends it without waiting for its connection
 * manager's thread (one hand-off less per connect), a connecting thread whose interrupt status is set, whose
 * socket calls would be refused, leaves it to the manager's thread and keeps its status, and one whose manager
 * stopped before the hand-over ends the attempt itself.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmConnectRequestTest {
    private ConnectionManager server;
    private ShmConnectionManager client;
    private CmListener listener;
    private final LinkedBlockingQueue<ConnectionRequest> requests = new LinkedBlockingQueue<>();

    @BeforeEach
    void open() throws IOException {
        server = RdmaProviders.byName("shm").openConnectionManager(null);
        client = (ShmConnectionManager) RdmaProviders.byName("shm").openConnectionManager(null);
        listener = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8, request -> {
            requests.add(request);
            return new Rejection(RejectReason.POLICY, "seen");
        }, remote -> {
            throw new AssertionError("a rejected request got an endpoint");
        });
    }

    @AfterEach
    void close() {
        listener.close();
        client.close();
        server.close();
    }

    @Test
    void shouldSendTheRequestFromTheConnectingThreadWhileTheManagersThreadIsBusy() throws Exception {
        final CountDownLatch release = occupy(client);
        final Endpoint endpoint = new Endpoint();
        final CmConnection attempt = client.connect(listener.localAddress(), null, endpoint);
        try {
            final ConnectionRequest request = requests.poll(10, TimeUnit.SECONDS);
            assertTrue(request != null, "the listener saw no request while the client's manager thread was busy");
            assertFalse(endpoint.outcome.isDone(), "the attempt ended before the manager's thread took it over");
        } finally {
            release.countDown();
        }
        assertRejected(endpoint);
        attempt.close();
    }

    @Test
    void shouldLeaveTheRequestToTheManagersThreadWhenTheCallerIsInterrupted() throws Exception {
        final Endpoint endpoint = new Endpoint();
        final CompletableFuture<Boolean> stillInterrupted = new CompletableFuture<>();
        final Thread caller = Thread.ofPlatform().start(() -> {
            Thread.currentThread().interrupt();
            try {
                client.connect(listener.localAddress(), null, endpoint);
                stillInterrupted.complete(Thread.currentThread().isInterrupted());
            } catch (final IOException | RuntimeException ex) {
                stillInterrupted.completeExceptionally(ex);
            }
        });
        caller.join(TimeUnit.SECONDS.toMillis(10));
        assertTrue(stillInterrupted.get(10, TimeUnit.SECONDS), "the caller's interrupt status was cleared");
        assertTrue(requests.poll(10, TimeUnit.SECONDS) != null, "the request never reached the listener");
        assertRejected(endpoint);
    }

    /**
     * The manager stops while a connecting thread is between its request and the hand-over to the manager's thread
     * (here: from the endpoint's bind, which runs on the connecting thread): the manager's thread has taken its last
     * tasks and is gone, so the hand-over is refused and the connecting side ends the attempt itself. Before, the
     * hand-over sat in the queue for ever: the attempt was never told and kept its queue pair.
     */
    @Test
    void shouldEndAnAttemptWhoseManagerStoppedBeforeTheHandOver() throws Exception {
        final Endpoint endpoint = new Endpoint();
        endpoint.onBind = client::stop;
        client.connect(listener.localAddress(), null, endpoint);
        final ExecutionException failed = assertThrows(ExecutionException.class,
            () -> endpoint.outcome.get(10, TimeUnit.SECONDS));
        assertEquals("the shm connection manager is closed", failed.getCause().getMessage());
        assertEquals(0, endpoint.openQueuePairs(), "the ended attempt's queue pair is still open");
        assertEquals("the shm connection manager is closed", assertThrows(
            IOException.class, () -> client.connect(listener.localAddress(), null, new Endpoint())).getMessage(),
            "a connect after the stop is refused at once");
    }

    /**
     * The requester cannot create its queue pair (here its endpoint refuses; in life, for example, the process is out
     * of mappings): the attempt fails with that cause. Before, any failure before the queue pair existed was reported
     * as "Connection refused", as if nobody listened.
     */
    @Test
    void shouldReportWhyTheRequestersOwnResourcesFailed() throws Exception {
        final Endpoint endpoint = new Endpoint();
        endpoint.prepareFailure = new IOException("no room for the requester's queue pair");
        client.connect(listener.localAddress(), null, endpoint);
        final ExecutionException failed = assertThrows(ExecutionException.class,
            () -> endpoint.outcome.get(10, TimeUnit.SECONDS));
        assertEquals("no room for the requester's queue pair", failed.getCause().getMessage());
        assertTrue(requests.isEmpty(), "a request went out without a queue pair");
    }

    /**
     * The listener's side cannot create the connection's resources: the requester is refused with "no resources"
     * and the listener's reason in the rejection's detail.
     */
    @Test
    void shouldTellTheRequesterWhyTheListenerHadNoResources() throws Exception {
        final CmListener starved = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            ConnectionRequestFilter.ACCEPT_ALL, remote -> {
                final Endpoint refusing = new Endpoint();
                refusing.prepareFailure = new IOException("the listener is out of mappings");
                return refusing;
            });
        try {
            final Endpoint endpoint = new Endpoint();
            client.connect(starved.localAddress(), null, endpoint);
            final ExecutionException failed = assertThrows(
                ExecutionException.class, () -> endpoint.outcome.get(10, TimeUnit.SECONDS));
            assertInstanceOf(ConnectException.class, failed.getCause());
            assertEquals("Connection refused: no resources: the listener is out of mappings",
                failed.getCause().getMessage());
            assertEquals(0, endpoint.openQueuePairs(), "the refused attempt's queue pair is still open");
        } finally {
            starved.close();
        }
    }

    /**
     * The listener's backlog is full (its thread is busy and the kernel's queue of its socket holds as many
     * connections as it takes): the attempt waits for room, as a TCP connect sends its SYN again, and its request
     * reaches the listener once the listener accepts again. Before, it failed at once with "Connection refused".
     */
    @Test
    void shouldWaitForRoomInAListenersFullBacklog() throws Exception {
        final CountDownLatch release = occupy((ShmConnectionManager) server);
        final Path socket = listenerSocket(listener.localAddress());
        final List<SocketChannel> queued = new ArrayList<>();
        final Endpoint endpoint = new Endpoint();
        try {
            while (true) {
                final SocketChannel filler = SocketChannel.open(StandardProtocolFamily.UNIX);
                filler.configureBlocking(false);
                try {
                    filler.connect(UnixDomainSocketAddress.of(socket));
                } catch (final SocketException full) {
                    break;
                }
                queued.add(filler);
                assertTrue(queued.size() < 10_000, "the listener's backlog never filled");
            }
            client.connect(listener.localAddress(), null, endpoint);
            Thread.sleep(200);
            assertFalse(endpoint.outcome.isDone(), () -> "the attempt ended while the backlog was full: "
                + endpoint.outcome);
        } finally {
            release.countDown();
            for (final SocketChannel filler : queued) {
                filler.close();
            }
        }
        assertRejected(endpoint);
    }

    /**
     * A listener's socket file whose process is gone (closed without being unlinked, as SIGKILL leaves it) refuses at
     * once: the requester reads "Connection refused" at once, and does not wait for room as at a full backlog.
     */
    @Test
    void shouldRefuseAtOnceAtTheSocketOfADeadListener() throws Exception {
        final CmListener gone = server.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            ConnectionRequestFilter.ACCEPT_ALL, remote -> new Endpoint());
        final SocketAddress address = gone.localAddress();
        gone.close();
        try (ServerSocketChannel dead = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            dead.bind(UnixDomainSocketAddress.of(listenerSocket(address)));
        }
        try {
            final Endpoint endpoint = new Endpoint();
            final long start = System.nanoTime();
            client.connect(address, null, endpoint);
            final ExecutionException failed = assertThrows(ExecutionException.class,
                () -> endpoint.outcome.get(10, TimeUnit.SECONDS));
            assertInstanceOf(ConnectException.class, failed.getCause());
            assertEquals("Connection refused", failed.getCause().getMessage());
            final long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            // waiting for room would end at the connect timeout (10 s); a loaded machine's pause takes less
            assertTrue(tookMillis < 5000, "refused after " + tookMillis + " ms");
        } finally {
            Files.deleteIfExists(listenerSocket(address));
        }
    }

    private static Path listenerSocket(final SocketAddress address) {
        return Path.of(System.getProperty(ShmConfiguration.DIRECTORY_PROP_NAME,
            ShmConfiguration.DIRECTORY_DEFAULT)).toAbsolutePath().resolve("ports")
            .resolve(ShmAddresses.listenerName(address, false));
    }

    /** Keep the manager's thread busy until the returned latch is counted down. */
    private static CountDownLatch occupy(final ShmConnectionManager manager) throws InterruptedException {
        final CountDownLatch busy = new CountDownLatch(1);
        final CountDownLatch release = new CountDownLatch(1);
        manager.execute(() -> {
            busy.countDown();
            try {
                release.await();
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        });
        assertTrue(busy.await(10, TimeUnit.SECONDS));
        return release;
    }

    private static void assertRejected(final Endpoint endpoint) throws InterruptedException {
        final ExecutionException failed = assertThrows(ExecutionException.class,
            () -> endpoint.outcome.get(10, TimeUnit.SECONDS));
        assertInstanceOf(ConnectException.class, failed.getCause());
        assertTrue(failed.getCause().getMessage().contains("seen"), failed.getCause()::getMessage);
        assertEquals(0, endpoint.openQueuePairs(), "the rejected attempt's queue pair is still open");
    }

    /**
     * An endpoint with its own protection domain and completion queue; it owns the queue pair once bound, as the
     * stream engine does, and closes everything when the attempt fails.
     */
    private static final class Endpoint implements CmEndpoint {
        final CompletableFuture<Void> outcome = new CompletableFuture<>();
        private ProtectionDomain domain;
        private CompletionQueue queue;
        private QueuePair queuePair;
        /** Run in {@link #bind}, on the thread that binds (for an active side: the connecting thread). */
        Runnable onBind = () -> { };
        /** Thrown by {@link #prepare}, unless null: the endpoint cannot make its queue pair's resources. */
        IOException prepareFailure;

        @Override
        public QueuePairSetup prepare(final RdmaDevice device) throws IOException {
            if (prepareFailure != null) {
                throw prepareFailure;
            }
            domain = device.allocateProtectionDomain();
            queue = device.createCompletionQueue(16, null, 0);
            return new QueuePairSetup(domain, new QueuePairInitAttributes().sendCompletionQueue(queue)
                .receiveCompletionQueue(queue).maxSendWorkRequests(8).maxReceiveWorkRequests(8),
                AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE, 6, 6);
        }

        @Override
        public ByteBuffer bind(final QueuePair pair, final ByteBuffer peerPrivateData) {
            queuePair = pair;
            onBind.run();
            return null;
        }

        @Override
        public void established(final ByteBuffer peerPrivateData, final SocketAddress localAddress,
            final SocketAddress remoteAddress) {
            outcome.complete(null);
        }

        @Override
        public void failed(final IOException cause) {
            if (queuePair != null) {
                queuePair.close();
            }
            if (queue != null) {
                queue.close();
            }
            if (domain != null) {
                domain.close();
            }
            outcome.completeExceptionally(cause);
        }

        int openQueuePairs() {
            return domain == null ? 0 : domain.device().resources().queuePairs();
        }
    }
}
