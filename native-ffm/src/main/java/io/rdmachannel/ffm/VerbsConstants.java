package io.rdmachannel.ffm;

import io.rdmachannel.ffm.layout.CConstants;

/**
 * The libibverbs enum values the provider passes to the verbs: attribute masks of {@code ibv_modify_qp}, MTU codes,
 * capability bits, link layers and transports. Registered with {@link CConstants}, so the layout test checks each one
 * against the C headers.
 */
final class VerbsConstants {
    private static final CConstants C = new CConstants();

    static final int IBV_QP_STATE = C.value("IBV_QP_STATE", 1);
    static final int IBV_QP_ACCESS_FLAGS = C.value("IBV_QP_ACCESS_FLAGS", 1 << 3);
    static final int IBV_QP_PKEY_INDEX = C.value("IBV_QP_PKEY_INDEX", 1 << 4);
    static final int IBV_QP_PORT = C.value("IBV_QP_PORT", 1 << 5);
    static final int IBV_QP_AV = C.value("IBV_QP_AV", 1 << 7);
    static final int IBV_QP_PATH_MTU = C.value("IBV_QP_PATH_MTU", 1 << 8);
    static final int IBV_QP_TIMEOUT = C.value("IBV_QP_TIMEOUT", 1 << 9);
    static final int IBV_QP_RETRY_CNT = C.value("IBV_QP_RETRY_CNT", 1 << 10);
    static final int IBV_QP_RNR_RETRY = C.value("IBV_QP_RNR_RETRY", 1 << 11);
    static final int IBV_QP_RQ_PSN = C.value("IBV_QP_RQ_PSN", 1 << 12);
    static final int IBV_QP_MAX_QP_RD_ATOMIC = C.value("IBV_QP_MAX_QP_RD_ATOMIC", 1 << 13);
    static final int IBV_QP_MIN_RNR_TIMER = C.value("IBV_QP_MIN_RNR_TIMER", 1 << 15);
    static final int IBV_QP_SQ_PSN = C.value("IBV_QP_SQ_PSN", 1 << 16);
    static final int IBV_QP_MAX_DEST_RD_ATOMIC = C.value("IBV_QP_MAX_DEST_RD_ATOMIC", 1 << 17);
    static final int IBV_QP_DEST_QPN = C.value("IBV_QP_DEST_QPN", 1 << 20);

    static final int IBV_QPT_RC = C.value("IBV_QPT_RC", 2);
    static final int IBV_MTU_256 = C.value("IBV_MTU_256", 1);
    static final int IBV_MTU_4096 = C.value("IBV_MTU_4096", 5);

    static final int IBV_DEVICE_XRC = C.value("IBV_DEVICE_XRC", 1 << 20);
    static final int IBV_XRCD_INIT_ATTR_FD = C.value("IBV_XRCD_INIT_ATTR_FD", 1);
    static final int IBV_XRCD_INIT_ATTR_OFLAGS = C.value("IBV_XRCD_INIT_ATTR_OFLAGS", 1 << 1);
    /** {@code O_CREAT} of {@code fcntl.h}, for {@code ibv_xrcd_init_attr.oflags}. */
    static final int O_CREAT = C.value("O_CREAT", 0100);
    static final int IBV_TRANSPORT_IB = C.value("IBV_TRANSPORT_IB", 0);
    static final int IBV_TRANSPORT_IWARP = C.value("IBV_TRANSPORT_IWARP", 1);
    static final int IBV_LINK_LAYER_INFINIBAND = C.value("IBV_LINK_LAYER_INFINIBAND", 1);
    static final int IBV_LINK_LAYER_ETHERNET = C.value("IBV_LINK_LAYER_ETHERNET", 2);
    static final int IBV_WC_WITH_IMM = C.value("IBV_WC_WITH_IMM", 1 << 1);
    static final int IBV_WC_WR_FLUSH_ERR = C.value("IBV_WC_WR_FLUSH_ERR", 5);
    static final int IBV_WC_FATAL_ERR = C.value("IBV_WC_FATAL_ERR", 19);
    static final int IBV_WC_RECV = C.value("IBV_WC_RECV", 128);

    static final int IBV_EVENT_CQ_ERR = C.value("IBV_EVENT_CQ_ERR", 0);
    static final int IBV_EVENT_QP_FATAL = C.value("IBV_EVENT_QP_FATAL", 1);
    static final int IBV_EVENT_QP_REQ_ERR = C.value("IBV_EVENT_QP_REQ_ERR", 2);
    static final int IBV_EVENT_QP_ACCESS_ERR = C.value("IBV_EVENT_QP_ACCESS_ERR", 3);
    static final int IBV_EVENT_DEVICE_FATAL = C.value("IBV_EVENT_DEVICE_FATAL", 8);
    static final int IBV_EVENT_PORT_ACTIVE = C.value("IBV_EVENT_PORT_ACTIVE", 9);
    static final int IBV_EVENT_PORT_ERR = C.value("IBV_EVENT_PORT_ERR", 10);
    static final int IBV_EVENT_SRQ_ERR = C.value("IBV_EVENT_SRQ_ERR", 14);
    static final int IBV_EVENT_SRQ_LIMIT_REACHED = C.value("IBV_EVENT_SRQ_LIMIT_REACHED", 15);
    static final int IBV_EVENT_QP_LAST_WQE_REACHED = C.value("IBV_EVENT_QP_LAST_WQE_REACHED", 16);
    static final int IBV_SRQ_LIMIT = C.value("IBV_SRQ_LIMIT", 1 << 1);
    static final int IBV_SRQT_XRC = C.value("IBV_SRQT_XRC", 1);
    static final int IBV_SRQ_INIT_ATTR_TYPE = C.value("IBV_SRQ_INIT_ATTR_TYPE", 1);
    static final int IBV_SRQ_INIT_ATTR_PD = C.value("IBV_SRQ_INIT_ATTR_PD", 1 << 1);
    static final int IBV_SRQ_INIT_ATTR_XRCD = C.value("IBV_SRQ_INIT_ATTR_XRCD", 1 << 2);
    static final int IBV_SRQ_INIT_ATTR_CQ = C.value("IBV_SRQ_INIT_ATTR_CQ", 1 << 3);
    static final int IBV_QP_INIT_ATTR_PD = C.value("IBV_QP_INIT_ATTR_PD", 1);
    static final int IBV_QP_INIT_ATTR_XRCD = C.value("IBV_QP_INIT_ATTR_XRCD", 1 << 1);
    static final int IBV_QP_OPEN_ATTR_NUM = C.value("IBV_QP_OPEN_ATTR_NUM", 1);
    static final int IBV_QP_OPEN_ATTR_XRCD = C.value("IBV_QP_OPEN_ATTR_XRCD", 1 << 1);
    static final int IBV_QP_OPEN_ATTR_CONTEXT = C.value("IBV_QP_OPEN_ATTR_CONTEXT", 1 << 2);
    static final int IBV_QP_OPEN_ATTR_TYPE = C.value("IBV_QP_OPEN_ATTR_TYPE", 1 << 3);

    private VerbsConstants() {
    }

    /**
     * The {@code enum ibv_mtu} code of a path MTU.
     *
     * @param bytes 256 to 4096, a power of two.
     * @return the code.
     */
    static int mtuCode(int bytes) {
        return IBV_MTU_256 + Integer.numberOfTrailingZeros(bytes) - Integer.numberOfTrailingZeros(256);
    }

    /**
     * The bytes of an {@code enum ibv_mtu} code.
     *
     * @param code the code, 1 to 5.
     * @return the MTU in bytes, 0 for an unknown code.
     */
    static int mtuBytes(int code) {
        return code >= IBV_MTU_256 && code <= IBV_MTU_4096 ? 256 << (code - IBV_MTU_256) : 0;
    }
}
