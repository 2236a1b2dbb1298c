package io.rdmachannel.ffm.layout;

import static io.rdmachannel.ffm.layout.CStruct.structLayout;
import static io.rdmachannel.ffm.layout.CStruct.unionLayout;
import static io.rdmachannel.ffm.layout.CTypes.chars;
import static io.rdmachannel.ffm.layout.CTypes.opaque8;
import static io.rdmachannel.ffm.layout.CTypes.u16;
import static io.rdmachannel.ffm.layout.CTypes.u32;
import static io.rdmachannel.ffm.layout.CTypes.u64;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.MemoryLayout;

/**
 * Socket addresses the RDMA CM takes and returns: {@code sockaddr}, {@code sockaddr_in}, {@code sockaddr_in6},
 * {@code sockaddr_ib} (AF_IB: GID, P_Key, service ID) and {@code sockaddr_storage}. Ports, addresses, P_Keys,
 * flow labels and service IDs are in network byte order; the family is in host order.
 */
public final class SockAddrLayouts {
    private static final CConstants C = new CConstants();

    /** {@code AF_INET}. */
    public static final int AF_INET = C.value("AF_INET", 2);
    /** {@code AF_INET6}. */
    public static final int AF_INET6 = C.value("AF_INET6", 10);
    /** {@code AF_IB}. */
    public static final int AF_IB = C.value("AF_IB", 27);

    /** {@code struct sockaddr}. */
    public static final CStruct SOCKADDR = CStruct.struct("struct sockaddr", u16("sa_family"), chars("sa_data", 14));
    /** {@code sockaddr.sa_family}, common to every socket address. */
    public static final long SA_FAMILY = SOCKADDR.offset("sa_family");

    /** {@code struct sockaddr_in}. */
    public static final CStruct SOCKADDR_IN = CStruct.struct("struct sockaddr_in",
        u16("sin_family"), u16("sin_port"), structLayout("sin_addr", u32("s_addr")), chars("sin_zero", 8));
    /** {@code sizeof(struct sockaddr_in)}. */
    public static final long SOCKADDR_IN_SIZE = SOCKADDR_IN.size();
    /** {@code sockaddr_in.sin_port}. */
    public static final long SIN_PORT = SOCKADDR_IN.offset("sin_port");
    /** {@code sockaddr_in.sin_addr}. */
    public static final long SIN_ADDR = SOCKADDR_IN.offset("sin_addr");

    /** {@code struct sockaddr_in6}. */
    public static final CStruct SOCKADDR_IN6 = CStruct.struct("struct sockaddr_in6",
        u16("sin6_family"), u16("sin6_port"), u32("sin6_flowinfo"),
        MemoryLayout.sequenceLayout(4, JAVA_INT).withName("sin6_addr"), u32("sin6_scope_id"));
    /** {@code sizeof(struct sockaddr_in6)}. */
    public static final long SOCKADDR_IN6_SIZE = SOCKADDR_IN6.size();
    /** {@code sockaddr_in6.sin6_port}. */
    public static final long SIN6_PORT = SOCKADDR_IN6.offset("sin6_port");
    /** {@code sockaddr_in6.sin6_flowinfo}. */
    public static final long SIN6_FLOWINFO = SOCKADDR_IN6.offset("sin6_flowinfo");
    /** {@code sockaddr_in6.sin6_addr}. */
    public static final long SIN6_ADDR = SOCKADDR_IN6.offset("sin6_addr");
    /** {@code sockaddr_in6.sin6_scope_id} (host order). */
    public static final long SIN6_SCOPE_ID = SOCKADDR_IN6.offset("sin6_scope_id");

    /** {@code struct sockaddr_ib}; {@code sib_addr} is 8-aligned because {@code ib_addr} holds {@code __be64}s. */
    public static final CStruct SOCKADDR_IB = CStruct.struct("struct sockaddr_ib",
        u16("sib_family"), u16("sib_pkey"), u32("sib_flowinfo"),
        structLayout("sib_addr", unionLayout("ib_u", chars("uib_addr8", 16), opaque8("uib_addr64", 16))),
        u64("sib_sid"), u64("sib_sid_mask"), u64("sib_scope_id"));
    /** {@code sizeof(struct sockaddr_ib)}. */
    public static final long SOCKADDR_IB_SIZE = SOCKADDR_IB.size();
    /** {@code sockaddr_ib.sib_pkey}. */
    public static final long SIB_PKEY = SOCKADDR_IB.offset("sib_pkey");
    /** {@code sockaddr_ib.sib_flowinfo}. */
    public static final long SIB_FLOWINFO = SOCKADDR_IB.offset("sib_flowinfo");
    /** {@code sockaddr_ib.sib_addr}: the GID. */
    public static final long SIB_ADDR = SOCKADDR_IB.offset("sib_addr");
    /** {@code sockaddr_ib.sib_sid}: the service ID. */
    public static final long SIB_SID = SOCKADDR_IB.offset("sib_sid");
    /** {@code sockaddr_ib.sib_sid_mask}. */
    public static final long SIB_SID_MASK = SOCKADDR_IB.offset("sib_sid_mask");
    /** {@code sockaddr_ib.sib_scope_id}. */
    public static final long SIB_SCOPE_ID = SOCKADDR_IB.offset("sib_scope_id");

    /** {@code struct sockaddr_storage}: room for any of the above. */
    public static final CStruct SOCKADDR_STORAGE = CStruct.struct("struct sockaddr_storage",
        u16("ss_family"), chars("__ss_padding", 118), u64("__ss_align"));
    /** {@code sizeof(struct sockaddr_storage)}. */
    public static final long SOCKADDR_STORAGE_SIZE = SOCKADDR_STORAGE.size();

    private SockAddrLayouts() {
    }
}
