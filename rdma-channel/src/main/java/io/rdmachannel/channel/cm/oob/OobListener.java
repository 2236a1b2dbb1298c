package io.rdmachannel.channel.cm.oob;

import io.rdmachannel.channel.cm.CmEndpointFactory;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionRequestFilter;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An {@code oob} listener: a TCP server socket on the side channel's port, whose virtual thread accepts and starts
 * one passive handshake per request. Closing it stops the accepting and fails the handshakes in progress.
 */
final class OobListener implements CmListener {
    private static final Logger LOG = LoggerFactory.getLogger(OobListener.class);
    private static final long CLOSE_WAIT_MILLIS = 5_000;

    private final OobConnectionManager manager;
    private final ServerSocketChannel server;
    private final SocketAddress localAddress;
    private final boolean gidAddressing;
    private final int backlog;
    private final ConnectionRequestFilter filter;
    private final CmEndpointFactory factory;
    private final Set<OobHandshake> inProgress = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;
    private volatile Thread acceptor;

    OobListener(final OobConnectionManager manager, final ServerSocketChannel server, final int backlog,
        final ConnectionRequestFilter filter, final CmEndpointFactory factory, final boolean gidAddressing)
        throws IOException {
        this.manager = manager;
        this.server = server;
        this.gidAddressing = gidAddressing;
        this.localAddress = manager.rdmaAddress((InetSocketAddress) server.getLocalAddress(), gidAddressing);
        this.backlog = backlog;
        this.filter = filter;
        this.factory = factory;
    }

    void start() {
        acceptor = Thread.ofVirtual().name("rdmachannel-oob-accept-" + localAddress).start(this::acceptLoop);
    }

    private void acceptLoop() {
        while (!closed) {
            final SocketChannel socket;
            try {
                socket = server.accept();
            } catch (final ClosedChannelException ex) {
                return;
            } catch (final IOException ex) {
                if (!closed) {
                    LOG.warn("oob listener {}: accept failed; it stops listening", localAddress, ex);
                    close();
                }
                return;
            }
            OobHandshake.acceptor(manager, this, socket).start();
        }
    }

    OobConnectionManager manager() {
        return manager;
    }

    ConnectionRequestFilter filter() {
        return filter;
    }

    CmEndpointFactory factory() {
        return factory;
    }

    /** Whether the listener was bound by GID: its connections report GID addresses. */
    boolean gidAddressing() {
        return gidAddressing;
    }

    boolean isClosed() {
        return closed;
    }

    /** Count a passive handshake in; false when the backlog is full (it is not counted then). */
    boolean admit(final OobHandshake handshake) {
        synchronized (inProgress) {
            if (inProgress.size() >= backlog) {
                return false;
            }
            inProgress.add(handshake);
            return true;
        }
    }

    void release(final OobHandshake handshake) {
        synchronized (inProgress) {
            inProgress.remove(handshake);
        }
    }

    @Override
    public SocketAddress localAddress() {
        return localAddress;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            server.close();
        } catch (final IOException ex) {
            LOG.debug("closing oob listener {}", localAddress, ex);
        }
        final List<OobHandshake> pending;
        synchronized (inProgress) {
            pending = List.copyOf(inProgress);
        }
        for (final OobHandshake handshake : pending) {
            handshake.cancel("the listener closed");
        }
        awaitAcceptor();
        manager.forget(this);
    }

    /**
     * Wait (bounded) for the accepting thread to leave {@code accept}: a channel closed while a virtual thread is
     * blocked in it releases its socket, and so its port, only when that thread wakes up, and a closed listener's
     * port must be free again as a TCP listener's is.
     */
    private void awaitAcceptor() {
        final Thread thread = acceptor;
        if (thread == null || thread == Thread.currentThread()) {
            return;
        }
        try {
            if (!thread.join(Duration.ofMillis(CLOSE_WAIT_MILLIS))) {
                LOG.warn("oob listener {}: the accepting thread did not stop within {} ms", localAddress,
                    CLOSE_WAIT_MILLIS);
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public String toString() {
        return "OobListener{local=" + localAddress + ", inProgress=" + inProgress.size() + ", closed=" + closed + '}';
    }
}
