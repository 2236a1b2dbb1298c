package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_FLOW_CONTROL;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_INITIATOR_DEPTH;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_PRIVATE_DATA;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_PRIVATE_DATA_LEN;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_RESPONDER_RESOURCES;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_RETRY_COUNT;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_RNR_RETRY_COUNT;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

import io.rdmachannel.channel.cm.CmConnection;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmEndpointFactory;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.ffm.RdmaCmConnectionManager.CmEvent;
import io.rdmachannel.ffm.cm.RdmaCmCalls;
import io.rdmachannel.ffm.internal.Errno;
import io.rdmachannel.ffm.layout.RdmaCmLayouts;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;

/**
 * One connection on one {@code rdma_cm_id}, active or passive, from the first event to the destruction of the id.
 * Everything but {@link #destroyQueuePair} runs on the CM's event thread.
 */
final class RdmaCmAttempt implements CmConnection {
    static final String UNSUPPORTED_OWN_QUEUE_PAIRS = "the rdma_cm connection manager creates the connection's queue "
        + "pair itself: an endpoint's own queue pairs are not supported";
    /** ETIMEDOUT on Linux. */
    private static final int ETIMEDOUT = 110;
    /** rsockets' {@code RS_CONN_RETRIES}: resolution is retried this often on ETIMEDOUT. */
    private static final int RETRIES = 6;
    /** rsockets' first resolution timeout; doubled per retry. */
    private static final int BASE_TIMEOUT_MILLIS = 1000;
    /** {@code IB_CM_REJ_CONSUMER_DEFINED}: the peer rejected with private data. */
    private static final int IB_CM_REJ_CONSUMER_DEFINED = 28;
    /** Most private data {@code rdma_connect} carries for RDMA_PS_TCP. */
    private static final int MAX_CONNECT_PRIVATE_DATA = 56;
    /** Most private data {@code rdma_accept} carries for RDMA_PS_TCP. */
    private static final int MAX_ACCEPT_PRIVATE_DATA = 196;
    private static final int MAX_RETRY_COUNT = 7;

    private final RdmaCmConnectionManager cm;
    private final RdmaCmListener listener;
    private final long deadline;
    private final SocketAddress source;
    private final SocketAddress target;
    private final ByteBuffer peerPrivateData;
    private final byte[] requestParam;
    private CmEndpoint endpoint;
    private MemorySegment id;
    private int retries;
    private NativeQueuePair queuePair;
    private boolean bound;
    private boolean done;
    private boolean established;
    private boolean disconnected;
    /** Whether the active side's device is iWARP, where a listener's rejection comes as an MPA reject. */
    private boolean iwarp;
    private boolean idReleased;
    private volatile boolean queuePairClosed;

    private RdmaCmAttempt(RdmaCmConnectionManager cm, RdmaCmListener listener, CmEndpoint endpoint, MemorySegment id,
        SocketAddress source, SocketAddress target, ByteBuffer peerPrivateData, byte[] requestParam) {
        this.cm = cm;
        this.listener = listener;
        this.endpoint = endpoint;
        this.id = id;
        this.source = source;
        this.target = target;
        this.peerPrivateData = peerPrivateData;
        this.requestParam = requestParam;
        this.deadline = System.nanoTime() + cm.connectTimeoutNanos();
    }

    static RdmaCmAttempt active(RdmaCmConnectionManager cm, CmEndpoint endpoint, SocketAddress source,
        SocketAddress target) {
        return new RdmaCmAttempt(cm, null, endpoint, null, source, target, null, null);
    }

    static RdmaCmAttempt passive(RdmaCmConnectionManager cm, RdmaCmListener listener, MemorySegment child,
        SocketAddress local, SocketAddress remote, ByteBuffer privateData, byte[] requestParam) {
        return new RdmaCmAttempt(cm, listener, null, child, local, remote, privateData, requestParam);
    }

    // ----- active side -----

    /** Create the id and resolve the address (event thread). */
    void start() {
        cm.attemptStarted(this);
        try {
            id = cm.createId();
            cm.own(id, this);
            if (source != null) {
                try (Arena temporary = Arena.ofConfined()) {
                    RdmaCmCalls.bindAddr(id, CmAddresses.toNative(source, temporary));
                } catch (NativeCallException e) {
                    throw RdmaCmListener.bindFailure(source, e);
                }
            }
            try {
                resolveAddress();
            } catch (NativeCallException e) {
                throw noRoute("rdma_resolve_addr", e.errno(), e);
            }
        } catch (IOException e) {
            fail(e);
        } catch (RuntimeException e) {
            fail(new IOException("cannot start the connection: " + e, e));
        }
    }

    private void resolveAddress() throws NativeCallException {
        try (Arena temporary = Arena.ofConfined()) {
            RdmaCmCalls.resolveAddr(id, MemorySegment.NULL, CmAddresses.toNative(target, temporary), timeout());
        }
    }

    /** rsockets' back-off: 1 s doubled per retry, within the attempt's deadline. */
    private int timeout() {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        return (int) Math.max(1, Math.min((long) BASE_TIMEOUT_MILLIS << retries, left));
    }

    private static final int ENODEV = 19;
    private static final int EADDRNOTAVAIL = 99;
    private static final int ENETUNREACH = 101;
    private static final int EHOSTUNREACH = 113;
    private static final int ECONNREFUSED = 111;

    void onEvent(CmEvent event) {
        try {
            switch (event.type()) {
                case RdmaCmConnectionManager.ADDR_RESOLVED -> {
                    retries = 0;
                    try {
                        RdmaCmCalls.resolveRoute(id, timeout());
                    } catch (final NativeCallException ex) {
                        // e.g. ENODEV for an address no RDMA device serves, such as the loopback
                        fail(noRoute("route resolution", ex.errno(), ex));
                    }
                }
                case RdmaCmConnectionManager.ADDR_ERROR -> retryOrFail(event, true);
                case RdmaCmConnectionManager.ROUTE_RESOLVED -> connect();
                case RdmaCmConnectionManager.ROUTE_ERROR -> retryOrFail(event, false);
                case RdmaCmConnectionManager.ESTABLISHED -> onEstablished(event);
                case RdmaCmConnectionManager.REJECTED -> fail(rejected(event));
                case RdmaCmConnectionManager.UNREACHABLE -> fail(unreachable(event));
                case RdmaCmConnectionManager.CONNECT_ERROR -> fail(new ConnectException("Connection to " + target
                    + " failed: " + describe(event.status())));
                case RdmaCmConnectionManager.DISCONNECTED, RdmaCmConnectionManager.DEVICE_REMOVAL ->
                    onDisconnected(event);
                case RdmaCmConnectionManager.TIMEWAIT_EXIT -> {
                    // the id lives until its queue pair is closed
                }
                default -> RdmaCmConnectionManager.LOG.debug("ignoring {}", event);
            }
        } catch (NativeCallException e) {
            fail(translate(e));
        } catch (IOException e) {
            fail(e);
        } catch (RuntimeException e) {
            fail(new IOException("connection setup failed: " + e, e));
        }
    }

    /**
     * A librdmacm call failed while the attempt progressed: an address no RDMA device serves (such as the loopback)
     * is no route to the host; anything else fails the connect, naming the call.
     */
    private IOException translate(NativeCallException failure) {
        return switch (failure.errno()) {
            case ENODEV, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL -> noRoute(failure.function(), failure.errno(),
                failure);
            // on iWARP, rdma_connect's TCP connection finds nobody listening at once, as a REJ does elsewhere
            case ECONNREFUSED -> {
                ConnectException refused = RejectReason.NO_LISTENER.exception();
                refused.initCause(failure);
                yield refused;
            }
            default -> {
                ConnectException refused = new ConnectException("Connection to " + target + " failed: "
                    + failure.getMessage());
                refused.initCause(failure);
                yield refused;
            }
        };
    }

    private void retryOrFail(CmEvent event, boolean address) throws IOException {
        if (done) {
            return;
        }
        if (event.status() == -ETIMEDOUT) {
            if (retries < RETRIES && !expired(System.nanoTime())) {
                retries++;
                if (address) {
                    resolveAddress();
                } else {
                    RdmaCmCalls.resolveRoute(id, timeout());
                }
                return;
            }
            fail(new SocketTimeoutException("Connect timed out"));
            return;
        }
        fail(noRoute(address ? "address resolution" : "route resolution", -event.status(), null));
    }

    private NoRouteToHostException noRoute(String what, int errno, Throwable cause) {
        NoRouteToHostException failure = new NoRouteToHostException("No route to host: " + target + " ("
            + what + " failed: " + Errno.strerror(errno) + ")");
        if (cause != null) {
            failure.initCause(cause);
        }
        return failure;
    }

    /** The route is known: prepare the endpoint, create and bind the queue pair, send the request. */
    private void connect() throws IOException {
        if (done) {
            return;
        }
        NativeDevice device = cm.deviceOf(id);
        iwarp = device.iwarp();
        CmEndpoint.QueuePairSetup setup = endpoint.prepare(device);
        createQueuePair(setup, device);
        bound = true;
        ByteBuffer privateData = endpoint.bind(queuePair, null);
        try (Arena temporary = Arena.ofConfined()) {
            MemorySegment param = temporary.allocate(CONN_PARAM_SIZE, 8);
            putPrivateData(param, privateData, MAX_CONNECT_PRIVATE_DATA, temporary);
            param.set(JAVA_BYTE, CONN_PARAM_RESPONDER_RESOURCES, (byte) 0);
            // rsockets asks for one RDMA READ on iWARP, whose MPA peer-to-peer mode needs it
            param.set(JAVA_BYTE, CONN_PARAM_INITIATOR_DEPTH, (byte) (device.iwarp() ? 1 : 0));
            param.set(JAVA_BYTE, CONN_PARAM_FLOW_CONTROL, (byte) 1);
            param.set(JAVA_BYTE, CONN_PARAM_RETRY_COUNT, (byte) clampRetry(setup.retryCount()));
            param.set(JAVA_BYTE, CONN_PARAM_RNR_RETRY_COUNT, (byte) clampRetry(setup.rnrRetryCount()));
            RdmaCmCalls.connect(id, param);
        }
    }

    private static int clampRetry(int count) {
        return Math.max(0, Math.min(MAX_RETRY_COUNT, count));
    }

    private ConnectException rejected(CmEvent event) {
        byte[] data = event.privateData();
        // a listener's rejection: on InfiniBand and RoCE a consumer-defined REJ; on iWARP an MPA reply with the reject
        // flag, which rdma_cm reports with -ECONNRESET or -ECONNREFUSED and the listener's private data
        boolean byListener = event.status() == IB_CM_REJ_CONSUMER_DEFINED
            || (event.status() < 0 && iwarp);
        if (byListener && data.length > 0 && data[0] != 0) {
            // the code, then the listener's words (an InfiniBand or RoCE REJ comes padded with zeros to 148 bytes)
            return Rejection.decode(ByteBuffer.wrap(data)).exception();
        }
        // rejected by the CM, not by a listener: no listener for the service ID (IB_CM_REJ_INVALID_SERVICE_ID, 8)
        return RejectReason.NO_LISTENER.exception();
    }

    private IOException unreachable(CmEvent event) {
        if (event.status() == -ETIMEDOUT) {
            return new SocketTimeoutException("Connect timed out");
        }
        return new NoRouteToHostException("No route to host: " + target + " is unreachable ("
            + describe(event.status()) + ")");
    }

    private static String describe(int status) {
        return status < 0 ? Errno.strerror(-status) : "status " + status;
    }

    // ----- passive side -----

    /** A request passed the filter: make, prepare and bind the endpoint, then accept (event thread). */
    void accept(CmEndpointFactory factory) {
        cm.own(id, this);
        cm.attemptStarted(this);
        NativeDevice device;
        try {
            endpoint = factory.newEndpoint(target);
            device = cm.deviceOf(id);
            createQueuePair(endpoint.prepare(device, peerPrivateData.asReadOnlyBuffer()), device);
        } catch (IOException | RuntimeException e) {
            rejectAndFail(RejectReason.NO_RESOURCES, asIoException(e));
            return;
        }
        bound = true;
        ByteBuffer reply;
        try {
            reply = endpoint.bind(queuePair, peerPrivateData.asReadOnlyBuffer());
        } catch (IOException | RuntimeException e) {
            rejectAndFail(RejectReason.UNSUPPORTED_PROTOCOL, asIoException(e));
            return;
        }
        try (Arena temporary = Arena.ofConfined()) {
            // as rsockets: the request's parameters, only the private data replaced
            MemorySegment param = temporary.allocate(CONN_PARAM_SIZE, 8);
            MemorySegment.copy(requestParam, 0, param, JAVA_BYTE, 0, requestParam.length);
            putPrivateData(param, reply, MAX_ACCEPT_PRIVATE_DATA, temporary);
            RdmaCmCalls.accept(id, param);
        } catch (IOException | RuntimeException e) {
            fail(asIoException(e));
        }
    }

    private static IOException asIoException(Exception e) {
        return e instanceof IOException io ? io : new IOException("connection setup failed: " + e, e);
    }

    private void rejectAndFail(RejectReason reason, IOException cause) {
        sendReject(id, Rejection.of(reason));
        fail(cause);
    }

    /** Reject a request nothing was allocated for, and destroy its id. */
    static void reject(RdmaCmConnectionManager cm, MemorySegment child, Rejection rejection) {
        sendReject(child, rejection);
        cm.destroyId(child);
    }

    /** A request for a listener that is gone. */
    static void rejectOrphan(RdmaCmConnectionManager cm, CmEvent event) {
        reject(cm, event.idSegment(), Rejection.of(RejectReason.NO_LISTENER));
    }

    /** The reject's private data: the rejection's code, then its words ({@link Rejection#encode}). */
    private static void sendReject(MemorySegment child, Rejection rejection) {
        ByteBuffer encoded = ByteBuffer.allocate(Rejection.MAX_ENCODED_BYTES);
        rejection.encode(encoded);
        encoded.flip();
        try (Arena temporary = Arena.ofConfined()) {
            MemorySegment data = temporary.allocate(encoded.remaining());
            MemorySegment.copy(encoded.array(), 0, data, JAVA_BYTE, 0, encoded.remaining());
            RdmaCmCalls.reject(child, data, (byte) encoded.remaining());
        } catch (NativeCallException e) {
            RdmaCmConnectionManager.LOG.debug("rdma_reject failed", e);
        }
    }

    // ----- both sides -----

    private void createQueuePair(CmEndpoint.QueuePairSetup setup, NativeDevice device) throws IOException {
        if (!setup.createsQueuePair()) {
            // librdmacm moves the queue pair of the id; one the endpoint made itself would need rdma_init_qp_attr for
            // each of its queue pairs and an accept without a queue pair, which this CM does not do (yet)
            throw new IOException(UNSUPPORTED_OWN_QUEUE_PAIRS, new UnsupportedOperationException(
                UNSUPPORTED_OWN_QUEUE_PAIRS));
        }
        if (!(setup.protectionDomain() instanceof NativeProtectionDomain domain) || domain.nativeDevice() != device) {
            throw new IOException("the endpoint's protection domain is not on the connection's device "
                + device.name());
        }
        queuePair = domain.createQueuePair(setup.attributes(), this::createOnId, this::destroyQueuePair,
            QueuePairState.INIT);
    }

    /** {@code rdma_create_qp} on the id: librdmacm moves the queue pair to INIT and drives it from then on. */
    private MemorySegment createOnId(MemorySegment pd, MemorySegment initAttr) throws IOException {
        RdmaCmCalls.createQp(id, pd, initAttr);
        return id.get(ADDRESS, RdmaCmLayouts.CM_ID_QP);
    }

    /**
     * The endpoint closed the queue pair (any thread): {@code rdma_destroy_qp}, serialised with event processing
     * (librdmacm uses {@code id->qp} there), then the id goes on the event thread.
     */
    void destroyQueuePair(MemorySegment qp) {
        cm.eventLock().lock();
        try {
            RdmaCmCalls.destroyQp(id);
        } finally {
            cm.eventLock().unlock();
        }
        queuePairClosed = true;
        cm.execute(this::releaseId);
    }

    private void putPrivateData(MemorySegment param, ByteBuffer data, int max, Arena arena) throws IOException {
        if (data == null || !data.hasRemaining()) {
            param.set(ADDRESS, CONN_PARAM_PRIVATE_DATA, MemorySegment.NULL);
            param.set(JAVA_BYTE, CONN_PARAM_PRIVATE_DATA_LEN, (byte) 0);
            return;
        }
        if (data.remaining() > max) {
            throw new IOException("private data of " + data.remaining() + " bytes exceeds the " + max
                + " bytes rdma_cm carries here");
        }
        MemorySegment copy = arena.allocate(data.remaining());
        copy.asByteBuffer().put(data.duplicate());
        param.set(ADDRESS, CONN_PARAM_PRIVATE_DATA, copy);
        param.set(JAVA_BYTE, CONN_PARAM_PRIVATE_DATA_LEN, (byte) data.remaining());
    }

    private void onEstablished(CmEvent event) {
        if (done) {
            return;
        }
        end();
        established = true;
        queuePair.stateChanged(QueuePairState.READY_TO_SEND);
        SocketAddress local = CmAddresses.fromNative(id.asSlice(RdmaCmLayouts.CM_ID_SRC_ADDR));
        SocketAddress remote = CmAddresses.fromNative(id.asSlice(RdmaCmLayouts.CM_ID_DST_ADDR));
        ByteBuffer data = listener == null ? ByteBuffer.wrap(event.privateData()) : peerPrivateData;
        try {
            endpoint.established(data.asReadOnlyBuffer(), local, remote);
        } catch (IOException e) {
            endpoint.failed(e);
        } catch (RuntimeException e) {
            endpoint.failed(new IOException("the endpoint refused the connection: " + e, e));
        }
    }

    private void onDisconnected(CmEvent event) {
        if (!done) {
            fail(new ConnectException("Connection to " + target + " failed: the peer disconnected ("
                + RdmaCmCalls.eventStr(event.type()) + ")"));
            return;
        }
        if (!established || disconnected) {
            return;
        }
        disconnected = true;
        if (!queuePairClosed) {
            try {
                queuePair.modify(QueuePairState.ERROR, null);
            } catch (IOException | RuntimeException e) {
                // closed meanwhile: nothing left to flush
            }
        }
        cm.eventLock().lock();
        try {
            RdmaCmCalls.disconnect(id);
        } catch (NativeCallException e) {
            RdmaCmConnectionManager.LOG.debug("rdma_disconnect failed", e);
        } finally {
            cm.eventLock().unlock();
        }
    }

    private void end() {
        done = true;
        cm.attemptEnded(this);
        if (listener != null) {
            listener.requestEnded();
        }
    }

    /** Nanoseconds from {@code now} to the attempt's deadline (negative once past). */
    long nanosLeft(long now) {
        return deadline - now;
    }

    boolean expired(long now) {
        return !done && now - deadline > 0;
    }

    /** End the attempt unsuccessfully: the endpoint releases what it owns; the id goes after the queue pair. */
    void fail(IOException cause) {
        if (done) {
            return;
        }
        end();
        if (queuePair != null && !bound) {
            try {
                queuePair.close();
            } catch (RuntimeException e) {
                cause.addSuppressed(e);
            }
        }
        if (endpoint != null) {
            try {
                endpoint.failed(cause);
            } catch (RuntimeException e) {
                RdmaCmConnectionManager.LOG.warn("the endpoint failed to fail", e);
            }
        }
        if (queuePair == null || queuePairClosed) {
            releaseId();
        }
    }

    /** Destroy the id once its queue pair is gone (event thread, or the caller once the CM stopped). */
    private void releaseId() {
        if (idReleased || id == null) {
            return;
        }
        idReleased = true;
        if (established && !disconnected) {
            try {
                RdmaCmCalls.disconnect(id);
            } catch (NativeCallException e) {
                RdmaCmConnectionManager.LOG.debug("rdma_disconnect failed", e);
            }
        }
        cm.destroyId(id);
    }

    @Override
    public void close() {
        cm.execute(() -> fail(new IOException("connection attempt cancelled")));
    }

    @Override
    public String toString() {
        return "RdmaCmAttempt{" + (listener == null ? "active" : "passive") + ", " + source + " -> " + target
            + ", established=" + established + ", done=" + done + '}';
    }
}
