package io.rdmachannel.ffm.verbs;

import static io.rdmachannel.ffm.internal.ErrorPolicy.MINUS_ONE_SETS_ERRNO;
import static io.rdmachannel.ffm.internal.ErrorPolicy.NULL_SETS_ERRNO;
import static io.rdmachannel.ffm.internal.ErrorPolicy.RETURNS_ERRNO;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

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
 * The exported functions of libibverbs a provider needs, one {@code static final} handle each (named after the C
 * function) and a thin wrapper applying the function's {@link ErrorPolicy}. Pointer results are zero-length
 * segments: reinterpret them with the size from the layout classes. None of these is linked critical: they are
 * system calls. The {@code static inline} verbs are in {@link IbvInline}.
 *
 * <p>Loading this class never fails: a missing library or symbol yields handles that throw
 * {@link UnsatisfiedLinkError}, and is reported by {@code RdmaNative.unavailabilityCause()}.
 */
public final class IbvCalls {
    private static final Linker.Option CAPTURE = Errno.CAPTURE;

    static final MethodHandle IBV_GET_DEVICE_LIST = Downcalls.link(NativeLibrary.IBVERBS, "ibv_get_device_list",
        FunctionDescriptor.of(ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle IBV_OPEN_DEVICE = Downcalls.link(NativeLibrary.IBVERBS, "ibv_open_device",
        FunctionDescriptor.of(ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle IBV_CLOSE_DEVICE = Downcalls.link(NativeLibrary.IBVERBS, "ibv_close_device",
        FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle IBV_QUERY_DEVICE = Downcalls.link(NativeLibrary.IBVERBS, "ibv_query_device",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    static final MethodHandle IBV_QUERY_GID = Downcalls.link(NativeLibrary.IBVERBS, "ibv_query_gid",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, JAVA_INT, ADDRESS), CAPTURE);
    static final MethodHandle IBV_ALLOC_PD = Downcalls.link(NativeLibrary.IBVERBS, "ibv_alloc_pd",
        FunctionDescriptor.of(ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle IBV_DEALLOC_PD = Downcalls.link(NativeLibrary.IBVERBS, "ibv_dealloc_pd",
        FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle IBV_REG_MR_IOVA2 = Downcalls.link(NativeLibrary.IBVERBS, "ibv_reg_mr_iova2",
        FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS, JAVA_LONG, JAVA_LONG, JAVA_INT), CAPTURE);
    static final MethodHandle IBV_DEREG_MR = Downcalls.link(NativeLibrary.IBVERBS, "ibv_dereg_mr",
        FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle IBV_CREATE_COMP_CHANNEL = Downcalls.link(NativeLibrary.IBVERBS, "ibv_create_comp_channel",
        FunctionDescriptor.of(ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle IBV_DESTROY_COMP_CHANNEL = Downcalls.link(NativeLibrary.IBVERBS,
        "ibv_destroy_comp_channel",
        FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle IBV_CREATE_CQ = Downcalls.link(NativeLibrary.IBVERBS, "ibv_create_cq",
        FunctionDescriptor.of(ADDRESS, ADDRESS, JAVA_INT, ADDRESS, ADDRESS, JAVA_INT), CAPTURE);
    static final MethodHandle IBV_DESTROY_CQ = Downcalls.link(NativeLibrary.IBVERBS, "ibv_destroy_cq",
        FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle IBV_CREATE_QP = Downcalls.link(NativeLibrary.IBVERBS, "ibv_create_qp",
        FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle IBV_MODIFY_QP = Downcalls.link(NativeLibrary.IBVERBS, "ibv_modify_qp",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    static final MethodHandle IBV_QUERY_QP = Downcalls.link(NativeLibrary.IBVERBS, "ibv_query_qp",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, ADDRESS));
    static final MethodHandle IBV_DESTROY_QP = Downcalls.link(NativeLibrary.IBVERBS, "ibv_destroy_qp",
        FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle IBV_CREATE_SRQ = Downcalls.link(NativeLibrary.IBVERBS, "ibv_create_srq",
        FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle IBV_DESTROY_SRQ = Downcalls.link(NativeLibrary.IBVERBS, "ibv_destroy_srq",
        FunctionDescriptor.of(JAVA_INT, ADDRESS));
    static final MethodHandle IBV_MODIFY_SRQ = Downcalls.link(NativeLibrary.IBVERBS, "ibv_modify_srq",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT));
    static final MethodHandle IBV_FREE_DEVICE_LIST = Downcalls.link(NativeLibrary.IBVERBS, "ibv_free_device_list",
        FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle IBV_GET_DEVICE_NAME = Downcalls.link(NativeLibrary.IBVERBS, "ibv_get_device_name",
        FunctionDescriptor.of(ADDRESS, ADDRESS));
    static final MethodHandle IBV_QUERY_PORT = Downcalls.link(NativeLibrary.IBVERBS, "ibv_query_port",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS));
    static final MethodHandle IBV_GET_CQ_EVENT = Downcalls.link(NativeLibrary.IBVERBS, "ibv_get_cq_event",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle IBV_ACK_CQ_EVENTS = Downcalls.link(NativeLibrary.IBVERBS, "ibv_ack_cq_events",
        FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT));
    static final MethodHandle IBV_GET_ASYNC_EVENT = Downcalls.link(NativeLibrary.IBVERBS, "ibv_get_async_event",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), CAPTURE);
    static final MethodHandle IBV_ACK_ASYNC_EVENT = Downcalls.link(NativeLibrary.IBVERBS, "ibv_ack_async_event",
        FunctionDescriptor.ofVoid(ADDRESS));
    static final MethodHandle IBV_EVENT_TYPE_STR = Downcalls.link(NativeLibrary.IBVERBS, "ibv_event_type_str",
        FunctionDescriptor.of(ADDRESS, JAVA_INT));
    static final MethodHandle IBV_WC_STATUS_STR = Downcalls.link(NativeLibrary.IBVERBS, "ibv_wc_status_str",
        FunctionDescriptor.of(ADDRESS, JAVA_INT));

    private static final long MAX_STRING = 4096;

    private IbvCalls() {
    }

    /**
     * {@code ibv_get_device_list}.
     *
     * @param numDevices the {@code numDevices} argument.
     * @return the NULL-terminated device array; free it with freeDeviceList.
     * @throws NativeCallException if it fails; with ENOSYS when the kernel has no RDMA subsystem.
     */
    public static MemorySegment getDeviceList(MemorySegment numDevices) throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) IBV_GET_DEVICE_LIST.invokeExact(state, numDevices);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("ibv_get_device_list", result.address(), state);
        return result;
    }

    /**
     * {@code ibv_open_device}.
     *
     * @param device the {@code device} argument.
     * @return the ibv_context.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment openDevice(MemorySegment device) throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) IBV_OPEN_DEVICE.invokeExact(state, device);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("ibv_open_device", result.address(), state);
        return result;
    }

    /**
     * {@code ibv_close_device}.
     *
     * @param context the {@code context} argument.
     * @throws NativeCallException if it fails.
     */
    public static void closeDevice(MemorySegment context) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_CLOSE_DEVICE.invokeExact(context);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_close_device", result, null);
    }

    /**
     * {@code ibv_query_device}.
     *
     * @param context the {@code context} argument.
     * @param deviceAttr the {@code deviceAttr} argument.
     * @throws NativeCallException if it fails.
     */
    public static void queryDevice(MemorySegment context, MemorySegment deviceAttr) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_QUERY_DEVICE.invokeExact(context, deviceAttr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_query_device", result, null);
    }

    /**
     * {@code ibv_query_gid}.
     *
     * @param context the {@code context} argument.
     * @param portNumber the {@code portNumber} argument.
     * @param index the {@code index} argument.
     * @param gid the {@code gid} argument.
     * @throws NativeCallException if it fails.
     */
    public static void queryGid(MemorySegment context, byte portNumber, int index, MemorySegment gid)
        throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) IBV_QUERY_GID.invokeExact(state, context, portNumber, index, gid);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("ibv_query_gid", result, state);
    }

    /**
     * {@code ibv_alloc_pd}.
     *
     * @param context the {@code context} argument.
     * @return the ibv_pd.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment allocPd(MemorySegment context) throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) IBV_ALLOC_PD.invokeExact(state, context);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("ibv_alloc_pd", result.address(), state);
        return result;
    }

    /**
     * {@code ibv_dealloc_pd}.
     *
     * @param pd the {@code pd} argument.
     * @throws NativeCallException if it fails.
     */
    public static void deallocPd(MemorySegment pd) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_DEALLOC_PD.invokeExact(pd);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_dealloc_pd", result, null);
    }

    /**
     * {@code ibv_reg_mr_iova2}.
     *
     * @param pd the {@code pd} argument.
     * @param address the {@code address} argument.
     * @param length the {@code length} argument.
     * @param iova the {@code iova} argument.
     * @param access the {@code access} argument.
     * @return the ibv_mr.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment regMrIova2(MemorySegment pd, MemorySegment address, long length, long iova, int access)
        throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) IBV_REG_MR_IOVA2.invokeExact(state, pd, address, length, iova, access);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("ibv_reg_mr_iova2", result.address(), state);
        return result;
    }

    /**
     * {@code ibv_dereg_mr}.
     *
     * @param mr the {@code mr} argument.
     * @throws NativeCallException if it fails.
     */
    public static void deregMr(MemorySegment mr) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_DEREG_MR.invokeExact(mr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_dereg_mr", result, null);
    }

    /**
     * {@code ibv_create_comp_channel}.
     *
     * @param context the {@code context} argument.
     * @return the ibv_comp_channel.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment createCompChannel(MemorySegment context) throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) IBV_CREATE_COMP_CHANNEL.invokeExact(state, context);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("ibv_create_comp_channel", result.address(), state);
        return result;
    }

    /**
     * {@code ibv_destroy_comp_channel}.
     *
     * @param channel the {@code channel} argument.
     * @throws NativeCallException if it fails.
     */
    public static void destroyCompChannel(MemorySegment channel) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_DESTROY_COMP_CHANNEL.invokeExact(channel);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_destroy_comp_channel", result, null);
    }

    /**
     * {@code ibv_create_cq}.
     *
     * @param context the {@code context} argument.
     * @param cqe the {@code cqe} argument.
     * @param cqContext the {@code cqContext} argument.
     * @param channel the {@code channel} argument.
     * @param compVector the {@code compVector} argument.
     * @return the ibv_cq.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment createCq(MemorySegment context, int cqe, MemorySegment cqContext,
        MemorySegment channel, int compVector)
        throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) IBV_CREATE_CQ.invokeExact(state, context, cqe, cqContext, channel, compVector);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("ibv_create_cq", result.address(), state);
        return result;
    }

    /**
     * {@code ibv_destroy_cq}.
     *
     * @param cq the {@code cq} argument.
     * @throws NativeCallException if it fails.
     */
    public static void destroyCq(MemorySegment cq) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_DESTROY_CQ.invokeExact(cq);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_destroy_cq", result, null);
    }

    /**
     * {@code ibv_create_qp}.
     *
     * @param pd the {@code pd} argument.
     * @param initAttr the {@code initAttr} argument.
     * @return the ibv_qp.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment createQp(MemorySegment pd, MemorySegment initAttr) throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) IBV_CREATE_QP.invokeExact(state, pd, initAttr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("ibv_create_qp", result.address(), state);
        return result;
    }

    /**
     * {@code ibv_modify_qp}.
     *
     * @param qp the {@code qp} argument.
     * @param attr the {@code attr} argument.
     * @param attrMask the {@code attrMask} argument.
     * @throws NativeCallException if it fails.
     */
    public static void modifyQp(MemorySegment qp, MemorySegment attr, int attrMask) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_MODIFY_QP.invokeExact(qp, attr, attrMask);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_modify_qp", result, null);
    }

    /**
     * {@code ibv_query_qp}.
     *
     * @param qp the {@code qp} argument.
     * @param attr the {@code attr} argument.
     * @param attrMask the {@code attrMask} argument.
     * @param initAttr the {@code initAttr} argument.
     * @throws NativeCallException if it fails.
     */
    public static void queryQp(MemorySegment qp, MemorySegment attr, int attrMask, MemorySegment initAttr)
        throws NativeCallException {
        int result;
        try {
            result = (int) IBV_QUERY_QP.invokeExact(qp, attr, attrMask, initAttr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_query_qp", result, null);
    }

    /**
     * {@code ibv_destroy_qp}.
     *
     * @param qp the {@code qp} argument.
     * @throws NativeCallException if it fails.
     */
    public static void destroyQp(MemorySegment qp) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_DESTROY_QP.invokeExact(qp);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_destroy_qp", result, null);
    }

    /**
     * {@code ibv_create_srq}.
     *
     * @param pd the {@code pd} argument.
     * @param initAttr the {@code initAttr} argument.
     * @return the ibv_srq.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment createSrq(MemorySegment pd, MemorySegment initAttr) throws NativeCallException {
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) IBV_CREATE_SRQ.invokeExact(state, pd, initAttr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check("ibv_create_srq", result.address(), state);
        return result;
    }

    /**
     * {@code ibv_modify_srq}.
     *
     * @param srq the {@code srq} argument.
     * @param attr the {@code srq_attr} argument (a {@code struct ibv_srq_attr}).
     * @param attrMask the {@code srq_attr_mask} argument ({@code IBV_SRQ_MAX_WR}, {@code IBV_SRQ_LIMIT}).
     * @throws NativeCallException if it fails.
     */
    public static void modifySrq(MemorySegment srq, MemorySegment attr, int attrMask) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_MODIFY_SRQ.invokeExact(srq, attr, attrMask);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_modify_srq", result, null);
    }

    /**
     * {@code ibv_destroy_srq}.
     *
     * @param srq the {@code srq} argument.
     * @throws NativeCallException if it fails.
     */
    public static void destroySrq(MemorySegment srq) throws NativeCallException {
        int result;
        try {
            result = (int) IBV_DESTROY_SRQ.invokeExact(srq);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_destroy_srq", result, null);
    }

    /**
     * {@code ibv_free_device_list}.
     *
     * @param list the array from {@link #getDeviceList(MemorySegment)}.
     */
    public static void freeDeviceList(MemorySegment list) {
        try {
            IBV_FREE_DEVICE_LIST.invokeExact(list);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code ibv_get_device_name}.
     *
     * @param device an {@code ibv_device *}.
     * @return the name, e.g. {@code mlx5_0}.
     */
    public static String getDeviceName(MemorySegment device) {
        try {
            MemorySegment name = (MemorySegment) IBV_GET_DEVICE_NAME.invokeExact(device);
            return name.equals(MemorySegment.NULL) ? null : name.reinterpret(MAX_STRING).getString(0);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * The exported compatibility {@code ibv_query_port}, which fills only the first 48 bytes (no
     * {@code port_cap_flags2}). Use {@link IbvInline#queryPort(MemorySegment, int, MemorySegment)}, which prefers
     * the {@code verbs_context} op and falls back to this.
     *
     * @param context the {@code ibv_context}.
     * @param portNumber the port, from 1.
     * @param portAttr a zeroed {@code struct ibv_port_attr}.
     * @throws NativeCallException if it fails.
     */
    public static void queryPortCompat(MemorySegment context, byte portNumber, MemorySegment portAttr)
        throws NativeCallException {
        int result;
        try {
            result = (int) IBV_QUERY_PORT.invokeExact(context, portNumber, portAttr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_query_port", result, null);
    }

    /**
     * {@code ibv_get_cq_event} on a non-blocking completion channel.
     *
     * @param channel the {@code ibv_comp_channel}, its fd set non-blocking.
     * @param cqOut where the {@code ibv_cq *} is stored.
     * @param cqContextOut where the CQ's context is stored.
     * @return true if an event was taken (acknowledge it with {@link #ackCqEvents(MemorySegment, int)}), false if
     *     none was pending.
     * @throws NativeCallException if it fails.
     */
    public static boolean getCqEvent(MemorySegment channel, MemorySegment cqOut, MemorySegment cqContextOut)
        throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) IBV_GET_CQ_EVENT.invokeExact(state, channel, cqOut, cqContextOut);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        return MINUS_ONE_SETS_ERRNO.checkNonBlocking("ibv_get_cq_event", result, state) != ErrorPolicy.WOULD_BLOCK;
    }

    /**
     * {@code ibv_ack_cq_events}; batch the acknowledgements, and acknowledge all before destroying the CQ.
     *
     * @param cq the {@code ibv_cq}.
     * @param count how many events to acknowledge.
     */
    public static void ackCqEvents(MemorySegment cq, int count) {
        try {
            IBV_ACK_CQ_EVENTS.invokeExact(cq, count);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code ibv_get_async_event} on a context whose {@code async_fd} was made non-blocking.
     *
     * @param context the {@code ibv_context}.
     * @param event where the {@code struct ibv_async_event} is written.
     * @return true if an event was taken (acknowledge it with {@link #ackAsyncEvent}), false if none was pending.
     * @throws NativeCallException if it fails.
     */
    public static boolean getAsyncEvent(MemorySegment context, MemorySegment event) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) IBV_GET_ASYNC_EVENT.invokeExact(state, context, event);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        return MINUS_ONE_SETS_ERRNO.checkNonBlocking("ibv_get_async_event", result, state)
            != ErrorPolicy.WOULD_BLOCK;
    }

    /**
     * {@code ibv_ack_async_event}: every event taken must be acknowledged, or destroying its object waits forever.
     *
     * @param event the event {@link #getAsyncEvent} wrote.
     */
    public static void ackAsyncEvent(MemorySegment event) {
        try {
            IBV_ACK_ASYNC_EVENT.invokeExact(event);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code ibv_event_type_str}.
     *
     * @param type an {@code enum ibv_event_type} value.
     * @return e.g. {@code local catastrophic error}.
     */
    public static String eventTypeStr(int type) {
        try {
            MemorySegment text = (MemorySegment) IBV_EVENT_TYPE_STR.invokeExact(type);
            return text.equals(MemorySegment.NULL) ? "event " + type : text.reinterpret(MAX_STRING).getString(0);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * {@code ibv_wc_status_str}.
     *
     * @param status an {@code ibv_wc.status}.
     * @return e.g. {@code transport retry counter exceeded}.
     */
    public static String wcStatusStr(int status) {
        try {
            MemorySegment text = (MemorySegment) IBV_WC_STATUS_STR.invokeExact(status);
            return text.equals(MemorySegment.NULL) ? "status " + status : text.reinterpret(MAX_STRING).getString(0);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }
}
