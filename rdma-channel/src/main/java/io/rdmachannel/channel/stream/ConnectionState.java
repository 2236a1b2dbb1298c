package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairState;

import java.io.IOException;
import java.net.SocketException;
import java.nio.channels.ClosedChannelException;

/**
 * What the send and receive sides of one connection ({@link SendPath}, {@link ReceivePath}) both read: its phase, the
 * shutdown and failure flags, and the receiver's hand-off of what the peer announced in its SGL messages. Each field
 * has one writer, named with it; every field is volatile, so a side reads the other's writes without the other's lock.
 */
final class ConnectionState {
    static final int PHASE_PENDING = 0;
    static final int PHASE_ESTABLISHED = 1;
    static final int PHASE_FAILED = 2;
    static final int PHASE_CLOSED = 3;

    /** One of the {@code PHASE_*} values; moves forward only. Written by the facade (closed under both locks). */
    volatile int phase = PHASE_PENDING;
    /** Established and not closed. Written under both locks. */
    volatile boolean connected;
    /** Closing: no receive is reposted, no credit granted. Written by the facade. */
    volatile boolean closing;
    /** This side's output was shut down. Written under the send lock. */
    volatile boolean outputShutdown;
    /** This side's input was shut down. Written under the receive lock. */
    volatile boolean inputShutdown;
    /** The peer's SHUTDOWN arrived. Written under the receive lock. */
    volatile boolean peerShutdown;
    /** The peer's DISCONNECT arrived. Written under the receive lock. */
    volatile boolean peerDisconnected;
    /**
     * Passive side: nothing may be posted before the active side's first message arrived (message mode), or before
     * that or the requester's RTU (established at the reply). Set when established, cleared under the receive lock.
     */
    volatile boolean awaitingFirstMessage;
    /** The last credit limit the peer announced, a u16. Written under the receive lock, before the count below. */
    volatile int announcedLimit;
    /** SGL messages received so far; the sender adopts limit and regions when it sees the count move. */
    volatile int announcements;
    /**
     * One side changed what the other side's readiness depends on (announcements, the first message, the peer's
     * DISCONNECT, a failure) where a waiter may not have seen it: the facade tells the observer.
     */
    volatile boolean readinessChanged;
    private volatile IOException error;
    private volatile String deferredFailure;

    /**
     * The sticky failure: "Connection reset" with what happened as cause or suppressed exception.
     *
     * @return the failure, or null.
     */
    IOException error() {
        return error;
    }

    /**
     * Whether a control message may go out now (what holds SHUTDOWN and DISCONNECT back).
     */
    boolean mayPostControl() {
        return connected && error == null && !awaitingFirstMessage;
    }

    /**
     * Whether credits may be granted now.
     */
    boolean mayGrant() {
        return connected && !peerDisconnected && error == null && !closing && !awaitingFirstMessage;
    }

    void ensureEstablished() throws IOException {
        final int current = phase;
        if (current == PHASE_CLOSED) {
            throw new ClosedChannelException();
        }
        if (current != PHASE_ESTABLISHED) {
            throw new IOException("the connection is not established");
        }
    }

    /**
     * Publish an SGL message's credit limit; called by the receiver, the only writer, under its lock.
     */
    void announce(final int creditLimit) {
        announcedLimit = creditLimit;
        announcements++;
        readinessChanged = true;
    }

    /**
     * Fail with {@code cause} (the first failure wins) and move the queue pair to ERROR, so the peer's queue pair
     * fails too and nothing it sends later is accepted.
     */
    void fail(final IOException cause, final QueuePair queuePair) {
        final SocketException reset = new SocketException("Connection reset");
        reset.initCause(cause);
        setError(reset);
        if (queuePair != null && queuePair.state() != QueuePairState.ERROR) {
            try {
                queuePair.modify(QueuePairState.ERROR, null);
            } catch (final IOException | RuntimeException ignore) {
                // the queue pair is failing anyway
            }
        }
    }

    /**
     * Whether a failed work request would be news: connected, not ending (the peer's DISCONNECT, our close) and not
     * failed yet. The hundreds of receives a queue pair flushes as a connection ends are not; their callers build no
     * message for them.
     */
    boolean failureIsNews() {
        return connected && !peerDisconnected && !closing && error == null;
    }

    /**
     * A work request failed: a reset, unless the connection is ending anyway (the peer's DISCONNECT, our close).
     */
    void failIfConnected(final String what, final QueuePair queuePair) {
        if (failureIsNews()) {
            final SocketException reset = new SocketException("Connection reset");
            final String deviceError = queuePair.deviceError();
            reset.addSuppressed(new IOException(what + " on queue pair " + queuePair.number()
                + (deviceError == null ? "" : ", after the device reported " + deviceError)));
            setError(reset);
        }
    }

    /**
     * A send failed (flushed, retries exceeded as when the peer's queue pair is gone, ...): a reset, unless the
     * receive side still holds the peer's DISCONNECT, sent before it left, which makes it an orderly end. The receive
     * side decides once it drained what arrived ({@link #resolveDeferredFailure}), at its next poll.
     */
    void deferFailure(final String what) {
        if (failureIsNews() && deferredFailure == null) {
            deferredFailure = what;
            readinessChanged = true;
        }
    }

    boolean hasDeferredFailure() {
        return deferredFailure != null;
    }

    /**
     * The receive side drained its completions: a flushed send is a reset now unless they ended the connection.
     */
    void resolveDeferredFailure(final QueuePair queuePair) {
        final String what = deferredFailure;
        if (what != null) {
            deferredFailure = null;
            failIfConnected(what, queuePair);
        }
    }

    private synchronized void setError(final IOException failure) {
        if (error == null) {
            error = failure;
            readinessChanged = true;
        }
    }
}
