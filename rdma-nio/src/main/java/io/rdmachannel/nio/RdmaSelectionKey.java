package io.rdmachannel.nio;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectionKey;
import java.util.concurrent.atomic.AtomicBoolean;

import io.rdmachannel.channel.stream.StreamConnection;

/**
 * A registration with an {@link RdmaSelector}: of an RDMA channel, whose readiness comes from its endpoint and, when
 * it has one, its platform channel; or of a platform channel (a JDK datagram channel, pipe, Unix-domain or TCP
 * channel), whose readiness comes from the selector's platform selector. Interest changes never block: they set the
 * field and queue the key for the next selection.
 */
final class RdmaSelectionKey extends AbstractSelectionKey {
    private static final VarHandle INTEREST_OPS;

    static {
        try {
            INTEREST_OPS = MethodHandles.lookup().findVarHandle(RdmaSelectionKey.class, "interestOps", int.class);
        } catch (final ReflectiveOperationException ex) {
            throw new ExceptionInInitializerError(ex);
        }
    }

    private final SelectableChannel channel;
    private final RdmaSelector selector;
    /** The channel as an RDMA channel, or null for a platform channel. */
    private final RdmaSelectableChannel rdma;
    private final AtomicBoolean queued = new AtomicBoolean();
    private volatile int interestOps;
    private volatile int readyOps;
    /** The next key on the selector's stack of offered keys; written before the push, read by the selection. */
    RdmaSelectionKey nextQueued;
    /** The selection round that last checked this key. Selection thread only. */
    long checkedRound;
    /** The selection round that last found this key ready, and what it found. Selection thread only. */
    long readyRound;
    int roundReady;
    /** The selection round that carried this key, checked but not armed, over to the next. Selection thread only. */
    long carriedRound;
    /**
     * The connection a direct wait of the selection armed, and the words it put in the selector's wait set (from
     * inclusive, to exclusive). Selection thread only.
     */
    StreamConnection directStream;
    int directFrom;
    int directTo;
    /**
     * The registration of the platform channel with the selector's platform selector, attached to this key, or null.
     * Written by the selection thread holding the channel's blocking lock.
     */
    volatile SelectionKey platformKey;

    RdmaSelectionKey(final SelectableChannel channel, final RdmaSelector selector,
        final RdmaSelectableChannel rdma) {
        this.channel = channel;
        this.selector = selector;
        this.rdma = rdma;
    }

    @Override
    public SelectableChannel channel() {
        return channel;
    }

    @Override
    public Selector selector() {
        return selector;
    }

    @Override
    public int interestOps() {
        ensureValid();
        return interestOps;
    }

    @Override
    public SelectionKey interestOps(final int ops) {
        ensureValid();
        checkValidOps(ops);
        final int old = (int) INTEREST_OPS.getAndSet(this, ops);
        if (old != ops) {
            selector.interestChanged(this);
        }
        return this;
    }

    @Override
    public int interestOpsOr(final int ops) {
        ensureValid();
        checkValidOps(ops);
        final int old = (int) INTEREST_OPS.getAndBitwiseOr(this, ops);
        if (old != (old | ops)) {
            selector.interestChanged(this);
        }
        return old;
    }

    @Override
    public int interestOpsAnd(final int ops) {
        ensureValid();
        final int old = (int) INTEREST_OPS.getAndBitwiseAnd(this, ops);
        if (old != (old & ops)) {
            selector.interestChanged(this);
        }
        return old;
    }

    @Override
    public int readyOps() {
        ensureValid();
        return readyOps;
    }

    int rawInterestOps() {
        return interestOps;
    }

    int rawReadyOps() {
        return readyOps;
    }

    void readyOps(final int ops) {
        readyOps = ops;
    }

    /**
     * The channel as an RDMA channel.
     *
     * @return the channel, or null for a platform channel.
     */
    RdmaSelectableChannel rdmaChannel() {
        return rdma;
    }

    /**
     * The platform channel readiness comes from: the channel itself for a platform channel, else the RDMA channel's
     * current one (or null).
     */
    SelectableChannel platformChannel() {
        return rdma == null ? channel : rdma.platformChannel();
    }

    /**
     * Cancel the platform registration if this key is cancelled (the channel is about to block).
     */
    void releasePlatformIfCancelled() {
        final SelectionKey current = platformKey;
        if (current != null && !isValid()) {
            current.cancel();
        }
    }

    /**
     * Called by the channel's relay (from an engine thread): queue this key for a readiness check.
     */
    void maybeReady() {
        if (queued.compareAndSet(false, true)) {
            selector.offer(this);
        }
    }

    /**
     * Called by the selector when it takes the key from its queue, before it checks the key.
     */
    void dequeued() {
        queued.set(false);
    }

    private void checkValidOps(final int ops) {
        if ((ops & ~channel.validOps()) != 0) {
            throw new IllegalArgumentException("Invalid interest ops: 0x" + Integer.toHexString(ops));
        }
    }

    private void ensureValid() {
        if (!isValid()) {
            throw new CancelledKeyException();
        }
    }

    @Override
    public String toString() {
        return "RdmaSelectionKey[channel=" + channel + ", interestOps=" + interestOps + ", readyOps=" + readyOps
            + ", valid=" + isValid() + "]";
    }
}
