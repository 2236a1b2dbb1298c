package io.rdmachannel.ffm.verbs;

import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_POLL_CQ;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_REQ_NOTIFY_CQ;

import io.rdmachannel.ffm.internal.Downcalls;
import java.lang.foreign.MemorySegment;

/**
 * {@code ibv_poll_cq} and {@code ibv_req_notify_cq} of one completion queue, the pointers read once.
 */
public final class CompletionQueueOps {
    private final MemorySegment pollCq;
    private final MemorySegment reqNotifyCq;
    private final boolean critical;

    private CompletionQueueOps(MemorySegment pollCq, MemorySegment reqNotifyCq, boolean critical) {
        this.pollCq = pollCq;
        this.reqNotifyCq = reqNotifyCq;
        this.critical = critical;
    }

    /**
     * Read the pointers of a completion queue's context.
     *
     * @param cq the {@code ibv_cq}.
     * @param critical whether to call them as critical functions.
     * @return the dispatcher.
     * @throws IllegalStateException if the provider lacks one of them.
     */
    public static CompletionQueueOps of(MemorySegment cq, boolean critical) {
        return new CompletionQueueOps(QueuePairOps.required(cq, OPS_POLL_CQ, "poll_cq"),
            QueuePairOps.required(cq, OPS_REQ_NOTIFY_CQ, "req_notify_cq"), critical);
    }

    /**
     * {@code ibv_poll_cq(cq, num_entries, wc)}.
     *
     * @param cq the {@code ibv_cq}.
     * @param entries the length of the {@code wc} array.
     * @param wc an array of {@code struct ibv_wc}.
     * @return the number of completions written, or a negative value on error.
     */
    public int pollCq(MemorySegment cq, int entries, MemorySegment wc) {
        try {
            return critical
                ? (int) IbvInline.INT_PIP_CRITICAL_HANDLE.invokeExact(pollCq, cq, entries, wc)
                : (int) IbvInline.INT_PIP_HANDLE.invokeExact(pollCq, cq, entries, wc);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code ibv_req_notify_cq(cq, solicited_only)}.
     *
     * @param cq the {@code ibv_cq}.
     * @param solicitedOnly 1 to be notified of solicited completions only.
     * @return 0 or an errno value.
     */
    public int reqNotifyCq(MemorySegment cq, int solicitedOnly) {
        try {
            return critical
                ? (int) IbvInline.INT_PI_CRITICAL_HANDLE.invokeExact(reqNotifyCq, cq, solicitedOnly)
                : (int) IbvInline.INT_PI_HANDLE.invokeExact(reqNotifyCq, cq, solicitedOnly);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }
}
