package io.rdmachannel.ffm.layout;

import static io.rdmachannel.ffm.layout.CStruct.structLayout;
import static io.rdmachannel.ffm.layout.CStruct.unionLayout;
import static io.rdmachannel.ffm.layout.CTypes.pointer;
import static io.rdmachannel.ffm.layout.CTypes.u16;
import static io.rdmachannel.ffm.layout.CTypes.u32;
import static io.rdmachannel.ffm.layout.CTypes.u64;
import static io.rdmachannel.ffm.layout.CTypes.u8;

/**
 * The data path: {@code ibv_sge}, {@code ibv_send_wr}, {@code ibv_recv_wr} and {@code ibv_wc}. Work requests are
 * built once in native memory and rewritten in place (flyweights over these offsets).
 *
 * <pre>
 * ibv_send_wr (128 bytes):
 *   0 wr_id | 8 next | 16 sg_list | 24 num_sge | 28 opcode | 32 send_flags | 36 imm_data / invalidate_rkey
 *  40 wr: rdma {remote_addr, 48 rkey} | atomic {remote_addr, 48 compare_add, 56 swap, 64 rkey}
 *        | ud {ah, 48 remote_qpn, 52 remote_qkey}
 *  72 qp_type.xrc.remote_srqn | 80 bind_mw {mw, 88 rkey, 96 bind_info} | tso {hdr, 88 hdr_sz, 90 mss}
 * </pre>
 */
public final class IbvWorkRequestLayouts {
    /** {@code struct ibv_sge}. */
    public static final CStruct IBV_SGE = CStruct.struct("struct ibv_sge",
        u64("addr"), u32("length"), u32("lkey"));
    /** {@code sizeof(struct ibv_sge)}. */
    public static final long SGE_SIZE = IBV_SGE.size();
    /** {@code ibv_sge.addr}. */
    public static final long SGE_ADDR = IBV_SGE.offset("addr");
    /** {@code ibv_sge.length}. */
    public static final long SGE_LENGTH = IBV_SGE.offset("length");
    /** {@code ibv_sge.lkey}. */
    public static final long SGE_LKEY = IBV_SGE.offset("lkey");

    /** {@code struct ibv_mw_bind_info}. */
    public static final CStruct IBV_MW_BIND_INFO = CStruct.struct("struct ibv_mw_bind_info",
        pointer("mr"), u64("addr"), u64("length"), u32("mw_access_flags"));

    /** {@code struct ibv_send_wr}. */
    public static final CStruct IBV_SEND_WR = CStruct.struct("struct ibv_send_wr",
        u64("wr_id"), pointer("next"), pointer("sg_list"), u32("num_sge"), u32("opcode"), u32("send_flags"),
        unionLayout("$imm", u32("imm_data"), u32("invalidate_rkey")),
        unionLayout("wr",
            structLayout("rdma", u64("remote_addr"), u32("rkey")),
            structLayout("atomic", u64("remote_addr"), u64("compare_add"), u64("swap"), u32("rkey")),
            structLayout("ud", pointer("ah"), u32("remote_qpn"), u32("remote_qkey"))),
        unionLayout("qp_type", structLayout("xrc", u32("remote_srqn"))),
        unionLayout("$ext",
            structLayout("bind_mw", pointer("mw"), u32("rkey"), IBV_MW_BIND_INFO.layout().withName("bind_info")),
            structLayout("tso", pointer("hdr"), u16("hdr_sz"), u16("mss"))));
    /** {@code sizeof(struct ibv_send_wr)}. */
    public static final long SEND_WR_SIZE = IBV_SEND_WR.size();
    /** {@code ibv_send_wr.wr_id}. */
    public static final long SEND_WR_WR_ID = IBV_SEND_WR.offset("wr_id");
    /** {@code ibv_send_wr.next}. */
    public static final long SEND_WR_NEXT = IBV_SEND_WR.offset("next");
    /** {@code ibv_send_wr.sg_list}. */
    public static final long SEND_WR_SG_LIST = IBV_SEND_WR.offset("sg_list");
    /** {@code ibv_send_wr.num_sge}. */
    public static final long SEND_WR_NUM_SGE = IBV_SEND_WR.offset("num_sge");
    /** {@code ibv_send_wr.opcode}. */
    public static final long SEND_WR_OPCODE = IBV_SEND_WR.offset("opcode");
    /** {@code ibv_send_wr.send_flags}. */
    public static final long SEND_WR_SEND_FLAGS = IBV_SEND_WR.offset("send_flags");
    /** {@code ibv_send_wr.imm_data} (network order). */
    public static final long SEND_WR_IMM_DATA = IBV_SEND_WR.offset("imm_data");
    /** {@code ibv_send_wr.wr.rdma.remote_addr}. */
    public static final long SEND_WR_RDMA_REMOTE_ADDR = IBV_SEND_WR.offset("wr.rdma.remote_addr");
    /** {@code ibv_send_wr.wr.rdma.rkey}. */
    public static final long SEND_WR_RDMA_RKEY = IBV_SEND_WR.offset("wr.rdma.rkey");
    /** {@code ibv_send_wr.wr.atomic.remote_addr}. */
    public static final long SEND_WR_ATOMIC_REMOTE_ADDR = IBV_SEND_WR.offset("wr.atomic.remote_addr");
    /** {@code ibv_send_wr.wr.atomic.compare_add}. */
    public static final long SEND_WR_ATOMIC_COMPARE_ADD = IBV_SEND_WR.offset("wr.atomic.compare_add");
    /** {@code ibv_send_wr.wr.atomic.swap}. */
    public static final long SEND_WR_ATOMIC_SWAP = IBV_SEND_WR.offset("wr.atomic.swap");
    /** {@code ibv_send_wr.wr.atomic.rkey}. */
    public static final long SEND_WR_ATOMIC_RKEY = IBV_SEND_WR.offset("wr.atomic.rkey");
    /** {@code ibv_send_wr.qp_type.xrc.remote_srqn}. */
    public static final long SEND_WR_XRC_REMOTE_SRQN = IBV_SEND_WR.offset("qp_type.xrc.remote_srqn");

    /** {@code struct ibv_recv_wr}. */
    public static final CStruct IBV_RECV_WR = CStruct.struct("struct ibv_recv_wr",
        u64("wr_id"), pointer("next"), pointer("sg_list"), u32("num_sge"));
    /** {@code sizeof(struct ibv_recv_wr)}. */
    public static final long RECV_WR_SIZE = IBV_RECV_WR.size();
    /** {@code ibv_recv_wr.wr_id}. */
    public static final long RECV_WR_WR_ID = IBV_RECV_WR.offset("wr_id");
    /** {@code ibv_recv_wr.next}. */
    public static final long RECV_WR_NEXT = IBV_RECV_WR.offset("next");
    /** {@code ibv_recv_wr.sg_list}. */
    public static final long RECV_WR_SG_LIST = IBV_RECV_WR.offset("sg_list");
    /** {@code ibv_recv_wr.num_sge}. */
    public static final long RECV_WR_NUM_SGE = IBV_RECV_WR.offset("num_sge");

    /** {@code struct ibv_wc}: one completion, written by {@code poll_cq} into an array. */
    public static final CStruct IBV_WC = CStruct.struct("struct ibv_wc",
        u64("wr_id"), u32("status"), u32("opcode"), u32("vendor_err"), u32("byte_len"),
        unionLayout("$imm", u32("imm_data"), u32("invalidated_rkey")),
        u32("qp_num"), u32("src_qp"), u32("wc_flags"), u16("pkey_index"), u16("slid"), u8("sl"),
        u8("dlid_path_bits"));
    /** {@code sizeof(struct ibv_wc)}: the stride of the completion array. */
    public static final long WC_SIZE = IBV_WC.size();
    /** {@code ibv_wc.wr_id}. */
    public static final long WC_WR_ID = IBV_WC.offset("wr_id");
    /** {@code ibv_wc.status}. */
    public static final long WC_STATUS = IBV_WC.offset("status");
    /** {@code ibv_wc.opcode}. */
    public static final long WC_OPCODE = IBV_WC.offset("opcode");
    /** {@code ibv_wc.vendor_err}. */
    public static final long WC_VENDOR_ERR = IBV_WC.offset("vendor_err");
    /** {@code ibv_wc.byte_len}. */
    public static final long WC_BYTE_LEN = IBV_WC.offset("byte_len");
    /** {@code ibv_wc.imm_data} (network order). */
    public static final long WC_IMM_DATA = IBV_WC.offset("imm_data");
    /** {@code ibv_wc.qp_num}. */
    public static final long WC_QP_NUM = IBV_WC.offset("qp_num");
    /** {@code ibv_wc.src_qp}. */
    public static final long WC_SRC_QP = IBV_WC.offset("src_qp");
    /** {@code ibv_wc.wc_flags}. */
    public static final long WC_WC_FLAGS = IBV_WC.offset("wc_flags");

    private IbvWorkRequestLayouts() {
    }
}
