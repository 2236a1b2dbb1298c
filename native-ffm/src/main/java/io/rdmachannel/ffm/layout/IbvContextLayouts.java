package io.rdmachannel.ffm.layout;

import static io.rdmachannel.ffm.layout.CTypes.mutex;
import static io.rdmachannel.ffm.layout.CTypes.pointer;
import static io.rdmachannel.ffm.layout.CTypes.u32;
import static io.rdmachannel.ffm.layout.CTypes.u64;

import java.lang.foreign.MemoryLayout;

/**
 * {@code struct ibv_context} with its {@code ops} table, and {@code struct verbs_context}, which libibverbs allocates
 * in front of every {@code ibv_context}: its members sit at negative offsets from the {@code ibv_context *} the
 * application holds.
 *
 * <pre>
 *  verbs_context:  query_port ... open_xrcd close_xrcd _ABI_placeholder3 sz | ibv_context (device, ops, ...)
 *                  -320            -32       -24        -16              -8   0
 * </pre>
 *
 * <p>The ops pointers and the negative offsets are ABI: they are read once per object and called through FFM, which
 * is how the {@code static inline} verbs of {@code verbs.h} are reached.
 */
public final class IbvContextLayouts {
    /** {@code struct ibv_context_ops}: 32 function pointers, most of them compatibility placeholders. */
    public static final CStruct IBV_CONTEXT_OPS = CStruct.struct("struct ibv_context_ops",
        pointer("_compat_query_device"), pointer("_compat_query_port"), pointer("_compat_alloc_pd"),
        pointer("_compat_dealloc_pd"), pointer("_compat_reg_mr"), pointer("_compat_rereg_mr"),
        pointer("_compat_dereg_mr"), pointer("alloc_mw"), pointer("bind_mw"), pointer("dealloc_mw"),
        pointer("_compat_create_cq"), pointer("poll_cq"), pointer("req_notify_cq"), pointer("_compat_cq_event"),
        pointer("_compat_resize_cq"), pointer("_compat_destroy_cq"), pointer("_compat_create_srq"),
        pointer("_compat_modify_srq"), pointer("_compat_query_srq"), pointer("_compat_destroy_srq"),
        pointer("post_srq_recv"), pointer("_compat_create_qp"), pointer("_compat_query_qp"),
        pointer("_compat_modify_qp"), pointer("_compat_destroy_qp"), pointer("post_send"), pointer("post_recv"),
        pointer("_compat_create_ah"), pointer("_compat_destroy_ah"), pointer("_compat_attach_mcast"),
        pointer("_compat_detach_mcast"), pointer("_compat_async_event"));

    private static final MemoryLayout[] CONTEXT_MEMBERS = {
        pointer("device"),
        IBV_CONTEXT_OPS.layout().withName("ops"),
        u32("cmd_fd"),
        u32("async_fd"),
        u32("num_comp_vectors"),
        mutex("mutex"),
        pointer("abi_compat"),
    };

    /** {@code struct ibv_context}. */
    public static final CStruct IBV_CONTEXT = CStruct.struct("struct ibv_context", CONTEXT_MEMBERS);
    /** {@code sizeof(struct ibv_context)}. */
    public static final long CONTEXT_SIZE = IBV_CONTEXT.size();
    /** {@code ibv_context.device}. */
    public static final long CONTEXT_DEVICE = IBV_CONTEXT.offset("device");
    /** {@code ibv_context.cmd_fd}. */
    public static final long CONTEXT_CMD_FD = IBV_CONTEXT.offset("cmd_fd");
    /** {@code ibv_context.async_fd}: make it non-blocking before waiting on it. */
    public static final long CONTEXT_ASYNC_FD = IBV_CONTEXT.offset("async_fd");
    /** {@code ibv_context.num_comp_vectors}. */
    public static final long CONTEXT_NUM_COMP_VECTORS = IBV_CONTEXT.offset("num_comp_vectors");
    /** {@code ibv_context.abi_compat}: {@code (void *) UINTPTR_MAX} when a {@code verbs_context} precedes it. */
    public static final long CONTEXT_ABI_COMPAT = IBV_CONTEXT.offset("abi_compat");
    /** {@code ibv_context.ops.poll_cq}. */
    public static final long OPS_POLL_CQ = IBV_CONTEXT.offset("ops.poll_cq");
    /** {@code ibv_context.ops.req_notify_cq}. */
    public static final long OPS_REQ_NOTIFY_CQ = IBV_CONTEXT.offset("ops.req_notify_cq");
    /** {@code ibv_context.ops.post_srq_recv}. */
    public static final long OPS_POST_SRQ_RECV = IBV_CONTEXT.offset("ops.post_srq_recv");
    /** {@code ibv_context.ops.post_send}. */
    public static final long OPS_POST_SEND = IBV_CONTEXT.offset("ops.post_send");
    /** {@code ibv_context.ops.post_recv}. */
    public static final long OPS_POST_RECV = IBV_CONTEXT.offset("ops.post_recv");

    /** {@code struct verbs_context} of rdma-core 44; it only ever grows at the front. */
    public static final CStruct VERBS_CONTEXT = CStruct.struct("struct verbs_context",
        pointer("query_port"), pointer("advise_mr"), pointer("alloc_null_mr"), pointer("read_counters"),
        pointer("attach_counters_point_flow"), pointer("create_counters"), pointer("destroy_counters"),
        pointer("reg_dm_mr"), pointer("alloc_dm"), pointer("free_dm"), pointer("modify_flow_action_esp"),
        pointer("destroy_flow_action"), pointer("create_flow_action_esp"), pointer("modify_qp_rate_limit"),
        pointer("alloc_parent_domain"), pointer("dealloc_td"), pointer("alloc_td"), pointer("modify_cq"),
        pointer("post_srq_ops"), pointer("destroy_rwq_ind_table"), pointer("create_rwq_ind_table"),
        pointer("destroy_wq"), pointer("modify_wq"), pointer("create_wq"), pointer("query_rt_values"),
        pointer("create_cq_ex"), pointer("priv"), pointer("query_device_ex"), pointer("ibv_destroy_flow"),
        pointer("ABI_placeholder2"), pointer("ibv_create_flow"), pointer("ABI_placeholder1"), pointer("open_qp"),
        pointer("create_qp_ex"), pointer("get_srq_num"), pointer("create_srq_ex"), pointer("open_xrcd"),
        pointer("close_xrcd"), pointer("_ABI_placeholder3"), u64("sz"),
        IBV_CONTEXT.layout().withName("context"));
    /** {@code verbs_context.query_port} relative to the {@code ibv_context *}. */
    public static final long VCTX_QUERY_PORT = VERBS_CONTEXT.relativeOffset("query_port", "context");
    /** {@code verbs_context.query_device_ex} relative to the {@code ibv_context *}. */
    public static final long VCTX_QUERY_DEVICE_EX = VERBS_CONTEXT.relativeOffset("query_device_ex", "context");
    /** {@code verbs_context.create_qp_ex} relative to the {@code ibv_context *}. */
    public static final long VCTX_CREATE_QP_EX = VERBS_CONTEXT.relativeOffset("create_qp_ex", "context");
    /** {@code verbs_context.create_srq_ex} relative to the {@code ibv_context *}. */
    public static final long VCTX_CREATE_SRQ_EX = VERBS_CONTEXT.relativeOffset("create_srq_ex", "context");
    /** {@code verbs_context.open_qp} relative to the {@code ibv_context *}. */
    public static final long VCTX_OPEN_QP = VERBS_CONTEXT.relativeOffset("open_qp", "context");
    /** {@code verbs_context.get_srq_num} relative to the {@code ibv_context *}. */
    public static final long VCTX_GET_SRQ_NUM = VERBS_CONTEXT.relativeOffset("get_srq_num", "context");
    /** {@code verbs_context.open_xrcd} relative to the {@code ibv_context *}. */
    public static final long VCTX_OPEN_XRCD = VERBS_CONTEXT.relativeOffset("open_xrcd", "context");
    /** {@code verbs_context.close_xrcd} relative to the {@code ibv_context *}. */
    public static final long VCTX_CLOSE_XRCD = VERBS_CONTEXT.relativeOffset("close_xrcd", "context");
    /** {@code verbs_context.sz} relative to the {@code ibv_context *}: how much of the struct the provider filled. */
    public static final long VCTX_SZ = VERBS_CONTEXT.relativeOffset("sz", "context");
    /** {@code sizeof(struct verbs_context)} of rdma-core 44. */
    public static final long VERBS_CONTEXT_SIZE = VERBS_CONTEXT.size();

    private IbvContextLayouts() {
    }
}
