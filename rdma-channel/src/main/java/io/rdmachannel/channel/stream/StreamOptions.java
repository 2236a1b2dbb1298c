package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.ConnectionRequestFilter;

import java.util.Objects;

/**
 * Per-connection settings (what {@code SocketOption}s of the NIO face set). Fluent, mutable, copied by the
 * transport. The defaults come from {@link StreamConfiguration} (rsockets' defaults unless the
 * {@code rdmachannel.stream.*} system properties say otherwise).
 */
public final class StreamOptions {
    /** Smallest ring size accepted. */
    public static final int MIN_BUFFER = 4096;
    /** Largest ring size accepted. */
    public static final int MAX_BUFFER = 1 << 30;
    /** Smallest queue depth (rsockets' {@code RS_QP_MIN_SIZE}). */
    public static final int MIN_QUEUE_SIZE = 16;
    /** Largest queue depth (rsockets' {@code RS_QP_MAX_SIZE}). */
    public static final int MAX_QUEUE_SIZE = 0xFFFE;
    /** Largest inline threshold accepted. */
    public static final int MAX_INLINE = 1024;

    private static volatile StreamConfiguration systemDefaults;

    private int receiveBufferSize;
    private int sendBufferSize;
    private int sendQueueSize;
    private int receiveQueueSize;
    private int inlineSize;
    private long busyPollNanos;
    private boolean keepAlive;
    private boolean sharedReceiveQueue;
    private boolean xrc;
    private ConnectionRequestFilter requestFilter = ConnectionRequestFilter.ACCEPT_ALL;
    private String connectionManager;

    /**
     * The defaults of this JVM: {@link StreamConfiguration#fromSystemProperties()}, read on first use.
     *
     * @throws IllegalArgumentException naming a {@code rdmachannel.stream.*} property whose value is invalid.
     */
    public StreamOptions() {
        this(jvmDefaults());
    }

    /**
     * The defaults of a configuration.
     *
     * @param configuration where the queue sizes, ring sizes, inline threshold and polling time come from.
     */
    public StreamOptions(final StreamConfiguration configuration) {
        this.receiveBufferSize = powerOfTwo("receiveBufferSize", configuration.receiveBufferLength());
        this.sendBufferSize = powerOfTwo("sendBufferSize", configuration.sendBufferLength());
        this.sendQueueSize = range("sendQueueSize", configuration.sendQueueSize(), MIN_QUEUE_SIZE, MAX_QUEUE_SIZE);
        this.receiveQueueSize = range("receiveQueueSize", configuration.receiveQueueSize(), MIN_QUEUE_SIZE,
            MAX_QUEUE_SIZE);
        this.inlineSize = Math.min(configuration.inlineDataLength(), MAX_INLINE);
        this.busyPollNanos = configuration.pollingTimeMicros() * 1000L;
        this.sharedReceiveQueue = configuration.sharedReceiveQueue();
        this.xrc = configuration.xrc();
    }

    private static StreamConfiguration jvmDefaults() {
        StreamConfiguration defaults = systemDefaults;
        if (defaults == null) {
            defaults = StreamConfiguration.fromSystemProperties();
            systemDefaults = defaults;
        }
        return defaults;
    }

    /**
     * A copy.
     *
     * @return a new instance with the same values.
     */
    public StreamOptions copy() {
        final StreamOptions copy = new StreamOptions(this);
        copy.receiveBufferSize = receiveBufferSize;
        copy.sendBufferSize = sendBufferSize;
        copy.sendQueueSize = sendQueueSize;
        copy.receiveQueueSize = receiveQueueSize;
        copy.inlineSize = inlineSize;
        copy.busyPollNanos = busyPollNanos;
        copy.keepAlive = keepAlive;
        copy.sharedReceiveQueue = sharedReceiveQueue;
        copy.xrc = xrc;
        return copy;
    }

    private StreamOptions(final StreamOptions other) {
        this.receiveBufferSize = other.receiveBufferSize;
        this.sendBufferSize = other.sendBufferSize;
        this.sendQueueSize = other.sendQueueSize;
        this.receiveQueueSize = other.receiveQueueSize;
        this.inlineSize = other.inlineSize;
        this.busyPollNanos = other.busyPollNanos;
        this.keepAlive = other.keepAlive;
        this.sharedReceiveQueue = other.sharedReceiveQueue;
        this.xrc = other.xrc;
        this.requestFilter = other.requestFilter;
        this.connectionManager = other.connectionManager;
    }

    /**
     * Choose the connection manager of one listener or connection: one its provider offers (such as {@code shm}
     * or {@code rdma_cm}) or {@code oob}, which every provider has; {@code null} for the transport's own (the
     * JVM's {@code rdmachannel.cm}). A manager other than the transport's is opened on first use and kept until
     * the transport closes. An unknown name fails the listen or connect with an {@link java.io.IOException}.
     *
     * @param name the manager's name, or {@code null}.
     * @return this.
     * @throws IllegalArgumentException for an empty name.
     */
    public StreamOptions connectionManager(final String name) {
        if (name != null && name.isBlank()) {
            throw new IllegalArgumentException("a connection manager's name cannot be empty");
        }
        this.connectionManager = name;
        return this;
    }

    /**
     * The connection manager chosen for this listener or connection.
     *
     * @return its name, or {@code null} for the transport's own.
     */
    public String connectionManager() {
        return connectionManager;
    }

    /**
     * Set a listener's host policy: the filter every connection request passes, after the listener's own checks
     * (closing, backlog full) and before anything is allocated for it; its rejection, with its words, is what the
     * requester's connect fails with. Effective for listeners made after this is set.
     *
     * @param filter the filter; {@link ConnectionRequestFilter#ACCEPT_ALL} for none.
     * @return this.
     */
    public StreamOptions requestFilter(final ConnectionRequestFilter filter) {
        this.requestFilter = Objects.requireNonNull(filter, "filter");
        return this;
    }

    /**
     * The listener's host policy.
     *
     * @return the filter, {@link ConnectionRequestFilter#ACCEPT_ALL} by default.
     */
    public ConnectionRequestFilter requestFilter() {
        return requestFilter;
    }

    /**
     * Set the receive ring size (SO_RCVBUF); effective before the connection exists.
     *
     * @param bytes in [{@link #MIN_BUFFER}, {@link #MAX_BUFFER}]; rounded up to a power of two.
     * @return this.
     */
    public StreamOptions receiveBufferSize(final int bytes) {
        this.receiveBufferSize = powerOfTwo("receiveBufferSize", bytes);
        return this;
    }

    /**
     * Set the send staging ring size (SO_SNDBUF); effective before the connection exists.
     *
     * @param bytes in [{@link #MIN_BUFFER}, {@link #MAX_BUFFER}]; rounded up to a power of two.
     * @return this.
     */
    public StreamOptions sendBufferSize(final int bytes) {
        this.sendBufferSize = powerOfTwo("sendBufferSize", bytes);
        return this;
    }

    /**
     * Set the send queue depth.
     *
     * @param size in [{@link #MIN_QUEUE_SIZE}, {@link #MAX_QUEUE_SIZE}].
     * @return this.
     */
    public StreamOptions sendQueueSize(final int size) {
        this.sendQueueSize = range("sendQueueSize", size, MIN_QUEUE_SIZE, MAX_QUEUE_SIZE);
        return this;
    }

    /**
     * Set the receive queue depth, which is also the message credit granted to the peer.
     *
     * @param size in [{@link #MIN_QUEUE_SIZE}, {@link #MAX_QUEUE_SIZE}].
     * @return this.
     */
    public StreamOptions receiveQueueSize(final int size) {
        this.receiveQueueSize = range("receiveQueueSize", size, MIN_QUEUE_SIZE, MAX_QUEUE_SIZE);
        return this;
    }

    /**
     * Set the inline threshold: writes up to this size are posted inline.
     *
     * @param bytes in [0, {@link #MAX_INLINE}].
     * @return this.
     */
    public StreamOptions inlineSize(final int bytes) {
        this.inlineSize = range("inlineSize", bytes, 0, MAX_INLINE);
        return this;
    }

    /**
     * Set how long a blocking read or write polls for completions before it parks; 0 parks at once.
     *
     * @param nanos at least 0.
     * @return this.
     */
    public StreamOptions busyPollNanos(final long nanos) {
        if (nanos < 0) {
            throw new IllegalArgumentException("busyPollNanos must be at least 0: busyPollNanos=" + nanos);
        }
        this.busyPollNanos = nanos;
        return this;
    }

    /**
     * Set whether an idle connection is probed so a dead peer is noticed (SO_KEEPALIVE).
     *
     * @param enabled the setting.
     * @return this.
     */
    public StreamOptions keepAlive(final boolean enabled) {
        this.keepAlive = enabled;
        return this;
    }

    /**
     * Set whether the connection (or every connection a listener accepts) takes its receives from its device's
     * shared receive queue (SRQ mode, {@link StreamConfiguration#SHARED_RECEIVE_QUEUE_PROP_NAME}). On a device
     * without shared receive queues the connection has a receive queue of its own.
     *
     * @param enabled the setting.
     * @return this.
     */
    public StreamOptions sharedReceiveQueue(final boolean enabled) {
        this.sharedReceiveQueue = enabled;
        return this;
    }

    /**
     * Whether SRQ mode is asked for.
     *
     * @return whether enabled.
     */
    public boolean sharedReceiveQueue() {
        return sharedReceiveQueue;
    }

    /**
     * Set whether a connection asks for the XRC mode ({@link StreamConfiguration#XRC_PROP_NAME},
     * docs/xrc-stream-mode.md): an XRC initiator and target queue pair and an XRC shared receive queue instead of an
     * RC queue pair. It is used where the device has XRC, the connection manager lets the endpoint make its queue
     * pairs and the peer agrees; otherwise the connection is plain RC. A listener with it answers XRC requests in XRC
     * and plain ones in RC.
     *
     * @param enabled the setting.
     * @return this.
     */
    public StreamOptions xrc(final boolean enabled) {
        this.xrc = enabled;
        return this;
    }

    /**
     * Whether the XRC mode is asked for.
     *
     * @return whether enabled.
     */
    public boolean xrc() {
        return xrc;
    }

    /**
     * The receive ring size.
     *
     * @return bytes.
     */
    public int receiveBufferSize() {
        return receiveBufferSize;
    }

    /**
     * The send ring size.
     *
     * @return bytes.
     */
    public int sendBufferSize() {
        return sendBufferSize;
    }

    /**
     * The send queue depth.
     *
     * @return work requests.
     */
    public int sendQueueSize() {
        return sendQueueSize;
    }

    /**
     * The receive queue depth.
     *
     * @return work requests.
     */
    public int receiveQueueSize() {
        return receiveQueueSize;
    }

    /**
     * The inline threshold.
     *
     * @return bytes.
     */
    public int inlineSize() {
        return inlineSize;
    }

    /**
     * The busy-poll time.
     *
     * @return nanoseconds.
     */
    public long busyPollNanos() {
        return busyPollNanos;
    }

    /**
     * The keep-alive setting.
     *
     * @return whether enabled.
     */
    public boolean keepAlive() {
        return keepAlive;
    }

    private static int powerOfTwo(final String name, final int bytes) {
        range(name, bytes, MIN_BUFFER, MAX_BUFFER);
        return bytes == Integer.highestOneBit(bytes) ? bytes : Integer.highestOneBit(bytes) << 1;
    }

    private static int range(final String name, final int value, final int min, final int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + " must be in [" + min + ", " + max + "]: " + name + "=" + value);
        }
        return value;
    }

    @Override
    public String toString() {
        return "StreamOptions{receiveBufferSize=" + receiveBufferSize + ", sendBufferSize=" + sendBufferSize
            + ", sendQueueSize=" + sendQueueSize + ", receiveQueueSize=" + receiveQueueSize
            + ", inlineSize=" + inlineSize + ", busyPollNanos=" + busyPollNanos + ", keepAlive=" + keepAlive
            + ", sharedReceiveQueue=" + sharedReceiveQueue + ", xrc=" + xrc + '}';
    }
}
