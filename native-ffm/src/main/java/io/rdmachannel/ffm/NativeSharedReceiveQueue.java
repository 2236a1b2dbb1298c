package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvResourceLayouts.IBV_SRQ_ATTR;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.IBV_SRQ_INIT_ATTR;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.SRQ_ATTR_SRQ_LIMIT;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.SRQ_INIT_ATTR_MAX_SGE;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.SRQ_INIT_ATTR_MAX_WR;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.SRQ_SIZE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.ffm.verbs.IbvCalls;
import io.rdmachannel.ffm.verbs.SharedReceiveQueueOps;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * An {@code ibv_srq} ({@code ibv_create_srq}); receives are posted with {@code post_srq_recv} through the ops table.
 */
final class NativeSharedReceiveQueue implements SharedReceiveQueue {
    private final NativeProtectionDomain domain;
    private final MemorySegment srq;
    private final int maxWorkRequests;
    private final int maxSge;
    private final SharedReceiveQueueOps ops;
    private final Arena arena = Arena.ofShared();
    private int users;
    private volatile boolean closed;
    private volatile LimitHandler limitHandler;

    private NativeSharedReceiveQueue(NativeProtectionDomain domain, MemorySegment srq, int maxWorkRequests,
        int maxSge) {
        this.domain = domain;
        this.srq = srq.reinterpret(SRQ_SIZE);
        this.maxWorkRequests = maxWorkRequests;
        this.maxSge = maxSge;
        this.ops = SharedReceiveQueueOps.of(this.srq, domain.nativeDevice().critical());
    }

    static NativeSharedReceiveQueue create(NativeProtectionDomain domain, int maxWorkRequests, int maxSge)
        throws IOException {
        try (Arena temporary = Arena.ofConfined()) {
            MemorySegment init = temporary.allocate(IBV_SRQ_INIT_ATTR.layout());
            init.set(JAVA_INT, SRQ_INIT_ATTR_MAX_WR, maxWorkRequests);
            init.set(JAVA_INT, SRQ_INIT_ATTR_MAX_SGE, maxSge);
            // ibv_create_srq writes the depth and entries it granted back into attr
            MemorySegment srq = IbvCalls.createSrq(domain.pd(), init);
            try {
                return new NativeSharedReceiveQueue(domain, srq, init.get(JAVA_INT, SRQ_INIT_ATTR_MAX_WR),
                    init.get(JAVA_INT, SRQ_INIT_ATTR_MAX_SGE));
            } catch (RuntimeException | Error e) {
                try {
                    IbvCalls.destroySrq(srq);
                } catch (NativeCallException suppressed) {
                    e.addSuppressed(suppressed);
                }
                throw e;
            }
        }
    }

    NativeProtectionDomain domain() {
        return domain;
    }

    MemorySegment srq() {
        return srq;
    }

    @Override
    public ReceiveWorkRequest createReceiveWorkRequest() {
        ensureOpen();
        return new NativeReceiveWorkRequest(this, maxSge, arena);
    }

    @Override
    public void postReceive(ReceiveWorkRequest request) {
        if (!(request instanceof NativeReceiveWorkRequest receive) || receive.owner() != this) {
            throw new IllegalArgumentException("the receive request was not created by this shared receive queue");
        }
        receive.checkEntries(maxSge);
        ensureOpen();
        int result = ops.postSrqRecv(srq, receive.wrPointer(), receive.badWrPointer());
        if (result != 0) {
            throw NativeQueuePair.postFailure("ibv_post_srq_recv", Math.abs(result), "shared receive queue 0x"
                + Long.toHexString(srq.address()) + " is full: " + maxWorkRequests + " receives are outstanding");
        }
    }

    @Override
    public void armLimit(int limit, LimitHandler handler) {
        if (limit < 0 || limit > maxWorkRequests) {
            throw new IllegalArgumentException("limit=" + limit + " is outside [0, " + maxWorkRequests + "]");
        }
        if (limit > 0 && handler == null) {
            throw new IllegalArgumentException("arming a limit needs a handler");
        }
        synchronized (this) {
            ensureOpen();
            limitHandler = limit == 0 ? null : handler;
            try (Arena temporary = Arena.ofConfined()) {
                MemorySegment attr = temporary.allocate(IBV_SRQ_ATTR.layout());
                attr.set(JAVA_INT, SRQ_ATTR_SRQ_LIMIT, limit);
                IbvCalls.modifySrq(srq, attr, VerbsConstants.IBV_SRQ_LIMIT);
            } catch (NativeCallException e) {
                limitHandler = null;
                throw new IllegalStateException("cannot arm the limit of shared receive queue 0x"
                    + Long.toHexString(srq.address()) + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * The device reported {@code IBV_EVENT_SRQ_LIMIT_REACHED} (on the async event thread): the limit is disarmed;
     * run the handler once.
     */
    void onLimitReached() {
        LimitHandler handler = limitHandler;
        if (handler == null || closed) {
            return;
        }
        limitHandler = null;
        try {
            handler.onLimitReached(this);
        } catch (RuntimeException e) {
            NativeAsyncEvents.LOG.warn("the limit handler of shared receive queue 0x{} failed",
                Long.toHexString(srq.address()), e);
        }
    }

    @Override
    public int maxWorkRequests() {
        return maxWorkRequests;
    }

    synchronized void attach() {
        ensureOpen();
        users++;
    }

    synchronized void detach() {
        users--;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("shared receive queue 0x" + Long.toHexString(srq.address())
                + " is closed");
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (users != 0) {
            throw new IllegalStateException("shared receive queue 0x" + Long.toHexString(srq.address())
                + " is still used by " + users + " queue pairs: close them first");
        }
        domain.nativeDevice().forget(this);
        try {
            IbvCalls.destroySrq(srq);
        } catch (NativeCallException e) {
            domain.nativeDevice().track(this);
            throw new IllegalStateException("cannot destroy shared receive queue: " + e.getMessage(), e);
        }
        closed = true;
        arena.close();
        domain.childClosed(ResourceCounter.Kind.SHARED_RECEIVE_QUEUE);
    }

    @Override
    public String toString() {
        return "NativeSharedReceiveQueue{srq=0x" + Long.toHexString(srq.address()) + ", maxWorkRequests="
            + maxWorkRequests + ", maxSge=" + maxSge + ", users=" + users + ", closed=" + closed + '}';
    }
}
