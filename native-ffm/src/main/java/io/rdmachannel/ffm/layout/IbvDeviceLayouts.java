package io.rdmachannel.ffm.layout;

import static io.rdmachannel.ffm.layout.CTypes.chars;
import static io.rdmachannel.ffm.layout.CTypes.pointer;
import static io.rdmachannel.ffm.layout.CTypes.u16;
import static io.rdmachannel.ffm.layout.CTypes.u32;
import static io.rdmachannel.ffm.layout.CTypes.u64;
import static io.rdmachannel.ffm.layout.CTypes.u8;

/**
 * {@code struct ibv_device}, {@code struct ibv_device_attr} and {@code struct ibv_port_attr}: what a device is and
 * what it can do.
 */
public final class IbvDeviceLayouts {
    /** {@code IBV_SYSFS_NAME_MAX}. */
    public static final int SYSFS_NAME_MAX = 64;
    /** {@code IBV_SYSFS_PATH_MAX}. */
    public static final int SYSFS_PATH_MAX = 256;

    /** {@code struct ibv_device}: read-only, owned by the device list. */
    public static final CStruct IBV_DEVICE = CStruct.struct("struct ibv_device",
        CStruct.structLayout("_ops", pointer("_dummy1"), pointer("_dummy2")),
        u32("node_type"),
        u32("transport_type"),
        chars("name", SYSFS_NAME_MAX),
        chars("dev_name", SYSFS_NAME_MAX),
        chars("dev_path", SYSFS_PATH_MAX),
        chars("ibdev_path", SYSFS_PATH_MAX));
    /** {@code ibv_device.node_type}. */
    public static final long DEVICE_NODE_TYPE = IBV_DEVICE.offset("node_type");
    /** {@code ibv_device.transport_type}. */
    public static final long DEVICE_TRANSPORT_TYPE = IBV_DEVICE.offset("transport_type");
    /** {@code ibv_device.name}: the kernel device name, e.g. {@code mlx5_0}. */
    public static final long DEVICE_NAME = IBV_DEVICE.offset("name");

    /** {@code struct ibv_device_attr}, filled by {@code ibv_query_device}. */
    public static final CStruct IBV_DEVICE_ATTR = CStruct.struct("struct ibv_device_attr",
        chars("fw_ver", 64), u64("node_guid"), u64("sys_image_guid"), u64("max_mr_size"), u64("page_size_cap"),
        u32("vendor_id"), u32("vendor_part_id"), u32("hw_ver"), u32("max_qp"), u32("max_qp_wr"),
        u32("device_cap_flags"), u32("max_sge"), u32("max_sge_rd"), u32("max_cq"), u32("max_cqe"), u32("max_mr"),
        u32("max_pd"), u32("max_qp_rd_atom"), u32("max_ee_rd_atom"), u32("max_res_rd_atom"),
        u32("max_qp_init_rd_atom"), u32("max_ee_init_rd_atom"), u32("atomic_cap"), u32("max_ee"), u32("max_rdd"),
        u32("max_mw"), u32("max_raw_ipv6_qp"), u32("max_raw_ethy_qp"), u32("max_mcast_grp"),
        u32("max_mcast_qp_attach"), u32("max_total_mcast_qp_attach"), u32("max_ah"), u32("max_fmr"),
        u32("max_map_per_fmr"), u32("max_srq"), u32("max_srq_wr"), u32("max_srq_sge"), u16("max_pkeys"),
        u8("local_ca_ack_delay"), u8("phys_port_cnt"));
    /** {@code ibv_device_attr.fw_ver}. */
    public static final long DEVICE_ATTR_FW_VER = IBV_DEVICE_ATTR.offset("fw_ver");
    /** {@code ibv_device_attr.node_guid} (big-endian). */
    public static final long DEVICE_ATTR_NODE_GUID = IBV_DEVICE_ATTR.offset("node_guid");
    /** {@code ibv_device_attr.max_mr_size}. */
    public static final long DEVICE_ATTR_MAX_MR_SIZE = IBV_DEVICE_ATTR.offset("max_mr_size");
    /** {@code ibv_device_attr.vendor_id}. */
    public static final long DEVICE_ATTR_VENDOR_ID = IBV_DEVICE_ATTR.offset("vendor_id");
    /** {@code ibv_device_attr.vendor_part_id}. */
    public static final long DEVICE_ATTR_VENDOR_PART_ID = IBV_DEVICE_ATTR.offset("vendor_part_id");
    /** {@code ibv_device_attr.max_qp}. */
    public static final long DEVICE_ATTR_MAX_QP = IBV_DEVICE_ATTR.offset("max_qp");
    /** {@code ibv_device_attr.max_qp_wr}. */
    public static final long DEVICE_ATTR_MAX_QP_WR = IBV_DEVICE_ATTR.offset("max_qp_wr");
    /** {@code ibv_device_attr.device_cap_flags}. */
    public static final long DEVICE_ATTR_DEVICE_CAP_FLAGS = IBV_DEVICE_ATTR.offset("device_cap_flags");
    /** {@code ibv_device_attr.max_sge}. */
    public static final long DEVICE_ATTR_MAX_SGE = IBV_DEVICE_ATTR.offset("max_sge");
    /** {@code ibv_device_attr.max_cq}. */
    public static final long DEVICE_ATTR_MAX_CQ = IBV_DEVICE_ATTR.offset("max_cq");
    /** {@code ibv_device_attr.max_cqe}. */
    public static final long DEVICE_ATTR_MAX_CQE = IBV_DEVICE_ATTR.offset("max_cqe");
    /** {@code ibv_device_attr.max_mr}. */
    public static final long DEVICE_ATTR_MAX_MR = IBV_DEVICE_ATTR.offset("max_mr");
    /** {@code ibv_device_attr.max_pd}. */
    public static final long DEVICE_ATTR_MAX_PD = IBV_DEVICE_ATTR.offset("max_pd");
    /** {@code ibv_device_attr.max_qp_rd_atom}. */
    public static final long DEVICE_ATTR_MAX_QP_RD_ATOM = IBV_DEVICE_ATTR.offset("max_qp_rd_atom");
    /** {@code ibv_device_attr.max_qp_init_rd_atom}. */
    public static final long DEVICE_ATTR_MAX_QP_INIT_RD_ATOM = IBV_DEVICE_ATTR.offset("max_qp_init_rd_atom");
    /** {@code ibv_device_attr.atomic_cap}. */
    public static final long DEVICE_ATTR_ATOMIC_CAP = IBV_DEVICE_ATTR.offset("atomic_cap");
    /** {@code ibv_device_attr.max_srq}. */
    public static final long DEVICE_ATTR_MAX_SRQ = IBV_DEVICE_ATTR.offset("max_srq");
    /** {@code ibv_device_attr.max_srq_wr}. */
    public static final long DEVICE_ATTR_MAX_SRQ_WR = IBV_DEVICE_ATTR.offset("max_srq_wr");
    /** {@code ibv_device_attr.max_srq_sge}. */
    public static final long DEVICE_ATTR_MAX_SRQ_SGE = IBV_DEVICE_ATTR.offset("max_srq_sge");
    /** {@code ibv_device_attr.max_pkeys}. */
    public static final long DEVICE_ATTR_MAX_PKEYS = IBV_DEVICE_ATTR.offset("max_pkeys");
    /** {@code ibv_device_attr.phys_port_cnt}. */
    public static final long DEVICE_ATTR_PHYS_PORT_CNT = IBV_DEVICE_ATTR.offset("phys_port_cnt");

    /**
     * {@code struct ibv_port_attr} as of rdma-core 44 (52 bytes). Later versions append members; the length passed
     * to the {@code query_port} op is {@link #PORT_ATTR_SIZE}, so they are never written.
     */
    public static final CStruct IBV_PORT_ATTR = CStruct.struct("struct ibv_port_attr",
        u32("state"), u32("max_mtu"), u32("active_mtu"), u32("gid_tbl_len"), u32("port_cap_flags"),
        u32("max_msg_sz"), u32("bad_pkey_cntr"), u32("qkey_viol_cntr"), u16("pkey_tbl_len"), u16("lid"),
        u16("sm_lid"), u8("lmc"), u8("max_vl_num"), u8("sm_sl"), u8("subnet_timeout"), u8("init_type_reply"),
        u8("active_width"), u8("active_speed"), u8("phys_state"), u8("link_layer"), u8("flags"),
        u16("port_cap_flags2"));
    /** {@code sizeof(struct ibv_port_attr)}. */
    public static final long PORT_ATTR_SIZE = IBV_PORT_ATTR.size();
    /** {@code ibv_port_attr.state}. */
    public static final long PORT_ATTR_STATE = IBV_PORT_ATTR.offset("state");
    /** {@code ibv_port_attr.max_mtu}. */
    public static final long PORT_ATTR_MAX_MTU = IBV_PORT_ATTR.offset("max_mtu");
    /** {@code ibv_port_attr.active_mtu}. */
    public static final long PORT_ATTR_ACTIVE_MTU = IBV_PORT_ATTR.offset("active_mtu");
    /** {@code ibv_port_attr.gid_tbl_len}. */
    public static final long PORT_ATTR_GID_TBL_LEN = IBV_PORT_ATTR.offset("gid_tbl_len");
    /** {@code ibv_port_attr.max_msg_sz}. */
    public static final long PORT_ATTR_MAX_MSG_SZ = IBV_PORT_ATTR.offset("max_msg_sz");
    /** {@code ibv_port_attr.lid}. */
    public static final long PORT_ATTR_LID = IBV_PORT_ATTR.offset("lid");
    /** {@code ibv_port_attr.link_layer}. */
    public static final long PORT_ATTR_LINK_LAYER = IBV_PORT_ATTR.offset("link_layer");

    private IbvDeviceLayouts() {
    }
}
