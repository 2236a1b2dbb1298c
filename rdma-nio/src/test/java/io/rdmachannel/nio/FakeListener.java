package io.rdmachannel.nio;

import java.io.IOException;
import java.net.SocketAddress;
import java.net.SocketException;
import java.util.ArrayDeque;
import java.util.concurrent.atomic.AtomicBoolean;

import io.rdmachannel.channel.stream.ReadinessObserver;
import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamListener;
import io.rdmachannel.channel.stream.StreamReadiness;

/**
 * A listening endpoint of the fake transport.
 */
final class FakeListener implements StreamListener {
    private final FakeTransport transport;
    private final SocketAddress local;
    private final int backlog;
    private final ReadinessObserver observer;
    private final AtomicBoolean armed = new AtomicBoolean();
    private final ArrayDeque<FakeConnection> waiting = new ArrayDeque<>();
    private boolean closed;

    FakeListener(final FakeTransport transport, final SocketAddress local, final int backlog,
        final ReadinessObserver observer) {
        this.transport = transport;
        this.local = local;
        this.backlog = backlog;
        this.observer = observer;
    }

    synchronized boolean offer(final FakeConnection connection) {
        if (closed || waiting.size() >= backlog) {
            return false;
        }
        waiting.add(connection);
        changed();
        return true;
    }

    @Override
    public synchronized StreamConnection accept(final ReadinessObserver connectionObserver) throws IOException {
        if (closed) {
            throw new SocketException("listener closed");
        }
        final FakeConnection connection = waiting.poll();
        if (connection != null) {
            connection.observer(connectionObserver);
        }
        return connection;
    }

    @Override
    public synchronized int readyOps() {
        return waiting.isEmpty() ? 0 : StreamReadiness.ACCEPT;
    }

    @Override
    public void arm() {
        transport.arms.incrementAndGet();
        armed.set(true);
    }

    private void changed() {
        if (armed.compareAndSet(true, false)) {
            transport.execute(observer::onReadiness);
        }
    }

    @Override
    public SocketAddress localAddress() {
        return local;
    }

    synchronized boolean isClosed() {
        return closed;
    }

    @Override
    public synchronized void close() {
        if (!closed) {
            closed = true;
            transport.unlisten(this);
            for (final FakeConnection connection : waiting) {
                connection.close();
            }
            waiting.clear();
        }
    }
}
