package io.rdmachannel.ffm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.RdmaTransportMXBean;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.ReadinessObserver;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.stream.StreamConfiguration;
import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamConnector;
import io.rdmachannel.channel.stream.StreamListener;
import io.rdmachannel.channel.stream.StreamOptions;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NoRouteToHostException;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The stream engine over the native provider and its default connection manager, {@code rdma_cm}, on a real device
 * (soft-RoCE on 192.0.2.1 in the guest tier). Skipped where the native provider is unavailable, but failing inside
 * the guest ({@code RDMACHANNEL_GUEST} set).
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class RdmaCmGuestTest {
    private static final String GUEST_ADDRESS = "192.0.2.1";
    private static final long WAIT_SECONDS = 90;

    private StreamTransport transport;
    private ExecutorService threads;

    @BeforeEach
    void open() {
        RdmaProvider provider = RdmaProviders.byName("native");
        if (System.getenv("RDMACHANNEL_GUEST") != null) {
            // inside the soft-RoCE guest the device must be there: a skip would hide a broken tier
            assertTrue(provider.isAvailable(), () -> "native provider unavailable in the guest: "
                + provider.unavailabilityCause());
        }
        assumeTrue(provider.isAvailable(), () -> "native provider unavailable: " + provider.unavailabilityCause());
        assertEquals(null, System.getProperty(StreamTransports.CONNECTION_MANAGER_PROP_NAME));
        transport = StreamTransports.open(provider);
        assertTrue(transport.toString().contains("cm=rdma_cm"), transport.toString());
        threads = Executors.newCachedThreadPool();
    }

    @AfterEach
    void close() {
        if (threads != null) {
            threads.shutdownNow();
        }
        if (transport != null) {
            StreamTransports.close(transport);
        }
    }

    @Test
    void shouldEchoBothWaysAndHalfClose() throws Exception {
        echoBothWays(transport, "rdma_cm", new StreamOptions());
    }

    /**
     * The same stream with the queue pairs connected by the {@code oob} manager: a TCP side channel and the states
     * set by hand, on rxe0's GID for 192.0.2.1 (which the listener's filter sees as the device and the address).
     */
    @Test
    void shouldEchoBothWaysOverTheOobConnectionManager() throws Exception {
        StreamTransport oob = StreamTransports.open(RdmaProviders.byName("native"), "oob");
        try {
            assertTrue(oob.toString().contains("cm=oob"), oob.toString());
            List<ConnectionRequest> requests = new CopyOnWriteArrayList<>();
            echoBothWays(oob, "oob", new StreamOptions().requestFilter(request -> {
                requests.add(request);
                return null;
            }));
            assertEquals(1, requests.size());
            assertEquals("rxe0", requests.getFirst().deviceName());
            assertEquals(GUEST_ADDRESS, ((InetSocketAddress) requests.getFirst().remoteAddress()).getAddress()
                .getHostAddress());
        } finally {
            StreamTransports.close(oob);
        }
    }

    /**
     * GID addressing on RoCE: the listener binds to and the client connects to rxe0's GID for 192.0.2.1
     * ({@code ::ffff:192.0.2.1}, found in the device's GID table), through {@code oob}; no IP address is given.
     */
    @Test
    void shouldEchoBothWaysByRxe0sGidThroughOob() throws Exception {
        byte[] gid = rxe0GidOf(GUEST_ADDRESS);
        StreamTransport oob = StreamTransports.open(RdmaProviders.byName("native"), "oob");
        try {
            List<ConnectionRequest> requests = new CopyOnWriteArrayList<>();
            echoBothWays(oob, "oob by GID", new StreamOptions().requestFilter(request -> {
                requests.add(request);
                return null;
            }), IbSocketAddress.of(gid, 0));
            assertEquals(1, requests.size());
            assertEquals("rxe0", requests.getFirst().deviceName());
            IbSocketAddress requester = assertInstanceOf(IbSocketAddress.class, requests.getFirst().remoteAddress());
            assertArrayEquals(gid, requester.gid());
        } finally {
            StreamTransports.close(oob);
        }
    }

    /**
     * rdma_cm cannot take a GID address on a RoCE device (AF_IB needs an InfiniBand link layer): the connect fails
     * at once with a message that names {@code oob}, which can.
     */
    @Test
    void shouldNameOobWhenRdmaCmIsGivenAGidOnRoce() throws Exception {
        IbSocketAddress byGid = IbSocketAddress.of(rxe0GidOf(GUEST_ADDRESS), 7471);
        UnsupportedAddressTypeException unsupported = assertThrows(UnsupportedAddressTypeException.class,
            () -> transport.connect(byGid, null, new StreamOptions(), new Waker()));
        assertTrue(unsupported.getMessage().contains("RoCE devices such as rxe cannot use AF_IB")
            && unsupported.getMessage().contains("the oob connection manager for GID addressing"),
            unsupported.getMessage());
    }

    /** The GID rxe0 has for an IPv4 address of its interface, as read from its GID table. */
    private static byte[] rxe0GidOf(String address) throws IOException {
        byte[] wanted = new byte[16];
        wanted[10] = (byte) 0xff;
        wanted[11] = (byte) 0xff;
        System.arraycopy(InetAddress.getByName(address).getAddress(), 0, wanted, 12, 4);
        try (RdmaDevice device = RdmaProviders.byName("native").openDevice("rxe0")) {
            for (int index = 0; index < 16; index++) {
                if (Arrays.equals(wanted, device.queryGid(1, index))) {
                    return wanted;
                }
            }
        }
        throw new AssertionError("rxe0 has no GID for " + address);
    }

    private void echoBothWays(StreamTransport over, String label, StreamOptions listenerOptions) throws Exception {
        echoBothWays(over, label, listenerOptions, new InetSocketAddress(GUEST_ADDRESS, 0));
    }

    private void echoBothWays(StreamTransport over, String label, StreamOptions listenerOptions,
        SocketAddress listenAt) throws Exception {
        long total = 4L << 20;
        Waker serverWaker = new Waker();
        try (StreamListener listener = over.listen(listenAt, 8, listenerOptions, serverWaker)) {
            SocketAddress bound = listener.localAddress();
            System.out.println(label + " listener on " + bound);
            assertEquals(listenAt.getClass(), bound.getClass());
            assertTrue(!bound.toString().endsWith(":0"), bound.toString());
            CompletableFuture<Long> server = CompletableFuture.supplyAsync(() -> echo(listener, serverWaker), threads);
            Waker clientWaker = new Waker();
            try (StreamConnection client = connect(over.connect(bound, null, new StreamOptions(), clientWaker),
                clientWaker)) {
                System.out.println("client " + client.localAddress() + " -> " + client.remoteAddress());
                assertEquals(bound, client.remoteAddress());
                long start = System.nanoTime();
                CompletableFuture<Long> sent = CompletableFuture.supplyAsync(() -> send(client, total, clientWaker),
                    threads);
                CRC32 received = new CRC32();
                long count = 0;
                ByteBuffer buffer = ByteBuffer.allocateDirect(64 << 10);
                int n;
                while ((n = read(client, buffer.clear(), clientWaker)) > 0) {
                    received.update(buffer.flip());
                    count += n;
                }
                long sentCrc = sent.get(WAIT_SECONDS, TimeUnit.SECONDS);
                assertEquals(total, count, client.describe());
                assertEquals(sentCrc, received.getValue(), client.describe());
                assertEquals(sentCrc, server.get(WAIT_SECONDS, TimeUnit.SECONDS));
                System.out.printf("%s echo: %d MiB each way in %.1f ms%n", label, total >> 20,
                    (System.nanoTime() - start) / 1e6);
            }
        }
    }

    @Test
    void shouldResetBothEndsWithinASecondWhenTheDeviceReportsAFatalError() throws Exception {
        try (Pair pair = connectPair(transport)) {
            AtomicLong failedAt = new AtomicLong();
            CompletableFuture<IOException> clientRead = failingRead(pair.client(), pair.clientWaker(), failedAt);
            List<NativeDevice> devices = NativeAsyncEvents.shared().devices();
            assertTrue(!devices.isEmpty() && !clientRead.isDone(), () -> devices + " " + clientRead);

            long reported = System.nanoTime();
            for (NativeDevice device : devices) {
                device.onAsyncEvent(VerbsConstants.IBV_EVENT_DEVICE_FATAL, 0, 0);
            }

            IOException failure = clientRead.get(WAIT_SECONDS, TimeUnit.SECONDS);
            long millis = TimeUnit.NANOSECONDS.toMillis(failedAt.get() - reported);
            System.out.println("client read failed " + millis + " ms after the fatal event: " + failure
                + " " + Arrays.toString(failure.getSuppressed()));
            assertReset(failure, "IBV_EVENT_DEVICE_FATAL");
            assertTrue(millis < 1000, millis + " ms");
            SocketException serverFailure = assertThrows(SocketException.class,
                () -> read(pair.server(), ByteBuffer.allocate(16), pair.serverWaker()));
            assertEquals("Connection reset", serverFailure.getMessage());
            long failedQueuePairs = devices.stream().mapToLong(device -> device.events().queuePairsFailed()).sum();
            assertEquals(2, failedQueuePairs, () -> devices.stream().map(NativeDevice::events).toList()
                .toString());
        }
    }

    /**
     * A peer that vanished without a word (no DREQ, no CM event: its queue pair just stops answering, as when its
     * host died or the network between is cut) is found by keepalive on an idle connection: the probe's retries run
     * out and the blocked read fails.
     */
    @Test
    void shouldDetectAnIdlePeerThatVanishedByKeepalive() throws Exception {
        String previous = System.setProperty(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME, "1");
        StreamTransport probing;
        try {
            probing = StreamTransports.open(RdmaProviders.byName("native"));
        } finally {
            if (previous == null) {
                System.clearProperty(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME);
            } else {
                System.setProperty(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME, previous);
            }
        }
        try {
            awaitVanishedPeerDetected(probing);
        } catch (Exception | Error e) {
            try {
                StreamTransports.close(probing);
            } catch (RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        awaitNoConnections((RdmaTransportMXBean) probing);
        StreamTransports.close(probing);
    }

    private void awaitVanishedPeerDetected(StreamTransport probing) throws Exception {
        try (Pair pair = connectPair(probing)) {
            pair.client().keepAlive(true);
            AtomicLong failedAt = new AtomicLong();
            CompletableFuture<IOException> clientRead = failingRead(pair.client(), pair.clientWaker(), failedAt);
            NativeQueuePair peer = queuePairOf(pair.server());
            NativeQueuePair survivor = queuePairOf(pair.client());
            System.out.println("survivor's queue pair: " + survivor.timers());

            // in ERROR it answers nothing that reaches it (and its owner, not asked, does not disconnect)
            long vanished = System.nanoTime();
            peer.modify(QueuePairState.ERROR, null);

            IOException failure;
            try {
                failure = clientRead.get(WAIT_SECONDS, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                String state = "no failure " + WAIT_SECONDS + " s after the peer vanished: " + pair.client().describe()
                    + "; " + pair.client().statistics() + "; survivor " + survivor.timers() + "; peer "
                    + peer.timers();
                System.out.println(state);
                throw new AssertionError(state, e);
            }
            long millis = TimeUnit.NANOSECONDS.toMillis(failedAt.get() - vanished);
            System.out.println("keepalive found the vanished peer after " + millis + " ms: " + failure + " "
                + Arrays.toString(failure.getSuppressed()) + "; " + pair.client().statistics());
            assertReset(failure, "transport retry counter exceeded");
            assertTrue(pair.client().statistics().keepAlivesSent() >= 1, pair.client().describe());
        }
    }

    /** Closed connections linger until their DISCONNECT is out or their close deadline passed. */
    private static void awaitNoConnections(RdmaTransportMXBean view) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (view.getConnectionCount() > 0 && System.nanoTime() - deadline < 0) {
            Thread.sleep(20);
        }
    }

    private static void assertReset(IOException failure, String cause) {
        assertEquals(SocketException.class, failure.getClass(), failure::toString);
        assertEquals("Connection reset", failure.getMessage());
        assertTrue(Arrays.stream(failure.getSuppressed()).anyMatch(c -> c.getMessage().contains(cause)),
            () -> Arrays.toString(failure.getSuppressed()));
    }

    /** The native queue pair of a connection, found by the number its description names. */
    private static NativeQueuePair queuePairOf(StreamConnection connection) {
        Matcher number = Pattern.compile("qp=(\\d+)/").matcher(connection.describe());
        assertTrue(number.find(), connection.describe());
        int wanted = Integer.parseInt(number.group(1));
        return NativeAsyncEvents.shared().devices().stream().map(device -> device.queuePair(wanted))
            .filter(Objects::nonNull).findFirst()
            .orElseThrow(() -> new AssertionError("no queue pair " + wanted + " on any device"));
    }

    /** A read that waits until the connection fails; completes with the failure (or an exception saying it read). */
    private CompletableFuture<IOException> failingRead(StreamConnection connection, Waker waker, AtomicLong failedAt) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return new IOException("read returned " + read(connection, ByteBuffer.allocate(16), waker));
            } catch (IOException e) {
                failedAt.set(System.nanoTime());
                return e;
            }
        }, threads);
    }

    /** A listener, a connection to it and the accepted end; closed in reverse order. */
    private record Pair(StreamListener listener, StreamConnection client, Waker clientWaker, StreamConnection server,
        Waker serverWaker) implements AutoCloseable {
        @Override
        public void close() {
            try {
                server.close();
            } finally {
                try {
                    client.close();
                } finally {
                    listener.close();
                }
            }
        }
    }

    private Pair connectPair(StreamTransport over) throws Exception {
        Waker serverWaker = new Waker();
        StreamListener listener = over.listen(new InetSocketAddress(GUEST_ADDRESS, 0), 8, new StreamOptions(),
            serverWaker);
        StreamConnection client = null;
        try {
            CompletableFuture<StreamConnection> accepted = CompletableFuture.supplyAsync(() -> {
                try {
                    return accept(listener, serverWaker);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }, threads);
            Waker clientWaker = new Waker();
            client = connect(over.connect(listener.localAddress(), null, new StreamOptions(), clientWaker),
                clientWaker);
            return new Pair(listener, client, clientWaker, accepted.get(WAIT_SECONDS, TimeUnit.SECONDS),
                serverWaker);
        } catch (Exception | Error e) {
            if (client != null) {
                client.close();
            }
            listener.close();
            throw e;
        }
    }

    @Test
    void shouldRefuseWhenNobodyListens() throws Exception {
        Waker waker = new Waker();
        StreamConnector connector = transport.connect(new InetSocketAddress(GUEST_ADDRESS, 1), null,
            new StreamOptions(), waker);
        ConnectException refused = assertThrows(ConnectException.class, () -> connect(connector, waker));
        assertEquals("Connection refused", refused.getMessage());
    }

    @Test
    void shouldRejectWithTheFiltersReasonBeforeAllocating() throws Exception {
        try (ConnectionManager cm = RdmaProviders.byName("native").openConnectionManager(null)) {
            assertEquals("rdma_cm", cm.name());
            AtomicInteger endpoints = new AtomicInteger();
            AtomicReference<String> device = new AtomicReference<>();
            try (CmListener listener = cm.listen(new InetSocketAddress(GUEST_ADDRESS, 0), 4,
                request -> {
                    device.set(request.deviceName());
                    return request.privateData().get(0) == 42
                        ? new Rejection(RejectReason.POLICY, "no 42 here, d\u00e9j\u00e0 vu") : null;
                },
                remote -> {
                    endpoints.incrementAndGet();
                    return new ProbeEndpoint(null);
                })) {
                ProbeEndpoint endpoint = new ProbeEndpoint(new byte[] {42, 1, 2, 3});
                cm.connect(listener.localAddress(), null, endpoint);
                IOException cause = endpoint.outcome.get(WAIT_SECONDS, TimeUnit.SECONDS);
                System.out.println("filtered connect: " + cause);
                assertInstanceOf(ConnectException.class, cause);
                // the filter's words cross the REJ's private data, in UTF-8
                assertEquals("Connection refused by policy: no 42 here, d\u00e9j\u00e0 vu", cause.getMessage());
                assertEquals(0, endpoints.get());
                assertEquals("rxe0", device.get());
            }
        }
    }

    @Test
    void shouldReleaseAnAttemptInFlightWhenItsTransportCloses() throws Exception {
        // the listener holds the request in its filter: the connecting side's queue pair and completion queues exist
        // when its transport closes; the close must end the attempt before the device contexts close
        CountDownLatch requested = new CountDownLatch(1);
        CountDownLatch answer = new CountDownLatch(1);
        StreamTransport connecting = StreamTransports.open(RdmaProviders.byName("native"));
        try (StreamListener listener = transport.listen(new InetSocketAddress(GUEST_ADDRESS, 0), 4,
            new StreamOptions().requestFilter(request -> {
                requested.countDown();
                try {
                    answer.await(WAIT_SECONDS, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return null;
            }), new Waker())) {
            Waker waker = new Waker();
            StreamConnector attempt = connecting.connect(listener.localAddress(), null, new StreamOptions(), waker);
            assertTrue(requested.await(WAIT_SECONDS, TimeUnit.SECONDS), "the request never reached the listener");

            StreamTransports.close(connecting);

            IOException failed = assertThrows(IOException.class, () -> connect(attempt, waker));
            System.out.println("attempt in flight at close: " + failed);
        } finally {
            answer.countDown();
            StreamTransports.close(connecting);
        }
    }

    @Test
    void shouldRefuseNewWorkOnceStopped() throws Exception {
        try (ConnectionManager cm = RdmaProviders.byName("native").openConnectionManager(null)) {
            cm.stop();
            IOException listen = assertThrows(IOException.class, () -> cm.listen(
                new InetSocketAddress(GUEST_ADDRESS, 0), 4, request -> null, remote -> new ProbeEndpoint(null)));
            assertEquals("the rdma_cm connection manager is closed", listen.getMessage());
            IOException connect = assertThrows(IOException.class, () -> cm.connect(
                new InetSocketAddress(GUEST_ADDRESS, 1), null, new ProbeEndpoint(null)));
            assertEquals("the rdma_cm connection manager is closed", connect.getMessage());
        }
    }

    @Test
    void shouldFailAnUnreachablePeerWithoutHanging() throws Exception {
        String previous = System.setProperty(RdmaCmConnectionManager.CONNECT_TIMEOUT_PROP_NAME, "5000");
        try (ConnectionManager cm = RdmaProviders.byName("native").openConnectionManager(null)) {
            ProbeEndpoint endpoint = new ProbeEndpoint(new byte[] {1});
            long start = System.nanoTime();
            cm.connect(new InetSocketAddress("192.0.2.99", 7471), null, endpoint);
            IOException cause = endpoint.outcome.get(WAIT_SECONDS, TimeUnit.SECONDS);
            System.out.printf("unreachable connect after %.1f s: %s%n", (System.nanoTime() - start) / 1e9, cause);
            assertTrue(cause instanceof NoRouteToHostException || cause instanceof SocketTimeoutException
                || cause instanceof ConnectException, String.valueOf(cause));
        } finally {
            if (previous == null) {
                System.clearProperty(RdmaCmConnectionManager.CONNECT_TIMEOUT_PROP_NAME);
            } else {
                System.setProperty(RdmaCmConnectionManager.CONNECT_TIMEOUT_PROP_NAME, previous);
            }
        }
    }

    /** A CM endpoint with one small queue pair that reports its outcome (null when established). */
    private static final class ProbeEndpoint implements CmEndpoint {
        private final CompletableFuture<IOException> outcome = new CompletableFuture<>();
        private final byte[] privateData;
        private ProtectionDomain domain;
        private CompletionQueue queue;
        private QueuePair queuePair;

        ProbeEndpoint(byte[] privateData) {
            this.privateData = privateData;
        }

        @Override
        public QueuePairSetup prepare(RdmaDevice device) throws IOException {
            domain = device.allocateProtectionDomain();
            queue = device.createCompletionQueue(32, null, 0);
            return new QueuePairSetup(domain, new QueuePairInitAttributes().sendCompletionQueue(queue)
                .receiveCompletionQueue(queue).maxSendWorkRequests(16).maxReceiveWorkRequests(16),
                AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE, 7, 7);
        }

        @Override
        public ByteBuffer bind(QueuePair newQueuePair, ByteBuffer peerPrivateData) {
            this.queuePair = newQueuePair;
            return privateData == null ? ByteBuffer.allocate(0) : ByteBuffer.wrap(privateData);
        }

        @Override
        public void established(ByteBuffer peerPrivateData, SocketAddress local, SocketAddress remote) {
            outcome.complete(null);
        }

        @Override
        public void failed(IOException cause) {
            if (queuePair != null) {
                queuePair.close();
            }
            if (queue != null) {
                queue.close();
            }
            if (domain != null) {
                domain.close();
            }
            outcome.complete(cause);
        }
    }

    /** Echo until the client half-closes, then half-close; returns the CRC of what went through. */
    private static long echo(StreamListener listener, Waker waker) {
        try (StreamConnection connection = accept(listener, waker)) {
            System.out.println("server " + connection.localAddress() + " <- " + connection.remoteAddress());
            CRC32 crc = new CRC32();
            ByteBuffer buffer = ByteBuffer.allocateDirect(100_000);
            while (read(connection, buffer.clear(), waker) > 0) {
                buffer.flip();
                crc.update(buffer.duplicate());
                writeFully(connection, buffer, waker);
            }
            connection.shutdownOutput();
            return crc.getValue();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static long send(StreamConnection connection, long total, Waker waker) {
        try {
            CRC32 crc = new CRC32();
            Random random = new Random(11);
            byte[] chunk = new byte[256 << 10];
            long sent = 0;
            while (sent < total) {
                int size = (int) Math.min(total - sent, 1 + random.nextInt(chunk.length));
                random.nextBytes(chunk);
                crc.update(chunk, 0, size);
                writeFully(connection, ByteBuffer.wrap(chunk, 0, size), waker);
                sent += size;
            }
            connection.shutdownOutput();
            return crc.getValue();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    // ----- blocking on the non-blocking engine -----

    /** Unparks the threads waiting on it; a connection's reader and writer share it. */
    private static final class Waker implements ReadinessObserver {
        private final Set<Thread> waiters = ConcurrentHashMap.newKeySet();

        void waitFor() {
            waiters.add(Thread.currentThread());
            LockSupport.parkNanos(this, TimeUnit.MILLISECONDS.toNanos(100));
            waiters.remove(Thread.currentThread());
        }

        @Override
        public void onReadiness() {
            waiters.forEach(LockSupport::unpark);
        }
    }

    private static StreamConnection connect(StreamConnector connector, Waker waker) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (true) {
            StreamConnection connection = connector.finish();
            if (connection == null) {
                connector.arm();
                connection = connector.finish();
            }
            if (connection != null) {
                return connection;
            }
            if (System.nanoTime() - deadline > 0) {
                connector.close();
                throw new IOException("no outcome of the connect within " + WAIT_SECONDS + " s");
            }
            waker.waitFor();
        }
    }

    private static StreamConnection accept(StreamListener listener, Waker waker) throws IOException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(WAIT_SECONDS);
        while (true) {
            StreamConnection connection = listener.accept(waker);
            if (connection == null) {
                listener.arm();
                connection = listener.accept(waker);
            }
            if (connection != null) {
                return connection;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IOException("no connection accepted within " + WAIT_SECONDS + " s");
            }
            waker.waitFor();
        }
    }

    private static int read(StreamConnection connection, ByteBuffer dst, Waker waker) throws IOException {
        while (true) {
            int count = connection.read(dst);
            if (count == 0) {
                connection.arm();
                count = connection.read(dst);
            }
            if (count != 0) {
                return count;
            }
            waker.waitFor();
        }
    }

    private static void writeFully(StreamConnection connection, ByteBuffer src, Waker waker) throws IOException {
        while (src.hasRemaining()) {
            if (connection.write(src) == 0) {
                connection.arm();
                if (connection.write(src) == 0) {
                    waker.waitFor();
                }
            }
        }
    }
}
