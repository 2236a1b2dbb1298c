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

/**
 * The JDK Flight Recorder events of the stream engine's connection lifecycle: established, closed (with what the
 * connection did), failed to establish, and requests a listener refused. Recorded only when a recording enables
 * them ({@code jfr configure} or {@code -XX:StartFlightRecording} with {@code +io.rdmachannel.*}); none is emitted on
 * the data path.
 */
final class StreamEvents {
    private StreamEvents() {
    }

    static void established(final String provider, final SocketAddress local, final SocketAddress remote,
        final boolean passive) {
        final Established event = new Established();
        if (event.shouldCommit()) {
            event.provider = provider;
            event.local = text(local);
            event.remote = text(remote);
            event.passive = passive;
            event.commit();
        }
    }

    static boolean closedEnabled() {
        return Closed.ENABLED.isEnabled();
    }

    static void closed(final String provider, final SocketAddress local, final SocketAddress remote,
        final ConnectionStatistics statistics, final Throwable error) {
        final Closed event = new Closed();
        if (event.shouldCommit()) {
            event.provider = provider;
            event.local = text(local);
            event.remote = text(remote);
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
        final Failed event = new Failed();
        if (event.shouldCommit()) {
            event.provider = provider;
            event.remote = text(remote);
            event.passive = passive;
            event.cause = cause.toString();
            event.commit();
        }
    }

    static void rejected(final SocketAddress local, final SocketAddress remote, final String reason) {
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

    /** A connection is established. */
    @Name("io.rdmachannel.ConnectionEstablished")
    @Label("RDMA Connection Established")
    @Category({"rdmachannel", "Connection"})
    @StackTrace(false)
    static final class Established extends Event {
        @Label("Provider")
        String provider;
        @Label("Local Address")
        String local;
        @Label("Remote Address")
        String remote;
        @Label("Accepted")
        @Description("Whether a listener accepted it (else this side connected)")
        boolean passive;
    }

    /** A connection released its resources: closed by us, by the peer, or after a failure. */
    @Name("io.rdmachannel.ConnectionClosed")
    @Label("RDMA Connection Closed")
    @Category({"rdmachannel", "Connection"})
    @StackTrace(false)
    static final class Closed extends Event {
        /** Whether recordings enable this event, without allocating one. */
        static final Closed ENABLED = new Closed();

        @Label("Provider")
        String provider;
        @Label("Local Address")
        String local;
        @Label("Remote Address")
        String remote;
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
}
