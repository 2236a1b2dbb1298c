package io.rdmachannel.nio;

import java.net.SocketOption;

/**
 * Socket options specific to RDMA channels, accepted by {@link RdmaSocketChannel#setOption} and
 * {@link RdmaServerSocketChannel#setOption} next to the standard ones. Like the ring sizes behind
 * {@code SO_SNDBUF}/{@code SO_RCVBUF}, they take effect when the connection is created (connect, or for a server
 * channel, on the connections it accepts later); set after that they are stored and reported but change nothing.
 * Out-of-range values are refused with {@link IllegalArgumentException}.
 */
public final class RdmaSocketOptions {
    /**
     * The send queue depth of the queue pair, in work requests, in [16, 65534]; default 384.
     */
    public static final SocketOption<Integer> RDMA_SEND_QUEUE_SIZE = new RdmaOption<>("RDMA_SEND_QUEUE_SIZE",
        Integer.class);

    /**
     * The receive queue depth of the queue pair, in work requests, in [16, 65534]; it is also the message credit
     * granted to the peer. Default 384.
     */
    public static final SocketOption<Integer> RDMA_RECEIVE_QUEUE_SIZE = new RdmaOption<>("RDMA_RECEIVE_QUEUE_SIZE",
        Integer.class);

    /**
     * SRQ mode: the connection (on a server channel: every connection it accepts) takes its receives from one
     * shared receive queue of its device instead of a receive queue of its own, so an idle connection holds only
     * {@code rdmachannel.stream.sharedReceiveCredits} receives (default 8, plus a few for control messages) instead
     * of {@link #RDMA_RECEIVE_QUEUE_SIZE}; while busy it borrows up to that many from what the queue has left. A
     * connection the queue cannot back ({@code rdmachannel.stream.sharedReceiveQueueSize} receives per device,
     * default 131072) is refused. On the wire it is plain rsockets (with a credit window declared in the connection
     * data: see the README), so any peer works. Default {@code rdmachannel.stream.sharedReceiveQueue} (false); on a
     * device without shared receive queues the connection has its own receive queue.
     */
    public static final SocketOption<Boolean> RDMA_SHARED_RECEIVE_QUEUE = new RdmaOption<>(
        "RDMA_SHARED_RECEIVE_QUEUE", Boolean.class);

    /**
     * XRC mode (docs/xrc-stream-mode.md): the connection (on a server channel: every connection it accepts whose
     * peer asks for it) runs over an XRC initiator and target queue pair and an XRC shared receive queue of its own
     * instead of an RC queue pair, negotiated in the connection data. For now each connection has its own initiator
     * and target (no queue pairs are shared between connections yet) and both ends must ask for it: a connection
     * in XRC mode to a listener that is not fails; where the device has no XRC, the connection manager cannot let
     * the connection make its own queue pairs (rdma_cm) or the device is in message mode, the connection is plain
     * RC. Not with {@link #RDMA_SHARED_RECEIVE_QUEUE}, which takes precedence. Default
     * {@code rdmachannel.stream.xrc} (false).
     */
    public static final SocketOption<Boolean> RDMA_XRC = new RdmaOption<>("RDMA_XRC", Boolean.class);

    /**
     * The inline threshold in bytes, in [0, 1024]: writes up to this size are copied into the work request instead
     * of being read by the adapter. Default 64.
     */
    public static final SocketOption<Integer> RDMA_INLINE_SIZE = new RdmaOption<>("RDMA_INLINE_SIZE", Integer.class);

    /**
     * Busy polling, in <em>microseconds</em> (like Linux's {@code SO_BUSY_POLL}), at least 0; default
     * {@code rdmachannel.stream.pollingTimeMicros} (50, as Linux's recommended {@code busy_read}). When
     * positive, a blocking read or write that finds nothing to do first polls the connection's completions on the
     * calling thread for up to this long before it parks; this trades CPU for latency. Unlike the other options it
     * takes effect at once, also on a connected channel.
     */
    public static final SocketOption<Integer> RDMA_BUSY_POLL = new RdmaOption<>("RDMA_BUSY_POLL", Integer.class);

    /**
     * Which path a connection may take: RDMA only, RDMA with a fallback to TCP when the peer cannot speak RDMA, or
     * TCP only ({@link RdmaPathPolicy}). Set before {@code connect} on a socket channel, or before {@code bind} on a
     * server channel (where {@link RdmaPathPolicy#RDMA_PREFERRED} listens for RDMA and TCP peers on one port); it
     * overrides the drop-in's destination rules. {@code getOption} returns the value set, else the policy the last
     * connect or bind used, else {@code null} for a drop-in channel (the rules decide at connect) and
     * {@link RdmaPathPolicy#RDMA_ONLY} for a channel opened explicitly.
     */
    public static final SocketOption<RdmaPathPolicy> RDMA_PATH_POLICY = new RdmaOption<>("RDMA_PATH_POLICY",
        RdmaPathPolicy.class);

    /**
     * Read-only: the path the connection took ({@link RdmaPath}: RDMA on which provider, or TCP and why), or for a
     * bound server channel what it listens on; {@code null} before a connection exists or the channel is bound.
     * {@code setOption} throws {@link java.net.SocketException}.
     */
    public static final SocketOption<RdmaPath> RDMA_PATH = new RdmaOption<>("RDMA_PATH", RdmaPath.class);

    /**
     * A server channel's host policy ({@link RdmaConnectionFilter}): decides on each RDMA connection request before
     * anything is committed to it; a refused client's connect fails with {@code "Connection refused by policy: "}
     * and the filter's reason. Server channels only; {@code null} (the default) accepts every request. It may be set
     * before or after {@code bind}, and applies to the requests that arrive after it is set. Peers that reach an
     * {@link RdmaPathPolicy#RDMA_PREFERRED} listener over TCP do not pass it.
     */
    public static final SocketOption<RdmaConnectionFilter> RDMA_CONNECTION_FILTER = new RdmaOption<>(
        "RDMA_CONNECTION_FILTER", RdmaConnectionFilter.class);

    /**
     * The connection manager of this channel's RDMA connection, by name: one its provider offers ({@code shm},
     * {@code rdma_cm}) or {@code oob}, which every provider has (a TCP side channel on the RDMA port plus
     * {@code rdmachannel.oob.portOffset}). Set before {@code connect} on a socket channel, or before {@code bind} on
     * a server channel (whose accepted connections come through the same manager); the client and the server must
     * use the same one. {@code null} (the default) is the JVM's, {@code rdmachannel.cm}. An unknown name fails the
     * connect or bind with an {@link java.io.IOException} that lists the names the provider offers; an empty name
     * is refused with {@link IllegalArgumentException}.
     */
    public static final SocketOption<String> RDMA_CONNECTION_MANAGER = new RdmaOption<>("RDMA_CONNECTION_MANAGER",
        String.class);

    private RdmaSocketOptions() {
    }

    private record RdmaOption<T>(String name, Class<T> type) implements SocketOption<T> {
        @Override
        public String toString() {
            return name;
        }
    }
}
