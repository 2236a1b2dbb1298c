package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.ConnectionStatistics;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;
import jdk.jfr.Timespan;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The JDK Flight Recorder events of the stream engine's connection lifecycle: established, closed (with what the
 * connection did), failed to establish, requests a listener refused, and writes stalled longer than a threshold.
 * Recorded only when a recording enables them ({@code jfr configure} or {@code -XX:StartFlightRecording} with
 * {@code +io.rdmachannel.*}). None is emitted for a message: a stall event only once a stall outlasted its threshold.
 * The lifecycle (not the stalls) also goes to the SLF4J logger {@code io.rdmachannel.channel.stream.StreamEvents} at
 * DEBUG.
 */
final class StreamEvents {
    private static final Logger LOG = LoggerFactory.getLogger(StreamEvents.class);

    private StreamEvents() {
    }

    static void established(final String provider, final SocketAddress local, final SocketAddress remote,
        final boolean passive) {
        if (LOG.isDebugEnabled()) {
            LOG.debug("{} connection established {} -> {} over {}", passive ? "accepted" : "connected", text(local),
                text(remote), provider);
        }
        final Established event = new Established();
        if (event.shouldCommit()) {
            event.connection(provider, local, remote);
            event.passive = passive;
            event.commit();
        }
    }

    static boolean closedEnabled() {
        return Closed.ENABLED.isEnabled() || LOG.isDebugEnabled();
    }

    static void closed(final String provider, final SocketAddress local, final SocketAddress remote,
        final ConnectionStatistics statistics, final Throwable error) {
        if (LOG.isDebugEnabled()) {
            LOG.debug("connection {} -> {} over {} closed: {} bytes sent, {} received{}", text(local), text(remote),
                provider, statistics.bytesSent(), statistics.bytesReceived(), error == null ? "" : ", " + error);
        }
        final Closed event = new Closed();
        if (event.shouldCommit()) {
            event.connection(provider, local, remote);
            event.bytesSent = statistics.bytesSent();
            event.bytesReceived = statistics.bytesReceived();
            event.creditStalls = statistics.creditStalls();
            event.completionErrors = statistics.completionErrors();
            event.error = error == null ? null : error.toString();
            event.commit();
        }
    }

    static void failed(final String provider, final SocketAddress remote, final boolean passive,
        final Throwable cause) {
        if (LOG.isDebugEnabled()) {
            LOG.debug("{} connection with {} over {} failed: {}", passive ? "accepted" : "outgoing", text(remote),
                provider, cause.toString());
        }
        final Failed event = new Failed();
        if (event.shouldCommit()) {
            event.provider = provider;
            event.remote = text(remote);
            event.passive = passive;
            event.cause = cause.toString();
            event.commit();
        }
    }

    static void stalled(final String provider, final SocketAddress local, final SocketAddress remote,
        final boolean forPeer, final long nanos) {
        final WriteStalled event = new WriteStalled();
        if (event.shouldCommit()) {
            event.connection(provider, local, remote);
            event.cause = forPeer ? "peer credits" : "send resources";
            event.stallTime = nanos;
            event.commit();
        }
    }

    static void rejected(final SocketAddress local, final SocketAddress remote, final String reason) {
        if (LOG.isDebugEnabled()) {
            LOG.debug("listener {} rejected {}: {}", text(local), text(remote), reason);
        }
        final Rejected event = new Rejected();
        if (event.shouldCommit()) {
            event.local = text(local);
            event.remote = text(remote);
            event.reason = reason;
            event.commit();
        }
    }

    /** An IP address as {@code 192.0.2.1:7471} or {@code [fe80::1]:7471}, without host names; others as they print. */
    static String text(final SocketAddress address) {
        if (address instanceof InetSocketAddress inet && inet.getAddress() != null) {
            final String host = inet.getAddress().getHostAddress();
            return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + inet.getPort();
        }
        return address == null ? null : address.toString();
    }

    /** The fields of every event about one connection. */
    @Category({"rdmachannel", "Connection"})
    @StackTrace(false)
    abstract static class ConnectionEvent extends Event {
        @Label("Provider")
        String provider;
        @Label("Local Address")
        String local;
        @Label("Remote Address")
        String remote;

        final void connection(final String provider, final SocketAddress local, final SocketAddress remote) {
            this.provider = provider;
            this.local = text(local);
            this.remote = text(remote);
        }
    }

    /** A connection is established. */
    @Name("io.rdmachannel.ConnectionEstablished")
    @Label("RDMA Connection Established")
    @Category({"rdmachannel", "Connection"})
    @StackTrace(false)
    static final class Established extends ConnectionEvent {
        @Label("Accepted")
        @Description("Whether a listener accepted it (else this side connected)")
        boolean passive;
    }

    /** A connection released its resources: closed by us, by the peer, or after a failure. */
    @Name("io.rdmachannel.ConnectionClosed")
    @Label("RDMA Connection Closed")
    @Category({"rdmachannel", "Connection"})
    @StackTrace(false)
    static final class Closed extends ConnectionEvent {
        /** Whether recordings enable this event, without allocating one. */
        static final Closed ENABLED = new Closed();

        @Label("Bytes Sent")
        @DataAmount
        long bytesSent;
        @Label("Bytes Received")
        @DataAmount
        long bytesReceived;
        @Label("Credit Stalls")
        long creditStalls;
        @Label("Completion Errors")
        long completionErrors;
        @Label("Error")
        @Description("What failed the connection, if anything did")
        String error;
    }

    /** A connection attempt failed before it was established (refused, rejected, timed out, invalid peer data). */
    @Name("io.rdmachannel.ConnectionFailed")
    @Label("RDMA Connection Failed")
    @Category({"rdmachannel", "Connection"})
    static final class Failed extends Event {
        @Label("Provider")
        String provider;
        @Label("Remote Address")
        String remote;
        @Label("Accepting")
        boolean passive;
        @Label("Cause")
        String cause;
    }

    /** A listener refused a connection request before allocating anything for it. */
    @Name("io.rdmachannel.ConnectionRejected")
    @Label("RDMA Connection Rejected")
    @Category({"rdmachannel", "Connection"})
    @StackTrace(false)
    static final class Rejected extends Event {
        @Label("Listener Address")
        String local;
        @Label("Remote Address")
        String remote;
        @Label("Reason")
        String reason;
    }

    /**
     * Writes on a connection stalled at least {@code rdmachannel.stream.stallEventMillis}: from a write that ended with
     * bytes left to the next write that sent something (the thread that wrote then, which may not be the one that
     * waited).
     */
    @Name("io.rdmachannel.WriteStalled")
    @Label("RDMA Write Stalled")
    @Category({"rdmachannel", "Connection"})
    @StackTrace(false)
    static final class WriteStalled extends ConnectionEvent {
        @Label("Cause")
        @Description("What the writes waited for: the peer's credits (it does not read), or our own send resources")
        String cause;
        @Label("Stall Duration")
        @Timespan(Timespan.NANOSECONDS)
        long stallTime;
    }
}
