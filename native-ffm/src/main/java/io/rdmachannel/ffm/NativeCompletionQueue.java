package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvResourceLayouts.CQ_CQE;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.CQ_SIZE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_SIZE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.ffm.internal.Errno;
import io.rdmachannel.ffm.verbs.CompletionQueueOps;
import io.rdmachannel.ffm.verbs.IbvCalls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.locks.ReentrantLock;

/**
 * An {@code ibv_cq}, on its readiness source's completion channel when it has one. {@link #poll} calls
 * {@code poll_cq} through the ops table into a pre-allocated array of {@value #BATCH} {@code ibv_wc} and hands each
 * entry to the handler through one {@link NativeWorkCompletion} flyweight: nothing is allocated per poll.
 */
final class NativeCompletionQueue implements CompletionQueue {
    static final int BATCH = 16;

    private final NativeDevice device;
    private final MemorySegment cq;
    private final long address;
    private final NativeReadinessSource source;
    private final int slot;
    private final long token;
    private final int capacity;
    private final CompletionQueueOps ops;
    private final Arena arena = Arena.ofShared();
    private final MemorySegment completions;
    private final NativeWorkCompletion completion;
    private final ReentrantLock pollLock = new ReentrantLock();
    private int attached;
    private volatile boolean closed;

    private NativeCompletionQueue(NativeDevice device, MemorySegment cq, NativeReadinessSource source, int slot,
        long token) {
        this.device = device;
        this.cq = cq.reinterpret(CQ_SIZE);
        this.address = cq.address();
        this.source = source;
        this.slot = slot;
        this.token = token;
        this.capacity = this.cq.get(JAVA_INT, CQ_CQE);
        this.ops = CompletionQueueOps.of(this.cq, device.critical());
        MemorySegment array = arena.allocate(WC_SIZE * BATCH, 8);
        // the call gets a global-scope view: no arena acquire per poll; poll checks `closed` under the lock
        this.completions = MemorySegment.ofAddress(array.address()).reinterpret(array.byteSize());
        this.completion = new NativeWorkCompletion(array);
    }

    static NativeCompletionQueue create(NativeDevice device, int entries, NativeReadinessSource source, long token)
        throws IOException {
        int slot = source == null ? -1 : source.reserveSlot();
        MemorySegment cq;
        try {
            cq = IbvCalls.createCq(device.context(), entries, MemorySegment.ofAddress(slot + 1L),
                source == null ? MemorySegment.NULL : source.channel(), 0);
        } catch (IOException | RuntimeException | Error e) {
            if (source != null) {
                source.release(slot);
            }
            throw e;
        }
        NativeCompletionQueue queue;
        try {
            queue = new NativeCompletionQueue(device, cq, source, slot, token);
        } catch (RuntimeException | Error e) {
            try {
                IbvCalls.destroyCq(cq);
            } catch (NativeCallException suppressed) {
                e.addSuppressed(suppressed);
            }
            if (source != null) {
                source.release(slot);
            }
            throw e;
        }
        if (source != null) {
            source.attach(slot, queue);
        }
        return queue;
    }

    long address() {
        return address;
    }

    MemorySegment cq() {
        return cq;
    }

    NativeDevice device() {
        return device;
    }

    @Override
    public int poll(CompletionHandler handler, int limit) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: limit=" + limit);
        }
        pollLock.lock();
        try {
            ensureOpen();
            int count = 0;
            while (count < limit) {
                int wanted = Math.min(BATCH, limit - count);
                int polled = ops.pollCq(cq, wanted, completions);
                if (polled < 0) {
                    throw new IllegalStateException("completion queue 0x" + Long.toHexString(address)
                        + ": ibv_poll_cq(..) failed with error(" + polled + ")"
                        + " (an overrun or a device error)");
                }
                for (int i = 0; i < polled; i++) {
                    completion.wrap(i);
                    handler.onCompletion(completion);
                }
                count += polled;
                if (polled < wanted) {
                    break;
                }
            }
            return count;
        } finally {
            pollLock.unlock();
        }
    }

    @Override
    public void requestNotification() {
        arm(0);
    }

    @Override
    public void requestSolicitedNotification() {
        arm(1);
    }

    private void arm(int solicitedOnly) {
        ensureOpen();
        if (source == null) {
            throw new IllegalStateException("completion queue 0x" + Long.toHexString(address)
                + " has no readiness source to notify");
        }
        int result = ops.reqNotifyCq(cq, solicitedOnly);
        if (result != 0) {
            int errno = Math.abs(result);
            throw new IllegalStateException(Errno.exception("ibv_req_notify_cq", errno).getMessage());
        }
    }

    @Override
    public int capacity() {
        return capacity;
    }

    @Override
    public ReadinessSource readinessSource() {
        return source;
    }

    @Override
    public long token() {
        return token;
    }

    synchronized void attach() {
        ensureOpen();
        attached++;
    }

    synchronized void detach() {
        attached--;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("completion queue 0x" + Long.toHexString(address) + " is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (attached != 0) {
                throw new IllegalStateException("completion queue 0x" + Long.toHexString(address)
                    + " is still used by " + attached + " queue pairs: close them first");
            }
            closed = true;
        }
        pollLock.lock();
        try {
            if (source != null) {
                // no new events are matched to this queue; ones read meanwhile are acknowledged at once
                source.release(slot);
            }
            IbvCalls.destroyCq(cq);
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot destroy completion queue: " + e.getMessage(), e);
        } finally {
            pollLock.unlock();
            arena.close();
            device.childClosed();
        }
    }

    @Override
    public String toString() {
        return "NativeCompletionQueue{cq=0x" + Long.toHexString(address) + ", capacity=" + capacity
            + ", token=" + token + ", attached=" + attached + ", closed=" + closed + '}';
    }
}
