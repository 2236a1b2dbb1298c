package io.rdmachannel.nio;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicBoolean;

import io.rdmachannel.channel.stream.ReadinessObserver;
import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamConnector;
import io.rdmachannel.channel.stream.StreamReadiness;

/**
 * A connection attempt of the fake transport, finished by its engine thread.
 */
final class FakeConnector implements StreamConnector {
    private final FakeTransport transport;
    private final ReadinessObserver observer;
    private final AtomicBoolean armed = new AtomicBoolean();
    private FakeConnection connection;
    private IOException failure;
    private boolean over;
    private boolean closed;

    FakeConnector(final FakeTransport transport, final ReadinessObserver observer) {
        this.transport = transport;
        this.observer = observer;
    }

    void succeed(final FakeConnection established) {
        synchronized (this) {
            if (closed) {
                established.close();
                return;
            }
            established.observer(observer);
            connection = established;
        }
        changed();
    }

    void fail(final IOException cause) {
        synchronized (this) {
            failure = cause;
        }
        changed();
    }

    @Override
    public synchronized StreamConnection finish() throws IOException {
        if (over) {
            throw new IllegalStateException("the attempt is over");
        }
        if (failure != null) {
            over = true;
            throw failure;
        }
        if (connection != null) {
            over = true;
        }
        return connection;
    }

    @Override
    public synchronized int readyOps() {
        return failure != null || connection != null ? StreamReadiness.CONNECT : 0;
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
    public synchronized void close() {
        if (!closed) {
            closed = true;
            if (connection != null && !over) {
                connection.close();
            }
        }
    }
}
