package io.rdmachannel.nio;

import java.io.IOException;
import java.net.SocketAddress;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.stream.ReadinessObserver;
import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamReadiness;

/**
 * One side of an in-memory connection. Both sides share one monitor; nothing here ever waits.
 */
final class FakeConnection implements StreamConnection {
    private final FakeTransport transport;
    private final SocketAddress local;
    private final SocketAddress remote;
    private final AtomicBoolean armed = new AtomicBoolean();
    final AtomicInteger spins = new AtomicInteger();
    /** Calls of {@link #readyOps()}: a spinning reader or selection makes them without end. */
    final AtomicInteger readyChecks = new AtomicInteger();
    private Object lock = this;
    private FakeConnection peer;
    private volatile ReadinessObserver observer;
    /** Bytes for this side to read. */
    private final byte[] inbound;
    private int head;
    private int count;
    /** Guarded by lock. */
    private boolean peerOutputShut;
    private boolean inputShut;
    private boolean outputShut;
    private boolean reset;
    private volatile boolean closed;
    private volatile boolean aborted;
    /** The last {@link #keepAlive(boolean)} after connect. */
    volatile Boolean keepAlive;

    FakeConnection(final FakeTransport transport, final SocketAddress local, final SocketAddress remote,
        final int capacity) {
        this.transport = transport;
        this.local = local;
        this.remote = remote;
        this.inbound = new byte[capacity];
    }

    static void pair(final FakeConnection a, final FakeConnection b) {
        final Object shared = new Object();
        a.lock = shared;
        b.lock = shared;
        a.peer = b;
        b.peer = a;
    }

    void observer(final ReadinessObserver observer) {
        this.observer = observer;
    }

    @Override
    public int read(final ByteBuffer dst) throws IOException {
        // no array wrapper: the allocation tests measure the channel and selector, not this fake
        return (int) read(dst, null, 0, 0);
    }

    @Override
    public long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException {
        return read(null, dsts, offset, length);
    }

    private long read(final ByteBuffer single, final ByteBuffer[] dsts, final int offset, final int length)
        throws IOException {
        synchronized (lock) {
            if (reset) {
                throw new SocketException("Connection reset");
            }
            if (inputShut || closed) {
                return -1;
            }
            if (count == 0) {
                return peerOutputShut ? -1 : 0;
            }
            long total = single == null ? 0 : take(single);
            for (int i = offset; i < offset + length && count > 0; i++) {
                total += take(dsts[i]);
            }
            if (total > 0) {
                peer.changed();
            }
            return total;
        }
    }

    private int take(final ByteBuffer dst) {
        int total = 0;
        while (dst.hasRemaining() && count > 0) {
            final int n = Math.min(Math.min(dst.remaining(), count), inbound.length - head);
            dst.put(inbound, head, n);
            head = (head + n) % inbound.length;
            count -= n;
            total += n;
        }
        return total;
    }

    @Override
    public int write(final ByteBuffer src) throws IOException {
        return (int) write(new ByteBuffer[] {src}, 0, 1);
    }

    @Override
    public long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException {
        synchronized (lock) {
            if (outputShut) {
                throw new ClosedChannelException();
            }
            if (reset) {
                throw new SocketException("Connection reset");
            }
            if (peer.inputShut || peer.closed) {
                throw new IOException("Broken pipe");
            }
            final FakeConnection to = peer;
            long total = 0;
            for (int i = offset; i < offset + length; i++) {
                final ByteBuffer src = srcs[i];
                while (src.hasRemaining() && to.count < to.inbound.length) {
                    final int tail = (to.head + to.count) % to.inbound.length;
                    final int space = Math.min(to.inbound.length - to.count, to.inbound.length - tail);
                    final int n = Math.min(src.remaining(), space);
                    src.get(to.inbound, tail, n);
                    to.count += n;
                    total += n;
                }
            }
            if (total > 0) {
                to.changed();
            }
            return total;
        }
    }

    @Override
    public int readyOps() {
        readyChecks.incrementAndGet();
        synchronized (lock) {
            int ops = 0;
            if (reset || inputShut || closed || count > 0 || peerOutputShut) {
                ops |= StreamReadiness.READ;
            }
            if (reset || outputShut || peer.inputShut || peer.closed || peer.count < peer.inbound.length) {
                ops |= StreamReadiness.WRITE;
            }
            return ops;
        }
    }

    @Override
    public void arm() {
        transport.arms.incrementAndGet();
        armed.set(true);
    }

    /**
     * Something changed on this side: tell an armed observer, from the engine thread.
     */
    void changed() {
        if (armed.compareAndSet(true, false)) {
            final ReadinessObserver target = observer;
            if (target != null) {
                transport.execute(target::onReadiness);
            }
        }
    }

    /**
     * Wait until something polled this connection's readiness {@code count} more times: a busy poll is under way
     * and kept going that long.
     */
    void awaitReadyChecks(final int count) {
        final int target = readyChecks.get() + count;
        while (readyChecks.get() - target < 0) {
            Thread.onSpinWait();
        }
    }

    @Override
    public int spin(final long nanos, final int interest) {
        spins.incrementAndGet();
        final long deadline = System.nanoTime() + nanos;
        int ops = readyOps();
        while ((ops & interest) == 0 && System.nanoTime() - deadline < 0) {
            Thread.onSpinWait();
            ops = readyOps();
        }
        return ops;
    }

    @Override
    public void shutdownOutput() {
        synchronized (lock) {
            if (!outputShut) {
                outputShut = true;
                peer.peerOutputShut = true;
                peer.changed();
                changed();
            }
        }
    }

    @Override
    public void shutdownInput() {
        synchronized (lock) {
            if (!inputShut) {
                inputShut = true;
                count = 0;
                peer.changed();
                changed();
            }
        }
    }

    @Override
    public boolean isOutputShutdown() {
        synchronized (lock) {
            return outputShut;
        }
    }

    @Override
    public boolean isInputShutdown() {
        synchronized (lock) {
            return inputShut;
        }
    }

    @Override
    public SocketAddress localAddress() {
        return local;
    }

    @Override
    public SocketAddress remoteAddress() {
        return remote;
    }

    @Override
    public String describe() {
        synchronized (lock) {
            return "FakeConnection{inbound=" + count + ", inputShut=" + inputShut + ", outputShut=" + outputShut
                + ", peerOutputShut=" + peerOutputShut + ", reset=" + reset + ", closed=" + closed + '}';
        }
    }

    @Override
    public void keepAlive(final boolean enabled) {
        keepAlive = enabled;
    }

    @Override
    public ConnectionStatistics statistics() {
        return new ConnectionStatistics(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    }

    @Override
    public void close() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            count = 0;
            peer.peerOutputShut = true;
            peer.changed();
        }
    }

    @Override
    public void abort() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            aborted = true;
            count = 0;
            peer.reset = true;
            peer.changed();
        }
    }

    boolean isReleased() {
        return closed;
    }

    boolean isAborted() {
        return aborted;
    }

    boolean isClosedByPeerOutput() {
        synchronized (lock) {
            return peer.peerOutputShut;
        }
    }
}
