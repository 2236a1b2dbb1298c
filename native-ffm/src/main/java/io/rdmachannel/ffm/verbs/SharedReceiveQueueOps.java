package io.rdmachannel.ffm.verbs;

import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_POST_SRQ_RECV;

import io.rdmachannel.ffm.internal.Downcalls;
import java.lang.foreign.MemorySegment;

/**
 * {@code ibv_post_srq_recv} of one shared receive queue, the pointer read once.
 */
public final class SharedReceiveQueueOps {
    private final MemorySegment postSrqRecv;
    private final boolean critical;

    private SharedReceiveQueueOps(MemorySegment postSrqRecv, boolean critical) {
        this.postSrqRecv = postSrqRecv;
        this.critical = critical;
    }

    /**
     * Read the pointer of a shared receive queue's context.
     *
     * @param srq the {@code ibv_srq}.
     * @param critical whether to call it as a critical function.
     * @return the dispatcher.
     * @throws IllegalStateException if the provider has no {@code post_srq_recv}.
     */
    public static SharedReceiveQueueOps of(MemorySegment srq, boolean critical) {
        return new SharedReceiveQueueOps(QueuePairOps.required(srq, OPS_POST_SRQ_RECV, "post_srq_recv"), critical);
    }

    /**
     * {@code ibv_post_srq_recv(srq, wr, bad_wr)}.
     *
     * @param srq the {@code ibv_srq}.
     * @param wr the first {@code ibv_recv_wr}.
     * @param badWr where the failing request is stored.
     * @return 0 or an errno value.
     */
    public int postSrqRecv(MemorySegment srq, MemorySegment wr, MemorySegment badWr) {
        try {
            return critical
                ? (int) IbvInline.INT_PPP_CRITICAL_HANDLE.invokeExact(postSrqRecv, srq, wr, badWr)
                : (int) IbvInline.INT_PPP_HANDLE.invokeExact(postSrqRecv, srq, wr, badWr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }
}
