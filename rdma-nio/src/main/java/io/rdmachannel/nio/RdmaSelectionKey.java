package io.rdmachannel.nio;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectionKey;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * A registration of an RDMA channel with an {@link RdmaSelector}. Interest changes never block: they set the field
 * and queue the key for the next selection.
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
    private final AtomicBoolean queued = new AtomicBoolean();
    private volatile int interestOps;
    private volatile int readyOps;
    /** The next key on the selector's stack of offered keys; written before the push, read by the selection. */
    RdmaSelectionKey nextQueued;
    /** The selection round that last checked this key. Selection thread only. */
    long checkedRound;

    RdmaSelectionKey(final SelectableChannel channel, final RdmaSelector selector) {
        this.channel = channel;
        this.selector = selector;
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

    RdmaSelectableChannel rdmaChannel() {
        return (RdmaSelectableChannel) channel;
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
