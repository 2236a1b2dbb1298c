package io.rdmachannel.nio;

import static java.net.StandardSocketOptions.IP_TOS;
import static java.net.StandardSocketOptions.SO_KEEPALIVE;
import static java.net.StandardSocketOptions.SO_LINGER;
import static java.net.StandardSocketOptions.SO_RCVBUF;
import static java.net.StandardSocketOptions.SO_REUSEADDR;
import static java.net.StandardSocketOptions.SO_SNDBUF;
import static java.net.StandardSocketOptions.TCP_NODELAY;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_BUSY_POLL;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_CONNECTION_FILTER;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_CONNECTION_MANAGER;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_INLINE_SIZE;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_PATH;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_PATH_POLICY;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_RECEIVE_QUEUE_SIZE;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_SEND_QUEUE_SIZE;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE;
import static io.rdmachannel.nio.RdmaSocketOptions.RDMA_XRC;

import java.io.IOException;
import java.net.SocketException;
import java.net.SocketOption;
import java.nio.channels.NetworkChannel;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.stream.StreamOptions;

/**
 * The option values of one channel; guarded by the channel's state lock. Ring sizes keep the value the user set
 * (for getOption) and give the transport that value clamped to the ring limits (StreamOptions rounds it up to a
 * power of two).
 */
final class OptionValues {
    static final Set<SocketOption<?>> CLIENT_OPTIONS = Set.of(SO_SNDBUF, SO_RCVBUF, SO_KEEPALIVE, SO_REUSEADDR,
        SO_LINGER, TCP_NODELAY, IP_TOS, RDMA_SEND_QUEUE_SIZE, RDMA_RECEIVE_QUEUE_SIZE, RDMA_INLINE_SIZE,
        RDMA_BUSY_POLL, RDMA_PATH_POLICY, RDMA_PATH, RDMA_CONNECTION_MANAGER, RDMA_SHARED_RECEIVE_QUEUE, RDMA_XRC);
    static final Set<SocketOption<?>> SERVER_OPTIONS = Set.of(SO_RCVBUF, SO_REUSEADDR, RDMA_SEND_QUEUE_SIZE,
        RDMA_RECEIVE_QUEUE_SIZE, RDMA_INLINE_SIZE, RDMA_BUSY_POLL, RDMA_PATH_POLICY, RDMA_PATH,
        RDMA_CONNECTION_FILTER, RDMA_CONNECTION_MANAGER, RDMA_SHARED_RECEIVE_QUEUE, RDMA_XRC);
    /** The options a channel's TCP path takes over from what the application set. */
    private static final Set<SocketOption<?>> PLATFORM_OPTIONS = Set.of(SO_SNDBUF, SO_RCVBUF, SO_KEEPALIVE,
        SO_REUSEADDR, SO_LINGER, TCP_NODELAY, IP_TOS);

    private final StreamOptions stream = new StreamOptions();
    private int sendBuffer = stream.sendBufferSize();
    private int receiveBuffer = stream.receiveBufferSize();
    private boolean reuseAddress;
    private int linger = -1;
    private boolean noDelay;
    private int trafficClass;
    private int busyPollMicros = (int) (stream.busyPollNanos() / 1000);
    private RdmaPathPolicy pathPolicy;
    /** Read by the connection manager's thread for each request: see {@link #checkRequest}. */
    private volatile RdmaConnectionFilter connectionFilter;
    /** The standard options the application set, in order: a TCP path applies these and no others. */
    private final Set<SocketOption<?>> setByApplication = new LinkedHashSet<>();

    OptionValues(final boolean reuseAddress) {
        this.reuseAddress = reuseAddress;
        // the listener keeps a copy of the stream options; through this it sees a filter set after bind too
        stream.requestFilter(this::checkRequest);
    }

    /**
     * The stream listener's host policy: the application's {@link RdmaConnectionFilter}, if it set one.
     */
    private Rejection checkRequest(final ConnectionRequest request) {
        final RdmaConnectionFilter filter = connectionFilter;
        if (filter == null) {
            return null;
        }
        final String reason = filter.check(new RdmaConnectionRequest(request.remoteAddress(),
            request.localAddress(), request.deviceName(), request.privateData()));
        return reason == null ? null : new Rejection(RejectReason.POLICY, reason);
    }

    /**
     * The options an accepted channel starts with: the listener's ring and queue settings, the rest default.
     */
    OptionValues inherit() {
        final OptionValues child = new OptionValues(false);
        child.receiveBuffer = receiveBuffer;
        child.busyPollMicros = busyPollMicros;
        child.pathPolicy = pathPolicy;
        child.stream.receiveBufferSize(stream.receiveBufferSize()).sendQueueSize(stream.sendQueueSize())
            .receiveQueueSize(stream.receiveQueueSize()).inlineSize(stream.inlineSize())
            .busyPollNanos(stream.busyPollNanos()).sharedReceiveQueue(stream.sharedReceiveQueue()).xrc(stream.xrc());
        return child;
    }

    static void checkType(final Set<SocketOption<?>> supported, final SocketOption<?> name, final Object value) {
        Objects.requireNonNull(name, "name");
        if (!supported.contains(name)) {
            throw new UnsupportedOperationException("'" + name + "' not supported");
        }
        // null removes a connection filter or manager choice; every other option needs a value
        if (!name.type().isInstance(value)
            && !(value == null && (name == RDMA_CONNECTION_FILTER || name == RDMA_CONNECTION_MANAGER))) {
            throw new IllegalArgumentException("Invalid value '" + value + "'");
        }
    }

    static void checkSupported(final Set<SocketOption<?>> supported, final SocketOption<?> name) {
        Objects.requireNonNull(name, "name");
        if (!supported.contains(name)) {
            throw new UnsupportedOperationException("'" + name + "' not supported");
        }
    }

    /**
     * Refuse to set a read-only option, as the JDK refuses {@code SO_PEERCRED}.
     */
    static void checkSettable(final SocketOption<?> name) throws SocketException {
        if (name == RDMA_PATH) {
            throw new SocketException(name + " cannot be set");
        }
    }

    void set(final SocketOption<?> name, final Object value) {
        if (PLATFORM_OPTIONS.contains(name)) {
            setByApplication.add(name);
        }
        if (name == SO_SNDBUF) {
            sendBuffer = bufferSize((Integer) value);
            stream.sendBufferSize(clampRing(sendBuffer));
        } else if (name == SO_RCVBUF) {
            receiveBuffer = bufferSize((Integer) value);
            stream.receiveBufferSize(clampRing(receiveBuffer));
        } else if (name == SO_KEEPALIVE) {
            stream.keepAlive((Boolean) value);
        } else if (name == SO_REUSEADDR) {
            reuseAddress = (Boolean) value;
        } else if (name == SO_LINGER) {
            linger = Math.min(Math.max((Integer) value, -1), 0xFFFF);
        } else if (name == TCP_NODELAY) {
            noDelay = (Boolean) value;
        } else if (name == IP_TOS) {
            final int tos = (Integer) value;
            if (tos < 0 || tos > 255) {
                throw new IllegalArgumentException("Invalid IP_TOS value");
            }
            trafficClass = tos;
        } else if (name == RDMA_SEND_QUEUE_SIZE) {
            stream.sendQueueSize((Integer) value);
        } else if (name == RDMA_RECEIVE_QUEUE_SIZE) {
            stream.receiveQueueSize((Integer) value);
        } else if (name == RDMA_INLINE_SIZE) {
            stream.inlineSize((Integer) value);
        } else if (name == RDMA_BUSY_POLL) {
            final int micros = (Integer) value;
            if (micros < 0) {
                throw new IllegalArgumentException("RDMA_BUSY_POLL must be at least 0: RDMA_BUSY_POLL=" + micros);
            }
            stream.busyPollNanos(TimeUnit.MICROSECONDS.toNanos(micros));
            busyPollMicros = micros;
        } else if (name == RDMA_PATH_POLICY) {
            pathPolicy = (RdmaPathPolicy) Objects.requireNonNull(value, "RDMA_PATH_POLICY");
        } else if (name == RDMA_CONNECTION_FILTER) {
            connectionFilter = (RdmaConnectionFilter) value;
        } else if (name == RDMA_CONNECTION_MANAGER) {
            stream.connectionManager((String) value);
        } else if (name == RDMA_SHARED_RECEIVE_QUEUE) {
            stream.sharedReceiveQueue((Boolean) value);
        } else if (name == RDMA_XRC) {
            stream.xrc((Boolean) value);
        } else {
            throw new AssertionError(name);
        }
    }

    Object get(final SocketOption<?> name) {
        if (name == SO_SNDBUF) {
            return sendBuffer;
        } else if (name == SO_RCVBUF) {
            return receiveBuffer;
        } else if (name == SO_KEEPALIVE) {
            return stream.keepAlive();
        } else if (name == SO_REUSEADDR) {
            return reuseAddress;
        } else if (name == SO_LINGER) {
            return linger;
        } else if (name == TCP_NODELAY) {
            return noDelay;
        } else if (name == IP_TOS) {
            return trafficClass;
        } else if (name == RDMA_SEND_QUEUE_SIZE) {
            return stream.sendQueueSize();
        } else if (name == RDMA_RECEIVE_QUEUE_SIZE) {
            return stream.receiveQueueSize();
        } else if (name == RDMA_INLINE_SIZE) {
            return stream.inlineSize();
        } else if (name == RDMA_BUSY_POLL) {
            return busyPollMicros;
        } else if (name == RDMA_PATH_POLICY) {
            return pathPolicy;
        } else if (name == RDMA_CONNECTION_FILTER) {
            return connectionFilter;
        } else if (name == RDMA_CONNECTION_MANAGER) {
            return stream.connectionManager();
        } else if (name == RDMA_SHARED_RECEIVE_QUEUE) {
            return stream.sharedReceiveQueue();
        } else if (name == RDMA_XRC) {
            return stream.xrc();
        }
        throw new AssertionError(name);
    }

    /**
     * The policy the application set, or null.
     */
    RdmaPathPolicy pathPolicy() {
        return pathPolicy;
    }

    /**
     * Whether a standard option goes to the platform channel of a TCP path.
     */
    static boolean isPlatformOption(final SocketOption<?> name) {
        return PLATFORM_OPTIONS.contains(name);
    }

    /**
     * Give a TCP path's platform channel the standard options the application set (and no others: its defaults
     * stay the platform's).
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    void applyTo(final NetworkChannel channel) throws IOException {
        for (final SocketOption<?> name : setByApplication) {
            if (channel.supportedOptions().contains(name)) {
                channel.setOption((SocketOption) name, get(name));
            }
        }
    }

    int linger() {
        return linger;
    }

    long busyPollNanos() {
        return stream.busyPollNanos();
    }

    StreamOptions stream() {
        return stream.copy();
    }

    private static int bufferSize(final int bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("Invalid send/receive buffer size");
        }
        return bytes;
    }

    private static int clampRing(final int bytes) {
        return Math.min(Math.max(bytes, StreamOptions.MIN_BUFFER), StreamOptions.MAX_BUFFER);
    }
}
