package io.rdmachannel.ffm.layout;

import static io.rdmachannel.ffm.layout.CStruct.unionLayout;
import static io.rdmachannel.ffm.layout.CTypes.pointer;
import static io.rdmachannel.ffm.layout.CTypes.u16;
import static io.rdmachannel.ffm.layout.CTypes.u32;
import static io.rdmachannel.ffm.layout.CTypes.u64;
import static io.rdmachannel.ffm.layout.CTypes.u8;

import java.lang.foreign.MemoryLayout;

/**
 * librdmacm: {@code rdma_event_channel}, {@code rdma_cm_id} (with {@code rdma_route}, {@code rdma_addr},
 * {@code rdma_ib_addr}), {@code rdma_conn_param}, {@code rdma_ud_param}, {@code rdma_cm_event} and
 * {@code rdma_addrinfo}.
 */
public final class RdmaCmLayouts {
    private static final CConstants C = new CConstants();

    /** {@code RDMA_PS_TCP}: the port space of reliable-connected ids. */
    public static final int RDMA_PS_TCP = C.value("RDMA_PS_TCP", 0x106);
    /** {@code RDMA_PS_UDP}. */
    public static final int RDMA_PS_UDP = C.value("RDMA_PS_UDP", 0x111);
    /** {@code RDMA_PS_IB}. */
    public static final int RDMA_PS_IB = C.value("RDMA_PS_IB", 0x13f);
    /** {@code RAI_PASSIVE}. */
    public static final int RAI_PASSIVE = C.value("RAI_PASSIVE", 1);
    /** {@code RAI_NUMERICHOST}. */
    public static final int RAI_NUMERICHOST = C.value("RAI_NUMERICHOST", 2);
    /** {@code RAI_NOROUTE}. */
    public static final int RAI_NOROUTE = C.value("RAI_NOROUTE", 4);
    /** {@code RAI_FAMILY}. */
    public static final int RAI_FAMILY = C.value("RAI_FAMILY", 8);

    /** {@code struct rdma_event_channel}. */
    public static final CStruct RDMA_EVENT_CHANNEL = CStruct.struct("struct rdma_event_channel", u32("fd"));
    /** {@code rdma_event_channel.fd}: make it non-blocking, then wait on it with epoll. */
    public static final long EVENT_CHANNEL_FD = RDMA_EVENT_CHANNEL.offset("fd");

    /** {@code struct rdma_ib_addr}. */
    public static final CStruct RDMA_IB_ADDR = CStruct.struct("struct rdma_ib_addr",
        IbvQpLayouts.IBV_GID.layout().withName("sgid"), IbvQpLayouts.IBV_GID.layout().withName("dgid"),
        u16("pkey"));

    /** {@code struct rdma_addr}: source and destination as anonymous unions of socket addresses. */
    public static final CStruct RDMA_ADDR = CStruct.struct("struct rdma_addr",
        unionLayout("$src", SockAddrLayouts.SOCKADDR.layout().withName("src_addr"),
            SockAddrLayouts.SOCKADDR_IN.layout().withName("src_sin"),
            SockAddrLayouts.SOCKADDR_IN6.layout().withName("src_sin6"),
            SockAddrLayouts.SOCKADDR_STORAGE.layout().withName("src_storage")),
        unionLayout("$dst", SockAddrLayouts.SOCKADDR.layout().withName("dst_addr"),
            SockAddrLayouts.SOCKADDR_IN.layout().withName("dst_sin"),
            SockAddrLayouts.SOCKADDR_IN6.layout().withName("dst_sin6"),
            SockAddrLayouts.SOCKADDR_STORAGE.layout().withName("dst_storage")),
        unionLayout("addr", RDMA_IB_ADDR.layout().withName("ibaddr")));

    /** {@code struct rdma_route}. */
    public static final CStruct RDMA_ROUTE = CStruct.struct("struct rdma_route",
        RDMA_ADDR.layout().withName("addr"), pointer("path_rec"), u32("num_paths"));

    /** {@code struct rdma_cm_id}. */
    public static final CStruct RDMA_CM_ID = CStruct.struct("struct rdma_cm_id",
        pointer("verbs"), pointer("channel"), pointer("context"), pointer("qp"),
        RDMA_ROUTE.layout().withName("route"), u32("ps"), u8("port_num"), pointer("event"),
        pointer("send_cq_channel"), pointer("send_cq"), pointer("recv_cq_channel"), pointer("recv_cq"),
        pointer("srq"), pointer("pd"), u32("qp_type"));
    /** {@code rdma_cm_id.verbs}: the {@code ibv_context *}, set once the address is bound or resolved. */
    public static final long CM_ID_VERBS = RDMA_CM_ID.offset("verbs");
    /** {@code rdma_cm_id.channel}. */
    public static final long CM_ID_CHANNEL = RDMA_CM_ID.offset("channel");
    /** {@code rdma_cm_id.context}. */
    public static final long CM_ID_CONTEXT = RDMA_CM_ID.offset("context");
    /** {@code rdma_cm_id.qp}. */
    public static final long CM_ID_QP = RDMA_CM_ID.offset("qp");
    /** {@code rdma_cm_id.route.addr.src_addr}: what the inline {@code rdma_get_local_addr} returns. */
    public static final long CM_ID_SRC_ADDR = RDMA_CM_ID.offset("route.addr.src_addr");
    /** {@code rdma_cm_id.route.addr.dst_addr}: what the inline {@code rdma_get_peer_addr} returns. */
    public static final long CM_ID_DST_ADDR = RDMA_CM_ID.offset("route.addr.dst_addr");
    /** {@code rdma_cm_id.route.addr.addr.ibaddr}: source and destination GIDs and the P_Key. */
    public static final long CM_ID_IBADDR = RDMA_CM_ID.offset("route.addr.addr.ibaddr");
    /** {@code rdma_cm_id.ps}. */
    public static final long CM_ID_PS = RDMA_CM_ID.offset("ps");
    /** {@code rdma_cm_id.port_num}. */
    public static final long CM_ID_PORT_NUM = RDMA_CM_ID.offset("port_num");
    /** {@code rdma_cm_id.send_cq_channel}. */
    public static final long CM_ID_SEND_CQ_CHANNEL = RDMA_CM_ID.offset("send_cq_channel");
    /** {@code rdma_cm_id.send_cq}. */
    public static final long CM_ID_SEND_CQ = RDMA_CM_ID.offset("send_cq");
    /** {@code rdma_cm_id.recv_cq_channel}. */
    public static final long CM_ID_RECV_CQ_CHANNEL = RDMA_CM_ID.offset("recv_cq_channel");
    /** {@code rdma_cm_id.recv_cq}. */
    public static final long CM_ID_RECV_CQ = RDMA_CM_ID.offset("recv_cq");
    /** {@code rdma_cm_id.srq}. */
    public static final long CM_ID_SRQ = RDMA_CM_ID.offset("srq");
    /** {@code rdma_cm_id.pd}. */
    public static final long CM_ID_PD = RDMA_CM_ID.offset("pd");

    private static final MemoryLayout[] CONN_PARAM_MEMBERS = {
        pointer("private_data"), u8("private_data_len"), u8("responder_resources"), u8("initiator_depth"),
        u8("flow_control"), u8("retry_count"), u8("rnr_retry_count"), u8("srq"), u32("qp_num"),
    };

    /** {@code struct rdma_conn_param}. */
    public static final CStruct RDMA_CONN_PARAM = CStruct.struct("struct rdma_conn_param", CONN_PARAM_MEMBERS);
    /** {@code sizeof(struct rdma_conn_param)}. */
    public static final long CONN_PARAM_SIZE = RDMA_CONN_PARAM.size();
    /** {@code rdma_conn_param.private_data}. */
    public static final long CONN_PARAM_PRIVATE_DATA = RDMA_CONN_PARAM.offset("private_data");
    /** {@code rdma_conn_param.private_data_len}. */
    public static final long CONN_PARAM_PRIVATE_DATA_LEN = RDMA_CONN_PARAM.offset("private_data_len");
    /** {@code rdma_conn_param.responder_resources}. */
    public static final long CONN_PARAM_RESPONDER_RESOURCES = RDMA_CONN_PARAM.offset("responder_resources");
    /** {@code rdma_conn_param.initiator_depth}. */
    public static final long CONN_PARAM_INITIATOR_DEPTH = RDMA_CONN_PARAM.offset("initiator_depth");
    /** {@code rdma_conn_param.flow_control}. */
    public static final long CONN_PARAM_FLOW_CONTROL = RDMA_CONN_PARAM.offset("flow_control");
    /** {@code rdma_conn_param.retry_count}. */
    public static final long CONN_PARAM_RETRY_COUNT = RDMA_CONN_PARAM.offset("retry_count");
    /** {@code rdma_conn_param.rnr_retry_count}. */
    public static final long CONN_PARAM_RNR_RETRY_COUNT = RDMA_CONN_PARAM.offset("rnr_retry_count");
    /** {@code rdma_conn_param.srq}. */
    public static final long CONN_PARAM_SRQ = RDMA_CONN_PARAM.offset("srq");
    /** {@code rdma_conn_param.qp_num}. */
    public static final long CONN_PARAM_QP_NUM = RDMA_CONN_PARAM.offset("qp_num");

    /** {@code struct rdma_ud_param}. */
    public static final CStruct RDMA_UD_PARAM = CStruct.struct("struct rdma_ud_param",
        pointer("private_data"), u8("private_data_len"), IbvQpLayouts.IBV_AH_ATTR.layout().withName("ah_attr"),
        u32("qp_num"), u32("qkey"));

    /** {@code struct rdma_cm_event}. */
    public static final CStruct RDMA_CM_EVENT = CStruct.struct("struct rdma_cm_event",
        pointer("id"), pointer("listen_id"), u32("event"), u32("status"),
        unionLayout("param", RDMA_CONN_PARAM.layout().withName("conn"), RDMA_UD_PARAM.layout().withName("ud")));
    /** {@code rdma_cm_event.id}: for CONNECT_REQUEST, the new child id. */
    public static final long CM_EVENT_ID = RDMA_CM_EVENT.offset("id");
    /** {@code rdma_cm_event.listen_id}. */
    public static final long CM_EVENT_LISTEN_ID = RDMA_CM_EVENT.offset("listen_id");
    /** {@code rdma_cm_event.event}. */
    public static final long CM_EVENT_EVENT = RDMA_CM_EVENT.offset("event");
    /** {@code rdma_cm_event.status}. */
    public static final long CM_EVENT_STATUS = RDMA_CM_EVENT.offset("status");
    /** {@code rdma_cm_event.param.conn}: add the {@code CONN_PARAM_*} offsets. */
    public static final long CM_EVENT_CONN = RDMA_CM_EVENT.offset("param.conn");

    /** {@code struct rdma_addrinfo}. */
    public static final CStruct RDMA_ADDRINFO = CStruct.struct("struct rdma_addrinfo",
        u32("ai_flags"), u32("ai_family"), u32("ai_qp_type"), u32("ai_port_space"), u32("ai_src_len"),
        u32("ai_dst_len"), pointer("ai_src_addr"), pointer("ai_dst_addr"), pointer("ai_src_canonname"),
        pointer("ai_dst_canonname"), u64("ai_route_len"), pointer("ai_route"), u64("ai_connect_len"),
        pointer("ai_connect"), pointer("ai_next"));
    /** {@code sizeof(struct rdma_addrinfo)}. */
    public static final long ADDRINFO_SIZE = RDMA_ADDRINFO.size();
    /** {@code rdma_addrinfo.ai_flags}. */
    public static final long ADDRINFO_FLAGS = RDMA_ADDRINFO.offset("ai_flags");
    /** {@code rdma_addrinfo.ai_family}. */
    public static final long ADDRINFO_FAMILY = RDMA_ADDRINFO.offset("ai_family");
    /** {@code rdma_addrinfo.ai_qp_type}. */
    public static final long ADDRINFO_QP_TYPE = RDMA_ADDRINFO.offset("ai_qp_type");
    /** {@code rdma_addrinfo.ai_port_space}. */
    public static final long ADDRINFO_PORT_SPACE = RDMA_ADDRINFO.offset("ai_port_space");
    /** {@code rdma_addrinfo.ai_src_len}. */
    public static final long ADDRINFO_SRC_LEN = RDMA_ADDRINFO.offset("ai_src_len");
    /** {@code rdma_addrinfo.ai_dst_len}. */
    public static final long ADDRINFO_DST_LEN = RDMA_ADDRINFO.offset("ai_dst_len");
    /** {@code rdma_addrinfo.ai_src_addr}. */
    public static final long ADDRINFO_SRC_ADDR = RDMA_ADDRINFO.offset("ai_src_addr");
    /** {@code rdma_addrinfo.ai_dst_addr}. */
    public static final long ADDRINFO_DST_ADDR = RDMA_ADDRINFO.offset("ai_dst_addr");
    /** {@code rdma_addrinfo.ai_next}. */
    public static final long ADDRINFO_NEXT = RDMA_ADDRINFO.offset("ai_next");

    private RdmaCmLayouts() {
    }
}
