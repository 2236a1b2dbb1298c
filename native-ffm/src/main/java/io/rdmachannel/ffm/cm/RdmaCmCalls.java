package io.rdmachannel.ffm.cm;

import static io.rdmachannel.ffm.internal.ErrorPolicy.ADDRINFO_CODE;
import static io.rdmachannel.ffm.internal.ErrorPolicy.MINUS_ONE_SETS_ERRNO;
import static io.rdmachannel.ffm.internal.ErrorPolicy.NULL_SETS_ERRNO;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.rdmachannel.ffm.NativeCallException;
import io.rdmachannel.ffm.internal.Downcalls;
import io.rdmachannel.ffm.internal.ErrorPolicy;
import io.rdmachannel.ffm.internal.Errno;
import io.rdmachannel.ffm.internal.NativeLibrary;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The librdmacm functions a provider needs, one {@code static final} handle each and a thin wrapper applying the
 * function's {@link ErrorPolicy} (0, or -1 with errno; {@code rdma_getaddrinfo} may also return an {@code EAI_*}
 * code). Use ids in asynchronous mode, on an event channel whose fd is non-blocking: then no call here blocks, and
 * {@link #getCmEvent(MemorySegment, MemorySegment)} answers "no event" instead of waiting. None is critical.
 *
 * <p>Loading this class never fails: a missing library or symbol yields handles that throw
 * {@link UnsatisfiedLinkError}, and is reported by {@code RdmaNative.unavailabilityCause()}.
 */
public final class RdmaCmCalls {
    private static final Linker.Option CAPTURE = Errno.CAPTURE;

    static final MethodHandle RDMA_CREATE_EVENT_CHANNEL = Downcalls.link(NativeLibrary.RDMACM,
        "rdma_create_event_channel",
        FunctionDescriptor.of(ADDRESS), CAPTURE);
    static final MethodHandle RDMA_CREATE_ID = Downcalls.link(NativeLibrary.RDMACM, "rdma_create_id",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT), CAPTURE);
    static final MethodHandle RDMA_DESTROY_ID = Downcalls.link(NativeLibrary.RDMACM, "rdma_destroy_id",
        FunctionDescriptor.of(JAVA_INT, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_BIND_ADDR = Downcalls.link(NativeLibrary.RDMACM, "rdma_bind_addr",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_RESOLVE_ADDR = Downcalls.link(NativeLibrary.RDMACM, "rdma_resolve_addr",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, JAVA_INT), CAPTURE);
    static final MethodHandle RDMA_RESOLVE_ROUTE = Downcalls.link(NativeLibrary.RDMACM, "rdma_resolve_route",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), CAPTURE);
    static final MethodHandle RDMA_LISTEN = Downcalls.link(NativeLibrary.RDMACM, "rdma_listen",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), CAPTURE);
    static final MethodHandle RDMA_CONNECT = Downcalls.link(NativeLibrary.RDMACM, "rdma_connect",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_ACCEPT = Downcalls.link(NativeLibrary.RDMACM, "rdma_accept",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_REJECT = Downcalls.link(NativeLibrary.RDMACM, "rdma_reject",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_BYTE), CAPTURE);
    static final MethodHandle RDMA_DISCONNECT = Downcalls.link(NativeLibrary.RDMACM, "rdma_disconnect",
        FunctionDescriptor.of(JAVA_INT, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_ACK_CM_EVENT = Downcalls.link(NativeLibrary.RDMACM, "rdma_ack_cm_event",
        FunctionDescriptor.of(JAVA_INT, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_CREATE_QP = Downcalls.link(NativeLibrary.RDMACM, "rdma_create_qp",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_DESTROY_EVENT_CHANNEL = Downcalls.link(NativeLibrary.RDMACM,
        "rdma_destroy_event_channel", FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle RDMA_GET_CM_EVENT = Downcalls.link(NativeLibrary.RDMACM, "rdma_get_cm_event",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_EVENT_STR = Downcalls.link(NativeLibrary.RDMACM, "rdma_event_str",
        FunctionDescriptor.of(ADDRESS, JAVA_INT));
    static final MethodHandle RDMA_GETADDRINFO = Downcalls.link(NativeLibrary.RDMACM, "rdma_getaddrinfo",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle RDMA_FREEADDRINFO = Downcalls.link(NativeLibrary.RDMACM, "rdma_freeaddrinfo",
        FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle RDMA_DESTROY_QP = Downcalls.link(NativeLibrary.RDMACM, "rdma_destroy_qp",
        FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle RDMA_GET_SRC_PORT = Downcalls.link(NativeLibrary.RDMACM, "rdma_get_src_port",
        FunctionDescriptor.of(JAVA_SHORT, ADDRESS));
    static final MethodHandle RDMA_GET_DST_PORT = Downcalls.link(NativeLibrary.RDMACM, "rdma_get_dst_port",
        FunctionDescriptor.of(JAVA_SHORT, ADDRESS));

    private static final long MAX_STRING = 4096;

    private RdmaCmCalls() {
    }

    /**
     * {@code rdma_create_event_channel}.
     *
     * @return the rdma_event_channel; ENODEV without /dev/infiniband/rdma_cm.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment createEventChannel() throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) RDMA_CREATE_EVENT_CHANNEL.invokeExact(state);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("rdma_create_event_channel", result.address(), state);
        return result;
    }

    /**
     * {@code rdma_create_id}.
     *
     * @param channel the {@code channel} argument.
     * @param idOut the {@code idOut} argument.
     * @param context the {@code context} argument.
     * @param portSpace the {@code portSpace} argument.
     * @throws NativeCallException if it fails.
     */
    public static void createId(MemorySegment channel, MemorySegment idOut, MemorySegment context, int portSpace)
        throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_CREATE_ID.invokeExact(state, channel, idOut, context, portSpace);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_create_id", result, state);
    }

    /**
     * {@code rdma_destroy_id}.
     *
     * @param id the {@code id} argument.
     * @throws NativeCallException if it fails.
     */
    public static void destroyId(MemorySegment id) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_DESTROY_ID.invokeExact(state, id);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_destroy_id", result, state);
    }

    /**
     * {@code rdma_bind_addr}.
     *
     * @param id the {@code id} argument.
     * @param address the {@code address} argument.
     * @throws NativeCallException if it fails.
     */
    public static void bindAddr(MemorySegment id, MemorySegment address) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_BIND_ADDR.invokeExact(state, id, address);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_bind_addr", result, state);
    }

    /**
     * {@code rdma_resolve_addr}.
     *
     * @param id the {@code id} argument.
     * @param source the {@code source} argument.
     * @param destination the {@code destination} argument.
     * @param timeoutMillis the {@code timeoutMillis} argument.
     * @throws NativeCallException if it fails.
     */
    public static void resolveAddr(MemorySegment id, MemorySegment source, MemorySegment destination, int timeoutMillis)
        throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_RESOLVE_ADDR.invokeExact(state, id, source, destination, timeoutMillis);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_resolve_addr", result, state);
    }

    /**
     * {@code rdma_resolve_route}.
     *
     * @param id the {@code id} argument.
     * @param timeoutMillis the {@code timeoutMillis} argument.
     * @throws NativeCallException if it fails.
     */
    public static void resolveRoute(MemorySegment id, int timeoutMillis) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_RESOLVE_ROUTE.invokeExact(state, id, timeoutMillis);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_resolve_route", result, state);
    }

    /**
     * {@code rdma_listen}.
     *
     * @param id the {@code id} argument.
     * @param backlog the {@code backlog} argument.
     * @throws NativeCallException if it fails.
     */
    public static void listen(MemorySegment id, int backlog) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_LISTEN.invokeExact(state, id, backlog);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_listen", result, state);
    }

    /**
     * {@code rdma_connect}.
     *
     * @param id the {@code id} argument.
     * @param connParam the {@code connParam} argument.
     * @throws NativeCallException if it fails.
     */
    public static void connect(MemorySegment id, MemorySegment connParam) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_CONNECT.invokeExact(state, id, connParam);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_connect", result, state);
    }

    /**
     * {@code rdma_accept}.
     *
     * @param id the {@code id} argument.
     * @param connParam the {@code connParam} argument.
     * @throws NativeCallException if it fails.
     */
    public static void accept(MemorySegment id, MemorySegment connParam) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_ACCEPT.invokeExact(state, id, connParam);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_accept", result, state);
    }

    /**
     * {@code rdma_reject}.
     *
     * @param id the {@code id} argument.
     * @param privateData the {@code privateData} argument.
     * @param privateDataLength the {@code privateDataLength} argument.
     * @throws NativeCallException if it fails.
     */
    public static void reject(MemorySegment id, MemorySegment privateData, byte privateDataLength)
        throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_REJECT.invokeExact(state, id, privateData, privateDataLength);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_reject", result, state);
    }

    /**
     * {@code rdma_disconnect}.
     *
     * @param id the {@code id} argument.
     * @throws NativeCallException if it fails.
     */
    public static void disconnect(MemorySegment id) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_DISCONNECT.invokeExact(state, id);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_disconnect", result, state);
    }

    /**
     * {@code rdma_ack_cm_event}.
     *
     * @param event the {@code event} argument.
     * @throws NativeCallException if it fails.
     */
    public static void ackCmEvent(MemorySegment event) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_ACK_CM_EVENT.invokeExact(state, event);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_ack_cm_event", result, state);
    }

    /**
     * {@code rdma_create_qp}.
     *
     * @param id the {@code id} argument.
     * @param pd the {@code pd} argument.
     * @param initAttr the {@code initAttr} argument.
     * @throws NativeCallException if it fails.
     */
    public static void createQp(MemorySegment id, MemorySegment pd, MemorySegment initAttr) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_CREATE_QP.invokeExact(state, id, pd, initAttr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("rdma_create_qp", result, state);
    }

    /**
     * {@code rdma_destroy_event_channel}; every id on it must be destroyed first.
     *
     * @param channel the {@code rdma_event_channel}.
     */
    public static void destroyEventChannel(MemorySegment channel) {
        try {
            RDMA_DESTROY_EVENT_CHANNEL.invokeExact(channel);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code rdma_get_cm_event} on a non-blocking event channel.
     *
     * @param channel the {@code rdma_event_channel}, its fd set non-blocking.
     * @param eventOut where the {@code rdma_cm_event *} is stored; copy it out, then {@link #ackCmEvent}.
     * @return true if an event was taken, false if none was pending.
     * @throws NativeCallException if it fails.
     */
    public static boolean getCmEvent(MemorySegment channel, MemorySegment eventOut) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_GET_CM_EVENT.invokeExact(state, channel, eventOut);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        return MINUS_ONE_SETS_ERRNO.checkNonBlocking("rdma_get_cm_event", result, state) != ErrorPolicy.WOULD_BLOCK;
    }

    /**
     * {@code rdma_event_str}.
     *
     * @param event an {@code rdma_cm_event.event}.
     * @return e.g. {@code RDMA_CM_EVENT_ESTABLISHED}.
     */
    public static String eventStr(int event) {
        try {
            MemorySegment text = (MemorySegment) RDMA_EVENT_STR.invokeExact(event);
            return text.equals(MemorySegment.NULL) ? "event " + event : text.reinterpret(MAX_STRING).getString(0);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code rdma_getaddrinfo}.
     *
     * @param node a C string (host, IP address, or GID in IPv6 form with {@code AF_IB}), or NULL.
     * @param service a C string (port), or NULL.
     * @param hints a {@code struct rdma_addrinfo}, or NULL.
     * @param resultOut where the {@code rdma_addrinfo *} list is stored; free it with {@link #freeAddrInfo}.
     * @throws NativeCallException if it fails, with an errno or an {@code EAI_*} code.
     */
    public static void getAddrInfo(MemorySegment node, MemorySegment service, MemorySegment hints,
        MemorySegment resultOut) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) RDMA_GETADDRINFO.invokeExact(state, node, service, hints, resultOut);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        ADDRINFO_CODE.check("rdma_getaddrinfo", result, state);
    }

    /**
     * {@code rdma_freeaddrinfo}.
     *
     * @param list the list from {@link #getAddrInfo}.
     */
    public static void freeAddrInfo(MemorySegment list) {
        try {
            RDMA_FREEADDRINFO.invokeExact(list);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code rdma_destroy_qp}.
     *
     * @param id the {@code rdma_cm_id} whose QP to destroy.
     */
    public static void destroyQp(MemorySegment id) {
        try {
            RDMA_DESTROY_QP.invokeExact(id);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code rdma_get_src_port}.
     *
     * @param id the {@code rdma_cm_id}.
     * @return the port in host order.
     */
    public static int getSrcPort(MemorySegment id) {
        try {
            return Short.toUnsignedInt(Short.reverseBytes((short) RDMA_GET_SRC_PORT.invokeExact(id)));
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code rdma_get_dst_port}.
     *
     * @param id the {@code rdma_cm_id}.
     * @return the port in host order.
     */
    public static int getDstPort(MemorySegment id) {
        try {
            return Short.toUnsignedInt(Short.reverseBytes((short) RDMA_GET_DST_PORT.invokeExact(id)));
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }
}
