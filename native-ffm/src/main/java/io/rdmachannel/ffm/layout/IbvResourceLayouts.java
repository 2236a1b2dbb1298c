package io.rdmachannel.ffm.layout;

import static io.rdmachannel.ffm.layout.CTypes.cond;
import static io.rdmachannel.ffm.layout.CTypes.mutex;
import static io.rdmachannel.ffm.layout.CTypes.pointer;
import static io.rdmachannel.ffm.layout.CTypes.u32;
import static io.rdmachannel.ffm.layout.CTypes.u64;

/**
 * The verbs objects a provider creates and reads back: {@code ibv_pd}, {@code ibv_mr}, {@code ibv_comp_channel},
 * {@code ibv_cq}, {@code ibv_srq} with its init attributes. Each object starts with its {@code ibv_context *}, which
 * is how the inline data-path verbs find the ops table.
 */
public final class IbvResourceLayouts {
    /** {@code struct ibv_pd}. */
    public static final CStruct IBV_PD = CStruct.struct("struct ibv_pd", pointer("context"), u32("handle"));
    /** {@code ibv_pd.context}. */
    public static final long PD_CONTEXT = IBV_PD.offset("context");

    /** {@code struct ibv_mr}. */
    public static final CStruct IBV_MR = CStruct.struct("struct ibv_mr",
        pointer("context"), pointer("pd"), pointer("addr"), u64("length"), u32("handle"), u32("lkey"), u32("rkey"));
    /** {@code sizeof(struct ibv_mr)}. */
    public static final long MR_SIZE = IBV_MR.size();
    /** {@code ibv_mr.addr}. */
    public static final long MR_ADDR = IBV_MR.offset("addr");
    /** {@code ibv_mr.length}. */
    public static final long MR_LENGTH = IBV_MR.offset("length");
    /** {@code ibv_mr.lkey}. */
    public static final long MR_LKEY = IBV_MR.offset("lkey");
    /** {@code ibv_mr.rkey}. */
    public static final long MR_RKEY = IBV_MR.offset("rkey");

    /** {@code struct ibv_comp_channel}. */
    public static final CStruct IBV_COMP_CHANNEL = CStruct.struct("struct ibv_comp_channel",
        pointer("context"), u32("fd"), u32("refcnt"));
    /** {@code sizeof(struct ibv_comp_channel)}. */
    public static final long COMP_CHANNEL_SIZE = IBV_COMP_CHANNEL.size();
    /** {@code ibv_comp_channel.fd}: make it non-blocking, then wait on it with epoll. */
    public static final long COMP_CHANNEL_FD = IBV_COMP_CHANNEL.offset("fd");

    /** {@code struct ibv_cq}. */
    public static final CStruct IBV_CQ = CStruct.struct("struct ibv_cq",
        pointer("context"), pointer("channel"), pointer("cq_context"), u32("handle"), u32("cqe"), mutex("mutex"),
        cond("cond"), u32("comp_events_completed"), u32("async_events_completed"));
    /** {@code sizeof(struct ibv_cq)}. */
    public static final long CQ_SIZE = IBV_CQ.size();
    /** {@code ibv_cq.context}. */
    public static final long CQ_CONTEXT = IBV_CQ.offset("context");
    /** {@code ibv_cq.cq_context}: the value given to {@code ibv_create_cq}. */
    public static final long CQ_CQ_CONTEXT = IBV_CQ.offset("cq_context");
    /** {@code ibv_cq.cqe}: the capacity as created. */
    public static final long CQ_CQE = IBV_CQ.offset("cqe");

    /**
     * {@code struct ibv_async_event}: the {@code element} union ({@code cq}, {@code qp}, {@code srq}, {@code wq}
     * pointer or {@code port_num}) and the {@code enum ibv_event_type}.
     */
    public static final CStruct IBV_ASYNC_EVENT = CStruct.struct("struct ibv_async_event",
        pointer("element"), u32("event_type"));
    /** {@code sizeof(struct ibv_async_event)}. */
    public static final long ASYNC_EVENT_SIZE = IBV_ASYNC_EVENT.size();
    /** {@code ibv_async_event.element}: read as a pointer, or as the {@code int port_num} at the same offset. */
    public static final long ASYNC_EVENT_ELEMENT = IBV_ASYNC_EVENT.offset("element");
    /** {@code ibv_async_event.event_type}. */
    public static final long ASYNC_EVENT_TYPE = IBV_ASYNC_EVENT.offset("event_type");

    /** {@code struct ibv_srq}. */
    public static final CStruct IBV_SRQ = CStruct.struct("struct ibv_srq",
        pointer("context"), pointer("srq_context"), pointer("pd"), u32("handle"), mutex("mutex"), cond("cond"),
        u32("events_completed"));
    /** {@code sizeof(struct ibv_srq)}. */
    public static final long SRQ_SIZE = IBV_SRQ.size();
    /** {@code ibv_srq.context}. */
    public static final long SRQ_CONTEXT = IBV_SRQ.offset("context");

    /** {@code struct ibv_srq_attr}. */
    public static final CStruct IBV_SRQ_ATTR = CStruct.struct("struct ibv_srq_attr",
        u32("max_wr"), u32("max_sge"), u32("srq_limit"));

    /** {@code ibv_srq_attr.srq_limit}. */
    public static final long SRQ_ATTR_SRQ_LIMIT = IBV_SRQ_ATTR.offset("srq_limit");

    /** {@code struct ibv_srq_init_attr}. */
    public static final CStruct IBV_SRQ_INIT_ATTR = CStruct.struct("struct ibv_srq_init_attr",
        pointer("srq_context"), IBV_SRQ_ATTR.layout().withName("attr"));
    /** {@code sizeof(struct ibv_srq_init_attr)}. */
    public static final long SRQ_INIT_ATTR_SIZE = IBV_SRQ_INIT_ATTR.size();
    /** {@code ibv_srq_init_attr.srq_context}. */
    public static final long SRQ_INIT_ATTR_SRQ_CONTEXT = IBV_SRQ_INIT_ATTR.offset("srq_context");
    /** {@code ibv_srq_init_attr.attr.max_wr}. */
    public static final long SRQ_INIT_ATTR_MAX_WR = IBV_SRQ_INIT_ATTR.offset("attr.max_wr");
    /** {@code ibv_srq_init_attr.attr.max_sge}. */
    public static final long SRQ_INIT_ATTR_MAX_SGE = IBV_SRQ_INIT_ATTR.offset("attr.max_sge");
    /** {@code ibv_srq_init_attr.attr.srq_limit}. */
    public static final long SRQ_INIT_ATTR_SRQ_LIMIT = IBV_SRQ_INIT_ATTR.offset("attr.srq_limit");

    /** {@code struct ibv_tm_cap} (tag matching; zero for XRC). */
    public static final CStruct IBV_TM_CAP = CStruct.struct("struct ibv_tm_cap", u32("max_num_tags"), u32("max_ops"));

    /**
     * {@code struct ibv_srq_init_attr_ex}, for {@code ibv_create_srq_ex}: an XRC SRQ names its domain and the
     * completion queue its receives complete on.
     */
    public static final CStruct IBV_SRQ_INIT_ATTR_EX = CStruct.struct("struct ibv_srq_init_attr_ex",
        pointer("srq_context"), IBV_SRQ_ATTR.layout().withName("attr"), u32("comp_mask"), u32("srq_type"),
        pointer("pd"), pointer("xrcd"), pointer("cq"), IBV_TM_CAP.layout().withName("tm_cap"));
    /** {@code sizeof(struct ibv_srq_init_attr_ex)}. */
    public static final long SRQ_INIT_ATTR_EX_SIZE = IBV_SRQ_INIT_ATTR_EX.size();
    /** {@code ibv_srq_init_attr_ex.attr.max_wr}. */
    public static final long SRQ_INIT_ATTR_EX_MAX_WR = IBV_SRQ_INIT_ATTR_EX.offset("attr.max_wr");
    /** {@code ibv_srq_init_attr_ex.attr.max_sge}. */
    public static final long SRQ_INIT_ATTR_EX_MAX_SGE = IBV_SRQ_INIT_ATTR_EX.offset("attr.max_sge");
    /** {@code ibv_srq_init_attr_ex.comp_mask}. */
    public static final long SRQ_INIT_ATTR_EX_COMP_MASK = IBV_SRQ_INIT_ATTR_EX.offset("comp_mask");
    /** {@code ibv_srq_init_attr_ex.srq_type}. */
    public static final long SRQ_INIT_ATTR_EX_SRQ_TYPE = IBV_SRQ_INIT_ATTR_EX.offset("srq_type");
    /** {@code ibv_srq_init_attr_ex.pd}. */
    public static final long SRQ_INIT_ATTR_EX_PD = IBV_SRQ_INIT_ATTR_EX.offset("pd");
    /** {@code ibv_srq_init_attr_ex.xrcd}. */
    public static final long SRQ_INIT_ATTR_EX_XRCD = IBV_SRQ_INIT_ATTR_EX.offset("xrcd");
    /** {@code ibv_srq_init_attr_ex.cq}. */
    public static final long SRQ_INIT_ATTR_EX_CQ = IBV_SRQ_INIT_ATTR_EX.offset("cq");

    /**
     * {@code struct ibv_xrcd_init_attr}: {@code comp_mask}, then the {@code int fd} of the file that names the domain
     * ({@code -1}: none) and the {@code int oflags} ({@code O_CREAT}, {@code O_EXCL}).
     */
    public static final CStruct IBV_XRCD_INIT_ATTR = CStruct.struct("struct ibv_xrcd_init_attr",
        u32("comp_mask"), u32("fd"), u32("oflags"));
    /** {@code sizeof(struct ibv_xrcd_init_attr)}. */
    public static final long XRCD_INIT_ATTR_SIZE = IBV_XRCD_INIT_ATTR.size();
    /** {@code ibv_xrcd_init_attr.comp_mask}. */
    public static final long XRCD_INIT_ATTR_COMP_MASK = IBV_XRCD_INIT_ATTR.offset("comp_mask");
    /** {@code ibv_xrcd_init_attr.fd}. */
    public static final long XRCD_INIT_ATTR_FD = IBV_XRCD_INIT_ATTR.offset("fd");
    /** {@code ibv_xrcd_init_attr.oflags}. */
    public static final long XRCD_INIT_ATTR_OFLAGS = IBV_XRCD_INIT_ATTR.offset("oflags");

    private IbvResourceLayouts() {
    }
}
