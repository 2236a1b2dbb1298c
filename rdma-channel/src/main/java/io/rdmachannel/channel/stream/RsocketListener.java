package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.RejectReason;

import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.ArrayDeque;

/**
 * A listening stream endpoint. The connection manager establishes connections as requests arrive; they wait here
 * until accepted. Requests beyond the backlog are rejected before any resource is allocated.
 */
final class RsocketListener implements StreamListener {
    private final RsocketTransport transport;
    private final StreamOptions options;
    private final int backlog;
    private final ReadinessObserver observer;
    private final ArrayDeque<RsocketConnection> established = new ArrayDeque<>();
    private CmListener cmListener;
    private int inProgress;
    private volatile boolean armed;
    private boolean closed;

    RsocketListener(final RsocketTransport transport, final StreamOptions options, final int backlog,
        final ReadinessObserver observer) {
        this.transport = transport;
        this.options = options;
        this.backlog = backlog;
        this.observer = observer;
    }

    void bind(final CmListener listener) {
        this.cmListener = listener;
    }

    /**
     * The connection manager's filter: refuse when closed or when the backlog is full.
     */
    synchronized RejectReason check(final SocketAddress remote, final SocketAddress local,
        final ByteBuffer privateData) {
        final RejectReason reason = closed ? RejectReason.CLOSING
            : established.size() + inProgress >= backlog ? RejectReason.BACKLOG_FULL : null;
        if (reason != null) {
            transport.onRejected();
            StreamEvents.rejected(local, remote, reason.name());
        }
        return reason;
    }

    synchronized CmEndpoint newEndpoint(final SocketAddress remote) {
        inProgress++;
        final RsocketConnection connection = new RsocketConnection(transport, options.copy(), this);
        connection.peerAddress(remote);
        return connection;
    }

    void onEstablished(final RsocketConnection connection) {
        synchronized (this) {
            inProgress--;
            if (!closed) {
                established.add(connection);
            }
        }
        if (closed) {
            connection.close();
            return;
        }
        notifyObserver();
    }

    synchronized void onFailed(final RsocketConnection connection) {
        inProgress--;
    }

    /**
     * Connections being established: created for a request and not yet established or failed.
     */
    synchronized int inProgress() {
        return inProgress;
    }

    @Override
    public synchronized StreamConnection accept(final ReadinessObserver connectionObserver) {
        final RsocketConnection connection = established.poll();
        if (connection != null) {
            connection.observer(connectionObserver);
        }
        return connection;
    }

    @Override
    public synchronized int readyOps() {
        return established.isEmpty() && !closed ? 0 : StreamReadiness.ACCEPT;
    }

    @Override
    public void arm() {
        armed = true;
        if (readyOps() != 0) {
            notifyObserver();
        }
    }

    private void notifyObserver() {
        if (armed) {
            armed = false;
            if (observer != null) {
                observer.onReadiness();
            }
        }
    }

    @Override
    public SocketAddress localAddress() {
        return cmListener.localAddress();
    }

    @Override
    public void close() {
        final RsocketConnection[] waiting;
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
            waiting = established.toArray(RsocketConnection[]::new);
            established.clear();
        }
        cmListener.close();
        for (final RsocketConnection connection : waiting) {
            connection.close();
        }
        notifyObserver();
    }

    @Override
    public String toString() {
        return "RsocketListener{local=" + (cmListener == null ? null : cmListener.localAddress()) + ", waiting="
            + established.size() + ", inProgress=" + inProgress + ", closed=" + closed + '}';
    }
}
