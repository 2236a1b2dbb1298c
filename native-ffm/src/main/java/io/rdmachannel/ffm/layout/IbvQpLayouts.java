package io.rdmachannel.ffm.layout;

import static io.rdmachannel.ffm.layout.CTypes.chars;
import static io.rdmachannel.ffm.layout.CTypes.cond;
import static io.rdmachannel.ffm.layout.CTypes.mutex;
import static io.rdmachannel.ffm.layout.CTypes.pointer;
import static io.rdmachannel.ffm.layout.CTypes.u16;
import static io.rdmachannel.ffm.layout.CTypes.u32;
import static io.rdmachannel.ffm.layout.CTypes.u64;
import static io.rdmachannel.ffm.layout.CTypes.u8;

/**
 * Queue pairs: {@code ibv_qp}, {@code ibv_qp_cap}, {@code ibv_qp_init_attr}, {@code ibv_qp_attr} with
 * {@code ibv_ah_attr}, {@code ibv_global_route} and {@code union ibv_gid}.
 */
public final class IbvQpLayouts {
    /** {@code union ibv_gid}: 16 bytes, network order. */
    public static final CStruct IBV_GID = CStruct.union("union ibv_gid",
        chars("raw", 16), CStruct.structLayout("global", u64("subnet_prefix"), u64("interface_id")));
    /** {@code sizeof(union ibv_gid)}. */
    public static final long GID_SIZE = IBV_GID.size();

    /** {@code struct ibv_qp}. */
    public static final CStruct IBV_QP = CStruct.struct("struct ibv_qp",
        pointer("context"), pointer("qp_context"), pointer("pd"), pointer("send_cq"), pointer("recv_cq"),
        pointer("srq"), u32("handle"), u32("qp_num"), u32("state"), u32("qp_type"), mutex("mutex"), cond("cond"),
        u32("events_completed"));
    /** {@code sizeof(struct ibv_qp)}. */
    public static final long QP_SIZE = IBV_QP.size();
    /** {@code ibv_qp.context}. */
    public static final long QP_CONTEXT = IBV_QP.offset("context");
    /** {@code ibv_qp.qp_num}. */
    public static final long QP_QP_NUM = IBV_QP.offset("qp_num");
    /** {@code ibv_qp.state}. */
    public static final long QP_STATE = IBV_QP.offset("state");
    /** {@code ibv_qp.qp_type}. */
    public static final long QP_QP_TYPE = IBV_QP.offset("qp_type");

    /** {@code struct ibv_qp_cap}. */
    public static final CStruct IBV_QP_CAP = CStruct.struct("struct ibv_qp_cap",
        u32("max_send_wr"), u32("max_recv_wr"), u32("max_send_sge"), u32("max_recv_sge"), u32("max_inline_data"));
    /** {@code ibv_qp_cap.max_send_wr}. */
    public static final long CAP_MAX_SEND_WR = IBV_QP_CAP.offset("max_send_wr");
    /** {@code ibv_qp_cap.max_recv_wr}. */
    public static final long CAP_MAX_RECV_WR = IBV_QP_CAP.offset("max_recv_wr");
    /** {@code ibv_qp_cap.max_send_sge}. */
    public static final long CAP_MAX_SEND_SGE = IBV_QP_CAP.offset("max_send_sge");
    /** {@code ibv_qp_cap.max_recv_sge}. */
    public static final long CAP_MAX_RECV_SGE = IBV_QP_CAP.offset("max_recv_sge");
    /** {@code ibv_qp_cap.max_inline_data}. */
    public static final long CAP_MAX_INLINE_DATA = IBV_QP_CAP.offset("max_inline_data");

    /** {@code struct ibv_qp_init_attr}. */
    public static final CStruct IBV_QP_INIT_ATTR = CStruct.struct("struct ibv_qp_init_attr",
        pointer("qp_context"), pointer("send_cq"), pointer("recv_cq"), pointer("srq"),
        IBV_QP_CAP.layout().withName("cap"), u32("qp_type"), u32("sq_sig_all"));
    /** {@code sizeof(struct ibv_qp_init_attr)}. */
    public static final long QP_INIT_ATTR_SIZE = IBV_QP_INIT_ATTR.size();
    /** {@code ibv_qp_init_attr.qp_context}. */
    public static final long QP_INIT_ATTR_QP_CONTEXT = IBV_QP_INIT_ATTR.offset("qp_context");
    /** {@code ibv_qp_init_attr.send_cq}. */
    public static final long QP_INIT_ATTR_SEND_CQ = IBV_QP_INIT_ATTR.offset("send_cq");
    /** {@code ibv_qp_init_attr.recv_cq}. */
    public static final long QP_INIT_ATTR_RECV_CQ = IBV_QP_INIT_ATTR.offset("recv_cq");
    /** {@code ibv_qp_init_attr.srq}. */
    public static final long QP_INIT_ATTR_SRQ = IBV_QP_INIT_ATTR.offset("srq");
    /** {@code ibv_qp_init_attr.cap}: add the {@code CAP_*} offsets. */
    public static final long QP_INIT_ATTR_CAP = IBV_QP_INIT_ATTR.offset("cap");
    /** {@code ibv_qp_init_attr.qp_type}. */
    public static final long QP_INIT_ATTR_QP_TYPE = IBV_QP_INIT_ATTR.offset("qp_type");
    /** {@code ibv_qp_init_attr.sq_sig_all}. */
    public static final long QP_INIT_ATTR_SQ_SIG_ALL = IBV_QP_INIT_ATTR.offset("sq_sig_all");

    /** {@code struct ibv_rx_hash_conf} (RSS; zero for XRC). */
    public static final CStruct IBV_RX_HASH_CONF = CStruct.struct("struct ibv_rx_hash_conf",
        u8("rx_hash_function"), u8("rx_hash_key_len"), pointer("rx_hash_key"), u64("rx_hash_fields_mask"));

    /**
     * {@code struct ibv_qp_init_attr_ex}, for {@code ibv_create_qp_ex}: {@code ibv_qp_init_attr} followed by what
     * XRC needs (the domain of an XRC_RECV queue pair, the protection domain of an XRC_SEND one) and later
     * extensions.
     */
    public static final CStruct IBV_QP_INIT_ATTR_EX = CStruct.struct("struct ibv_qp_init_attr_ex",
        pointer("qp_context"), pointer("send_cq"), pointer("recv_cq"), pointer("srq"),
        IBV_QP_CAP.layout().withName("cap"), u32("qp_type"), u32("sq_sig_all"), u32("comp_mask"), pointer("pd"),
        pointer("xrcd"), u32("create_flags"), u16("max_tso_header"), pointer("rwq_ind_tbl"),
        IBV_RX_HASH_CONF.layout().withName("rx_hash_conf"), u32("source_qpn"), u64("send_ops_flags"));
    /** {@code sizeof(struct ibv_qp_init_attr_ex)}. */
    public static final long QP_INIT_ATTR_EX_SIZE = IBV_QP_INIT_ATTR_EX.size();
    /** {@code ibv_qp_init_attr_ex.qp_type}. */
    public static final long QP_INIT_ATTR_EX_QP_TYPE = IBV_QP_INIT_ATTR_EX.offset("qp_type");
    /** {@code ibv_qp_init_attr_ex.comp_mask}. */
    public static final long QP_INIT_ATTR_EX_COMP_MASK = IBV_QP_INIT_ATTR_EX.offset("comp_mask");
    /** {@code ibv_qp_init_attr_ex.pd}. */
    public static final long QP_INIT_ATTR_EX_PD = IBV_QP_INIT_ATTR_EX.offset("pd");
    /** {@code ibv_qp_init_attr_ex.xrcd}. */
    public static final long QP_INIT_ATTR_EX_XRCD = IBV_QP_INIT_ATTR_EX.offset("xrcd");

    /** {@code struct ibv_qp_open_attr}, for {@code ibv_open_qp}: a process's reference to an XRC target QP. */
    public static final CStruct IBV_QP_OPEN_ATTR = CStruct.struct("struct ibv_qp_open_attr",
        u32("comp_mask"), u32("qp_num"), pointer("xrcd"), pointer("qp_context"), u32("qp_type"));
    /** {@code sizeof(struct ibv_qp_open_attr)}. */
    public static final long QP_OPEN_ATTR_SIZE = IBV_QP_OPEN_ATTR.size();
    /** {@code ibv_qp_open_attr.comp_mask}. */
    public static final long QP_OPEN_ATTR_COMP_MASK = IBV_QP_OPEN_ATTR.offset("comp_mask");
    /** {@code ibv_qp_open_attr.qp_num}. */
    public static final long QP_OPEN_ATTR_QP_NUM = IBV_QP_OPEN_ATTR.offset("qp_num");
    /** {@code ibv_qp_open_attr.xrcd}. */
    public static final long QP_OPEN_ATTR_XRCD = IBV_QP_OPEN_ATTR.offset("xrcd");
    /** {@code ibv_qp_open_attr.qp_type}. */
    public static final long QP_OPEN_ATTR_QP_TYPE = IBV_QP_OPEN_ATTR.offset("qp_type");

    /** {@code struct ibv_global_route}. */
    public static final CStruct IBV_GLOBAL_ROUTE = CStruct.struct("struct ibv_global_route",
        IBV_GID.layout().withName("dgid"), u32("flow_label"), u8("sgid_index"), u8("hop_limit"),
        u8("traffic_class"));

    /** {@code struct ibv_ah_attr}. */
    public static final CStruct IBV_AH_ATTR = CStruct.struct("struct ibv_ah_attr",
        IBV_GLOBAL_ROUTE.layout().withName("grh"), u16("dlid"), u8("sl"), u8("src_path_bits"), u8("static_rate"),
        u8("is_global"), u8("port_num"));
    /** {@code ibv_ah_attr.grh.dgid}. */
    public static final long AH_ATTR_DGID = IBV_AH_ATTR.offset("grh.dgid");
    /** {@code ibv_ah_attr.grh.flow_label}. */
    public static final long AH_ATTR_FLOW_LABEL = IBV_AH_ATTR.offset("grh.flow_label");
    /** {@code ibv_ah_attr.grh.sgid_index}. */
    public static final long AH_ATTR_SGID_INDEX = IBV_AH_ATTR.offset("grh.sgid_index");
    /** {@code ibv_ah_attr.grh.hop_limit}. */
    public static final long AH_ATTR_HOP_LIMIT = IBV_AH_ATTR.offset("grh.hop_limit");
    /** {@code ibv_ah_attr.grh.traffic_class}. */
    public static final long AH_ATTR_TRAFFIC_CLASS = IBV_AH_ATTR.offset("grh.traffic_class");
    /** {@code ibv_ah_attr.dlid}. */
    public static final long AH_ATTR_DLID = IBV_AH_ATTR.offset("dlid");
    /** {@code ibv_ah_attr.sl}. */
    public static final long AH_ATTR_SL = IBV_AH_ATTR.offset("sl");
    /** {@code ibv_ah_attr.src_path_bits}. */
    public static final long AH_ATTR_SRC_PATH_BITS = IBV_AH_ATTR.offset("src_path_bits");
    /** {@code ibv_ah_attr.static_rate}. */
    public static final long AH_ATTR_STATIC_RATE = IBV_AH_ATTR.offset("static_rate");
    /** {@code ibv_ah_attr.is_global}. */
    public static final long AH_ATTR_IS_GLOBAL = IBV_AH_ATTR.offset("is_global");
    /** {@code ibv_ah_attr.port_num}. */
    public static final long AH_ATTR_PORT_NUM = IBV_AH_ATTR.offset("port_num");

    /** {@code struct ibv_qp_attr}: the argument of {@code ibv_modify_qp} and {@code ibv_query_qp}. */
    public static final CStruct IBV_QP_ATTR = CStruct.struct("struct ibv_qp_attr",
        u32("qp_state"), u32("cur_qp_state"), u32("path_mtu"), u32("path_mig_state"), u32("qkey"), u32("rq_psn"),
        u32("sq_psn"), u32("dest_qp_num"), u32("qp_access_flags"), IBV_QP_CAP.layout().withName("cap"),
        IBV_AH_ATTR.layout().withName("ah_attr"), IBV_AH_ATTR.layout().withName("alt_ah_attr"),
        u16("pkey_index"), u16("alt_pkey_index"), u8("en_sqd_async_notify"), u8("sq_draining"),
        u8("max_rd_atomic"), u8("max_dest_rd_atomic"), u8("min_rnr_timer"), u8("port_num"), u8("timeout"),
        u8("retry_cnt"), u8("rnr_retry"), u8("alt_port_num"), u8("alt_timeout"), u32("rate_limit"));
    /** {@code sizeof(struct ibv_qp_attr)}. */
    public static final long QP_ATTR_SIZE = IBV_QP_ATTR.size();
    /** {@code ibv_qp_attr.qp_state}. */
    public static final long QP_ATTR_QP_STATE = IBV_QP_ATTR.offset("qp_state");
    /** {@code ibv_qp_attr.cur_qp_state}. */
    public static final long QP_ATTR_CUR_QP_STATE = IBV_QP_ATTR.offset("cur_qp_state");
    /** {@code ibv_qp_attr.path_mtu}. */
    public static final long QP_ATTR_PATH_MTU = IBV_QP_ATTR.offset("path_mtu");
    /** {@code ibv_qp_attr.qkey}. */
    public static final long QP_ATTR_QKEY = IBV_QP_ATTR.offset("qkey");
    /** {@code ibv_qp_attr.rq_psn}. */
    public static final long QP_ATTR_RQ_PSN = IBV_QP_ATTR.offset("rq_psn");
    /** {@code ibv_qp_attr.sq_psn}. */
    public static final long QP_ATTR_SQ_PSN = IBV_QP_ATTR.offset("sq_psn");
    /** {@code ibv_qp_attr.dest_qp_num}. */
    public static final long QP_ATTR_DEST_QP_NUM = IBV_QP_ATTR.offset("dest_qp_num");
    /** {@code ibv_qp_attr.qp_access_flags}. */
    public static final long QP_ATTR_QP_ACCESS_FLAGS = IBV_QP_ATTR.offset("qp_access_flags");
    /** {@code ibv_qp_attr.cap}: add the {@code CAP_*} offsets. */
    public static final long QP_ATTR_CAP = IBV_QP_ATTR.offset("cap");
    /** {@code ibv_qp_attr.ah_attr}: add the {@code AH_ATTR_*} offsets. */
    public static final long QP_ATTR_AH_ATTR = IBV_QP_ATTR.offset("ah_attr");
    /** {@code ibv_qp_attr.pkey_index}. */
    public static final long QP_ATTR_PKEY_INDEX = IBV_QP_ATTR.offset("pkey_index");
    /** {@code ibv_qp_attr.max_rd_atomic}. */
    public static final long QP_ATTR_MAX_RD_ATOMIC = IBV_QP_ATTR.offset("max_rd_atomic");
    /** {@code ibv_qp_attr.max_dest_rd_atomic}. */
    public static final long QP_ATTR_MAX_DEST_RD_ATOMIC = IBV_QP_ATTR.offset("max_dest_rd_atomic");
    /** {@code ibv_qp_attr.min_rnr_timer}. */
    public static final long QP_ATTR_MIN_RNR_TIMER = IBV_QP_ATTR.offset("min_rnr_timer");
    /** {@code ibv_qp_attr.port_num}. */
    public static final long QP_ATTR_PORT_NUM = IBV_QP_ATTR.offset("port_num");
    /** {@code ibv_qp_attr.timeout}. */
    public static final long QP_ATTR_TIMEOUT = IBV_QP_ATTR.offset("timeout");
    /** {@code ibv_qp_attr.retry_cnt}. */
    public static final long QP_ATTR_RETRY_CNT = IBV_QP_ATTR.offset("retry_cnt");
    /** {@code ibv_qp_attr.rnr_retry}. */
    public static final long QP_ATTR_RNR_RETRY = IBV_QP_ATTR.offset("rnr_retry");

    private IbvQpLayouts() {
    }
}
