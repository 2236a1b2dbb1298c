package io.rdmachannel.ffm.verbs;

import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_POST_RECV;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_POST_SEND;

import io.rdmachannel.ffm.internal.Downcalls;
import java.lang.foreign.MemorySegment;

/**
 * {@code ibv_post_send} and {@code ibv_post_recv} of one queue pair: the function pointers are read once from the
 * context's ops table and kept here. Both return 0 or an errno value (e.g. ENOMEM when the queue is full) and set
 * {@code *bad_wr} on failure; the caller checks.
 */
public final class QueuePairOps {
    private final MemorySegment postSend;
    private final MemorySegment postRecv;
    private final boolean critical;

    private QueuePairOps(MemorySegment postSend, MemorySegment postRecv, boolean critical) {
        this.postSend = postSend;
        this.postRecv = postRecv;
        this.critical = critical;
    }

    /**
     * Read the pointers of a queue pair's context.
     *
     * @param qp the {@code ibv_qp}.
     * @param critical whether to call them as critical functions (see {@code CriticalPolicy}).
     * @return the dispatcher.
     * @throws IllegalStateException if the provider has no {@code post_send} or {@code post_recv}.
     */
    public static QueuePairOps of(MemorySegment qp, boolean critical) {
        return new QueuePairOps(required(qp, OPS_POST_SEND, "post_send"), required(qp, OPS_POST_RECV, "post_recv"),
            critical);
    }

    static MemorySegment required(MemorySegment object, long opsOffset, String name) {
        MemorySegment function = IbvInline.opsFunction(object, opsOffset);
        if (function.equals(MemorySegment.NULL)) {
            throw new IllegalStateException("the provider has no ops." + name);
        }
        return function;
    }

    /**
     * Whether the calls are critical.
     *
     * @return true if linked with {@code Linker.Option.critical(false)}.
     */
    public boolean critical() {
        return critical;
    }

    /**
     * {@code ibv_post_send(qp, wr, bad_wr)}.
     *
     * @param qp the {@code ibv_qp}.
     * @param wr the first {@code ibv_send_wr}.
     * @param badWr where the failing request is stored.
     * @return 0 or an errno value.
     */
    public int postSend(MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        try {
            return critical
                ? (int) IbvInline.INT_PPP_CRITICAL_HANDLE.invokeExact(postSend, qp, wr, badWr)
                : (int) IbvInline.INT_PPP_HANDLE.invokeExact(postSend, qp, wr, badWr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code ibv_post_recv(qp, wr, bad_wr)}.
     *
     * @param qp the {@code ibv_qp}.
     * @param wr the first {@code ibv_recv_wr}.
     * @param badWr where the failing request is stored.
     * @return 0 or an errno value.
     */
    public int postRecv(MemorySegment qp, MemorySegment wr, MemorySegment badWr) {
        try {
            return critical
                ? (int) IbvInline.INT_PPP_CRITICAL_HANDLE.invokeExact(postRecv, qp, wr, badWr)
                : (int) IbvInline.INT_PPP_HANDLE.invokeExact(postRecv, qp, wr, badWr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }
}
