package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CM_EVENT_CONN;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CM_EVENT_EVENT;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CM_EVENT_ID;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CM_EVENT_LISTEN_ID;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CM_EVENT_STATUS;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_PRIVATE_DATA;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_PRIVATE_DATA_LEN;
import static io.rdmachannel.ffm.layout.RdmaCmLayouts.CONN_PARAM_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.channel.cm.CmConnection;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmEndpointFactory;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.cm.ConnectionRequestFilter;
import io.rdmachannel.ffm.cm.RdmaCmCalls;
import io.rdmachannel.ffm.internal.EpollWaitSet;
import io.rdmachannel.ffm.internal.LibC;
import io.rdmachannel.ffm.layout.RdmaCmLayouts;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The native provider's {@code rdma_cm} connection manager: librdmacm in asynchronous mode. One platform thread per
 * connection manager waits with epoll on the event channel (made non-blocking) and on an eventfd for tasks and
 * close; each event is copied out (type, status, ids, private data, connection parameters) and acked at once, then
 * handled. The connect and accept sequences are those of rsockets ({@code rconnect} / {@code rs_accept}):
 * <ul>
 *   <li>active: {@code rdma_create_id(RDMA_PS_TCP)}, {@code rdma_resolve_addr} and {@code rdma_resolve_route} with
 *       rsockets' back-off (1 s doubled per retry, 6 retries on ETIMEDOUT), then on ROUTE_RESOLVED
 *       {@link CmEndpoint#prepare} on the id's device, {@code rdma_create_qp} on the id, {@link CmEndpoint#bind},
 *       {@code rdma_connect} (responder resources 0, initiator depth 0 or 1 on iWARP, flow control 1, the setup's
 *       retry counts); librdmacm moves the queue pair to READY_TO_SEND when the reply comes;</li>
 *   <li>passive: on CONNECT_REQUEST the filter runs first; then the endpoint is made and prepared, the queue pair
 *       created on the child id, bound, and {@code rdma_accept} sent with a copy of the request's parameters whose
 *       private data is replaced.</li>
 * </ul>
 * A rejection carries one byte, the {@link io.rdmachannel.channel.cm.RejectReason} code.
 *
 * <p>Ids and queue pairs: the queue pair belongs to the endpoint; closing it runs {@code rdma_destroy_qp} on its id,
 * and the id is destroyed after it (which also disconnects). DISCONNECTED and DEVICE_REMOVAL move an established
 * connection's queue pair to ERROR so the engine sees flushed completions.
 */
final class RdmaCmConnectionManager implements ConnectionManager {
    static final String NAME = "rdma_cm";
    /** How long a connection attempt may take in all, in milliseconds. */
    static final String CONNECT_TIMEOUT_PROP_NAME = "rdmachannel.rdma_cm.connectTimeoutMillis";
    /** Default for {@link #CONNECT_TIMEOUT_PROP_NAME}. */
    static final long CONNECT_TIMEOUT_DEFAULT = 30_000;

    static final Logger LOG = LoggerFactory.getLogger(RdmaCmConnectionManager.class);

    static final int ADDR_RESOLVED = 0;
    static final int ADDR_ERROR = 1;
    static final int ROUTE_RESOLVED = 2;
    static final int ROUTE_ERROR = 3;
    static final int CONNECT_REQUEST = 4;
    static final int CONNECT_RESPONSE = 5;
    static final int CONNECT_ERROR = 6;
    static final int UNREACHABLE = 7;
    static final int REJECTED = 8;
    static final int ESTABLISHED = 9;
    static final int DISCONNECTED = 10;
    static final int DEVICE_REMOVAL = 11;
    static final int TIMEWAIT_EXIT = 15;

    private static final long CHANNEL_TOKEN = 1;
    private static final int WAIT_MILLIS = 100;

    private final NativeProvider provider;
    private final long connectTimeoutNanos;
    private final Arena arena = Arena.ofAuto();
    private final MemorySegment channel;
    private final EpollWaitSet waitSet;
    private final MemorySegment eventOut;
    private final ReentrantLock eventLock = new ReentrantLock();
    private final Queue<Runnable> tasks = new ConcurrentLinkedQueue<>();
    private final Map<Long, Object> ids = new HashMap<>();
    private final Map<Long, NativeDevice> devices = new HashMap<>();
    private final List<RdmaCmAttempt> attempts = new ArrayList<>();
    private final Thread thread;
    private volatile boolean running = true;
    /** Set under {@code this} when the event thread has stopped; tasks then run on the caller. */
    private boolean stopped;
    private int liveIds;
    private volatile boolean closeRequested;
    /** Guarded by {@code devices}. */
    private boolean devicesClosed;

    RdmaCmConnectionManager(NativeProvider provider) throws IOException {
        this.provider = provider;
        this.connectTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(
            Long.getLong(CONNECT_TIMEOUT_PROP_NAME, CONNECT_TIMEOUT_DEFAULT));
        this.channel = RdmaCmCalls.createEventChannel().reinterpret(RdmaCmLayouts.RDMA_EVENT_CHANNEL.size());
        EpollWaitSet set = null;
        try {
            int fd = channel.get(JAVA_INT, RdmaCmLayouts.EVENT_CHANNEL_FD);
            LibC.setNonBlocking(fd);
            set = new EpollWaitSet(4);
            set.add(fd, LibC.EPOLLIN, CHANNEL_TOKEN);
        } catch (IOException | RuntimeException e) {
            if (set != null) {
                closeQuietly(set);
            }
            RdmaCmCalls.destroyEventChannel(channel);
            throw e;
        }
        this.waitSet = set;
        this.eventOut = arena.allocate(ADDRESS);
        this.thread = Thread.ofPlatform().daemon().name("rdmachannel-rdma-cm-" + Integer.toHexString(
            System.identityHashCode(this))).start(this::run);
    }

    @Override
    public String name() {
        return NAME;
    }

    long connectTimeoutNanos() {
        return connectTimeoutNanos;
    }

    MemorySegment channel() {
        return channel;
    }

    ReentrantLock eventLock() {
        return eventLock;
    }

    // ----- listening and connecting -----

    @Override
    public CmListener listen(SocketAddress local, int backlog, ConnectionRequestFilter filter,
        CmEndpointFactory factory) throws IOException {
        SocketAddress address = CmAddresses.check(local);
        return call(() -> RdmaCmListener.open(this, address, backlog < 1 ? 50 : backlog, filter, factory));
    }

    @Override
    public CmConnection connect(SocketAddress remote, SocketAddress local, CmEndpoint endpoint) throws IOException {
        SocketAddress target = CmAddresses.check(remote);
        SocketAddress source = local == null ? null : CmAddresses.check(local);
        if (source != null && source.getClass() != target.getClass()) {
            throw new CmAddresses.Unsupported("the local address " + source + " and the remote address " + target
                + " are of different types");
        }
        if (!running) {
            throw closedException();
        }
        RdmaCmAttempt attempt = RdmaCmAttempt.active(this, endpoint, source, target);
        execute(() -> {
            if (running) {
                attempt.start();
            } else {
                attempt.fail(closedException());
            }
        });
        return attempt;
    }

    /** Nothing starts once the manager stopped (on its last tasks or after): no thread would see the events. */
    private static IOException closedException() {
        return new IOException("the rdma_cm connection manager is closed");
    }

    /** Something that runs on the event thread and may fail. */
    @FunctionalInterface
    interface IoTask<T> {
        T run() throws IOException;
    }

    /**
     * Run a task on the event thread and wait for it: ids are created and used there only.
     */
    private <T> T call(IoTask<T> task) throws IOException {
        CompletableFuture<T> result = new CompletableFuture<>();
        execute(() -> {
            try {
                if (!running) {
                    throw closedException();
                }
                result.complete(task.run());
            } catch (IOException | RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
        try {
            return result.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for the rdma_cm event thread");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            if (e.getCause() instanceof RuntimeException runtime) {
                throw runtime;
            }
            throw new IOException(e.getCause());
        }
    }

    // ----- ids and devices (event thread) -----

    /** {@code rdma_create_id(RDMA_PS_TCP)} on this CM's channel; {@link #destroyId} releases it. */
    MemorySegment createId() throws IOException {
        try (Arena temporary = Arena.ofConfined()) {
            MemorySegment out = temporary.allocate(ADDRESS);
            RdmaCmCalls.createId(channel, out, MemorySegment.NULL, RdmaCmLayouts.RDMA_PS_TCP);
            countId();
            return out.get(ADDRESS, 0).reinterpret(RdmaCmLayouts.RDMA_CM_ID.size());
        }
    }

    /** Count an id that exists (created here, or a child id of a request); the channel outlives it. */
    private void countId() {
        synchronized (this) {
            liveIds++;
        }
    }

    /** Route the id's events to its owner. */
    void own(MemorySegment id, Object owner) {
        ids.put(id.address(), owner);
    }

    /** {@code rdma_destroy_id}; every event of the id was acked already, so it does not wait. */
    void destroyId(MemorySegment id) {
        ids.remove(id.address());
        try {
            RdmaCmCalls.destroyId(id);
        } catch (NativeCallException e) {
            LOG.debug("rdma_destroy_id failed", e);
        }
        boolean last;
        synchronized (this) {
            last = --liveIds == 0 && stopped;
        }
        if (last) {
            RdmaCmCalls.destroyEventChannel(channel);
        }
    }

    /** The device of an id's {@code ibv_context}, wrapped once (librdmacm owns the context). */
    NativeDevice deviceOf(MemorySegment id) throws IOException {
        MemorySegment context = id.get(ADDRESS, RdmaCmLayouts.CM_ID_VERBS);
        if (context.equals(MemorySegment.NULL)) {
            throw new IOException("the rdma_cm id has no device");
        }
        synchronized (devices) {
            NativeDevice device = devices.get(context.address());
            if (device == null) {
                device = NativeDevice.wrap(provider, context);
                devices.put(context.address(), device);
            }
            return device;
        }
    }

    /** The name of an id's device ({@code rxe0}), for a request's filter; {@code "unknown"} if it has none. */
    String deviceNameOf(MemorySegment id) {
        try {
            return deviceOf(id).name();
        } catch (IOException | RuntimeException e) {
            LOG.debug("no device for an rdma_cm id", e);
            return "unknown";
        }
    }

    void attemptStarted(RdmaCmAttempt attempt) {
        attempts.add(attempt);
    }

    void attemptEnded(RdmaCmAttempt attempt) {
        attempts.remove(attempt);
    }

    // ----- the event thread -----

    /**
     * Run a task on the event thread; once it has stopped, run it here (ids left by established connections are
     * destroyed that way when their queue pairs close).
     */
    void execute(Runnable task) {
        synchronized (this) {
            if (!stopped) {
                tasks.add(task);
                try {
                    waitSet.wakeup();
                } catch (NativeCallException e) {
                    LOG.warn("cannot wake the rdma_cm event thread", e);
                }
                return;
            }
        }
        eventLock.lock();
        try {
            task.run();
        } finally {
            eventLock.unlock();
        }
    }

    boolean onEventThread() {
        return Thread.currentThread() == thread;
    }

    private void run() {
        try {
            while (running) {
                waitSet.await(waitMillis());
                drainEvents();
                runTasks();
                expireAttempts();
            }
        } catch (IOException | RuntimeException e) {
            if (running) {
                LOG.error("the rdma_cm connection manager failed", e);
            }
        } finally {
            shutdown();
        }
    }

    private void runTasks() {
        Runnable task;
        while ((task = tasks.poll()) != null) {
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.error("rdma_cm connection manager task failed", e);
            }
        }
    }

    private void drainEvents() throws NativeCallException {
        while (running) {
            CmEvent event;
            eventLock.lock();
            try {
                if (!RdmaCmCalls.getCmEvent(channel, eventOut)) {
                    return;
                }
                event = CmEvent.copyAndAck(eventOut.get(ADDRESS, 0));
            } finally {
                eventLock.unlock();
            }
            try {
                dispatch(event);
            } catch (RuntimeException e) {
                LOG.error("handling {} failed", event, e);
            }
        }
    }

    private void dispatch(CmEvent event) {
        if (event.type() == CONNECT_REQUEST) {
            countId();
            Object owner = ids.get(event.listenId());
            if (owner instanceof RdmaCmListener listener) {
                listener.onRequest(event);
            } else {
                RdmaCmAttempt.rejectOrphan(this, event);
            }
            return;
        }
        Object owner = ids.get(event.id());
        if (owner instanceof RdmaCmAttempt attempt) {
            attempt.onEvent(event);
        } else if (owner instanceof RdmaCmListener listener) {
            listener.onEvent(event);
        } else {
            LOG.debug("ignoring {} for an unknown id", event);
        }
    }

    /**
     * How long the event thread may sleep: until the earliest attempt's deadline (at most {@link #WAIT_MILLIS}), or,
     * with no attempt under way, until an event, a task or the stop wakes it: an idle connection manager takes no
     * CPU (it woke ten times a second, a few percent of an emulated guest's CPU during a transfer).
     */
    private int waitMillis() {
        if (attempts.isEmpty()) {
            return -1;
        }
        long now = System.nanoTime();
        long earliest = Long.MAX_VALUE;
        for (RdmaCmAttempt attempt : attempts) {
            earliest = Math.min(earliest, attempt.nanosLeft(now));
        }
        return Math.clamp(TimeUnit.NANOSECONDS.toMillis(earliest) + 1, 1, WAIT_MILLIS);
    }

    private void expireAttempts() {
        long now = System.nanoTime();
        for (RdmaCmAttempt attempt : List.copyOf(attempts)) {
            if (attempt.expired(now)) {
                attempt.fail(new SocketTimeoutException("Connect timed out"));
            }
        }
    }

    private void shutdown() {
        for (RdmaCmAttempt attempt : List.copyOf(attempts)) {
            attempt.fail(new IOException("the rdma_cm connection manager is closed"));
        }
        for (Object owner : List.copyOf(ids.values())) {
            if (owner instanceof RdmaCmListener listener) {
                listener.closeNow();
            }
        }
        runTasks();
        boolean noIds;
        synchronized (this) {
            stopped = true;
            noIds = liveIds == 0;
        }
        // tasks queued between the last poll and the stop
        eventLock.lock();
        try {
            runTasks();
        } finally {
            eventLock.unlock();
        }
        closeQuietly(waitSet);
        if (noIds) {
            RdmaCmCalls.destroyEventChannel(channel);
        }
        if (closeRequested) {
            closeDevices();
        }
    }

    /**
     * Listeners close and attempts in progress fail on the event thread, which then ends; the devices stay open
     * (the transport closes what it made on them first, then {@link #close()}). Waits for the thread unless called
     * on it (from an endpoint's callback), at most 10 s.
     */
    @Override
    public void stop() {
        if (running) {
            running = false;
            try {
                waitSet.wakeup();
            } catch (NativeCallException e) {
                LOG.debug("waking the rdma_cm event thread", e);
            }
        }
        if (!onEventThread()) {
            try {
                thread.join(TimeUnit.SECONDS.toMillis(10));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** {@link #stop()}, then the devices close (on the event thread as it ends if this is called on it). */
    @Override
    public void close() {
        closeRequested = true;
        stop();
        if (!thread.isAlive()) {
            closeDevices();
        }
    }

    private void closeDevices() {
        synchronized (devices) {
            if (devicesClosed) {
                return;
            }
            devicesClosed = true;
            for (NativeDevice device : devices.values()) {
                try {
                    device.close();
                } catch (IllegalStateException e) {
                    LOG.debug("device {} still in use", device.name(), e);
                }
            }
        }
    }

    private static void closeQuietly(EpollWaitSet set) {
        try {
            set.close();
        } catch (NativeCallException e) {
            LOG.debug("closing the epoll set", e);
        }
    }

    @Override
    public String toString() {
        return "RdmaCmConnectionManager{running=" + running + ", ids=" + ids.size() + '}';
    }

    /**
     * One event, copied out of librdmacm's {@code rdma_cm_event} before it was acked (the ack frees the private
     * data).
     *
     * @param type the {@code RDMA_CM_EVENT_*} value.
     * @param status the status: a negative errno, or an IB CM reason for REJECTED.
     * @param id the id's address.
     * @param listenId the listening id's address for CONNECT_REQUEST.
     * @param privateData the private data, or an empty array.
     * @param connParam the raw {@code rdma_conn_param} (its private data pointer is stale once acked).
     */
    record CmEvent(int type, int status, long id, long listenId, byte[] privateData, byte[] connParam) {
        static CmEvent copyAndAck(MemorySegment pointer) throws NativeCallException {
            MemorySegment event = pointer.reinterpret(RdmaCmLayouts.RDMA_CM_EVENT.size());
            try {
                MemorySegment conn = event.asSlice(CM_EVENT_CONN, CONN_PARAM_SIZE);
                MemorySegment data = conn.get(ADDRESS, CONN_PARAM_PRIVATE_DATA);
                int length = Byte.toUnsignedInt(conn.get(JAVA_BYTE, CONN_PARAM_PRIVATE_DATA_LEN));
                byte[] privateData = data.equals(MemorySegment.NULL) ? new byte[0]
                    : data.reinterpret(length).toArray(JAVA_BYTE);
                return new CmEvent(event.get(JAVA_INT, CM_EVENT_EVENT), event.get(JAVA_INT, CM_EVENT_STATUS),
                    event.get(ADDRESS, CM_EVENT_ID).address(), event.get(ADDRESS, CM_EVENT_LISTEN_ID).address(),
                    privateData, conn.toArray(JAVA_BYTE));
            } finally {
                RdmaCmCalls.ackCmEvent(pointer);
            }
        }

        MemorySegment idSegment() {
            return MemorySegment.ofAddress(id).reinterpret(RdmaCmLayouts.RDMA_CM_ID.size());
        }

        @Override
        public String toString() {
            return RdmaCmCalls.eventStr(type) + "(status=" + status + ", privateData=" + privateData.length + ")";
        }
    }
}
