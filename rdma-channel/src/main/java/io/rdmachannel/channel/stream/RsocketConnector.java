package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.CmConnection;

import java.io.IOException;
import java.net.SocketAddress;

/**
 * An active connection attempt: finished when the connection manager reports the connection established or failed.
 * An attempt in the XRC mode that the listener refuses (it does not take the mode) is made once more in RC, and the
 * transport remembers that listener so that the next connects to it ask for RC at once (docs/xrc-stream-mode.md,
 * "Negotiation"); the application sees one attempt.
 */
final class RsocketConnector implements StreamConnector {
    private final RsocketTransport transport;
    private final SocketAddress remote;
    private final SocketAddress local;
    private final StreamOptions options;
    private final ReadinessObserver observer;
    // -- guarded by this
    private RsocketConnection connection;
    private CmConnection attempt;
    /** The attempt in RC is being started (on the transport's timer thread). */
    private boolean retrying;
    /** Starting the attempt in RC failed: the failure to report. */
    private IOException retryFailure;
    private boolean handedOver;
    private boolean closed;

    /**
     * A connector for {@code connection}, not yet started ({@link #start}).
     */
    RsocketConnector(final RsocketTransport transport, final RsocketConnection connection,
        final SocketAddress remote, final SocketAddress local, final StreamOptions options,
        final ReadinessObserver observer) {
        this.transport = transport;
        this.connection = connection;
        this.remote = remote;
        this.local = local;
        this.options = options;
        this.observer = observer;
    }

    /**
     * Start the first attempt.
     */
    void start() throws IOException {
        started(transport.startAttempt(connection, remote, local, options));
    }

    /**
     * The first attempt was started (by {@link #start}, or by a test through a connection manager of its own).
     */
    void started(final CmConnection first) {
        final boolean abandon;
        synchronized (this) {
            if (attempt == null) {
                // else the first attempt failed at once and the one in RC already took its place
                attempt = first;
            }
            abandon = closed;
        }
        if (abandon) {
            first.close();
        }
    }

    @Override
    public synchronized StreamConnection finish() throws IOException {
        if (closed) {
            throw new IOException("the connection attempt was closed");
        }
        if (retryFailure != null) {
            closed = true;
            throw retryFailure;
        }
        if (retrying) {
            return null;
        }
        if (connection.isFailed()) {
            closed = true;
            throw connection.failure();
        }
        if (!connection.isEstablished()) {
            return null;
        }
        handedOver = true;
        return connection;
    }

    @Override
    public synchronized int readyOps() {
        if (retryFailure != null) {
            return StreamReadiness.CONNECT;
        }
        return !retrying && (connection.isEstablished() || connection.isFailed()) ? StreamReadiness.CONNECT : 0;
    }

    @Override
    public void arm() {
        final RsocketConnection current;
        synchronized (this) {
            if (retrying) {
                // the attempt in RC is armed as it starts
                return;
            }
            current = connection;
        }
        current.arm();
    }

    /**
     * The listener refused {@code failed}'s XRC request: remember it and start an attempt in RC on the transport's
     * timer thread (not on the connection manager's, which calls this). Called once per failed attempt.
     *
     * @return true if the attempt in RC is under way (the failed attempt reports nothing), false if the failure
     *     stands (the connector was closed, or the transport is).
     */
    boolean tryAgainInRc(final RsocketConnection failed, final IOException cause) {
        synchronized (this) {
            if (closed || handedOver || failed != connection) {
                return false;
            }
            transport.rememberXrcRefusal(remote, cause.getMessage());
            retrying = true;
        }
        if (!transport.runOnTimer(() -> connectInRc(cause), 0)) {
            synchronized (this) {
                retrying = false;
            }
            return false;
        }
        return true;
    }

    private void connectInRc(final IOException refusal) {
        synchronized (this) {
            if (closed) {
                retrying = false;
                return;
            }
        }
        final RsocketConnection next = transport.newConnection(remote, options.copy().xrc(false), observer);
        next.rcBecause("the listener refused it: " + refusal.getMessage());
        next.connector(this);
        CmConnection nextAttempt = null;
        IOException failure = null;
        try {
            nextAttempt = transport.startAttempt(next, remote, local, options);
        } catch (final IOException ex) {
            ex.addSuppressed(refusal);
            failure = ex;
        }
        final boolean abandon;
        synchronized (this) {
            retrying = false;
            abandon = closed;
            if (failure != null) {
                retryFailure = failure;
            } else {
                connection = next;
                attempt = nextAttempt;
            }
        }
        if (abandon && nextAttempt != null) {
            next.abandon();
            nextAttempt.close();
        } else if (failure == null) {
            // whoever waited armed the refused attempt, which will never report: the new one reports instead
            next.arm();
        } else if (observer != null) {
            observer.onReadiness();
        }
    }

    @Override
    public void close() {
        final RsocketConnection current;
        final CmConnection currentAttempt;
        synchronized (this) {
            if (closed || handedOver) {
                return;
            }
            closed = true;
            current = connection;
            currentAttempt = attempt;
        }
        // the connection manager may be establishing it right now: the connection closes itself once it is
        current.abandon();
        if (currentAttempt != null) {
            currentAttempt.close();
        }
    }
}
