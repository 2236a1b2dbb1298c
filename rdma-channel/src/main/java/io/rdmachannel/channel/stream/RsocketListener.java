package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;

import java.net.SocketAddress;
import java.util.ArrayDeque;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A listening stream endpoint. The connection manager establishes connections as requests arrive; they wait here
 * until accepted. Requests beyond the backlog are rejected before any resource is allocated.
 */
final class RsocketListener implements StreamListener {
    private static final Logger LOG = LoggerFactory.getLogger(RsocketListener.class);

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
     * The connection manager's filter: refuse when closed or when the backlog is full, then when the JVM's allow
     * and deny lists say so ({@link HostPolicy}), then ask the listener's own filter
     * ({@link StreamOptions#requestFilter()}); a filter that throws refuses.
     */
    Rejection check(final ConnectionRequest request) {
        Rejection rejection;
        synchronized (this) {
            rejection = closed ? Rejection.of(RejectReason.CLOSING)
                : established.size() + inProgress >= backlog ? Rejection.of(RejectReason.BACKLOG_FULL) : null;
        }
        if (rejection == null) {
            rejection = transport.hostPolicy().check(request);
        }
        if (rejection == null) {
            try {
                rejection = options.requestFilter().check(request);
            } catch (final RuntimeException ex) {
                LOG.warn("listener {}: the connection request filter failed on a request from {}",
                    request.localAddress(), request.remoteAddress(), ex);
                rejection = new Rejection(RejectReason.POLICY, "the listener's filter failed");
            }
        }
        if (rejection != null) {
            transport.onRejected();
            StreamEvents.rejected(request.localAddress(), request.remoteAddress(), rejection.detail().isEmpty()
                ? rejection.reason().name() : rejection.reason().name() + ": " + rejection.detail());
        }
        return rejection;
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
