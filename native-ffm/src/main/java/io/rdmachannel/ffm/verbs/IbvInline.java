package io.rdmachannel.ffm.verbs;

import static io.rdmachannel.ffm.internal.ErrorPolicy.NULL_SETS_ERRNO;
import static io.rdmachannel.ffm.internal.ErrorPolicy.RETURNS_ERRNO;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.CONTEXT_ABI_COMPAT;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.CONTEXT_SIZE;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_CLOSE_XRCD;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_CREATE_QP_EX;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_CREATE_SRQ_EX;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_GET_SRQ_NUM;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_OPEN_QP;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_OPEN_XRCD;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_QUERY_PORT;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_SZ;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.ffm.NativeCallException;
import io.rdmachannel.ffm.internal.Downcalls;
import io.rdmachannel.ffm.internal.Errno;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The {@code static inline} verbs of {@code verbs.h}, which have no symbol: they call function pointers of the
 * {@code ibv_context} ops table or of the {@code verbs_context} in front of it. There is one unbound handle per C
 * signature (the first argument is the function address); the pointers are read once per object by
 * {@link QueuePairOps}, {@link CompletionQueueOps} and {@link SharedReceiveQueueOps}.
 */
public final class IbvInline {
    private static final Linker.Option CRITICAL = Linker.Option.critical(false);
    private static final FunctionDescriptor INT_PPP = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
    private static final FunctionDescriptor INT_PIP = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS);
    private static final FunctionDescriptor INT_PI = FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT);

    /** {@code int (*)(void *, void *, void *)}: {@code post_send}, {@code post_recv}, {@code post_srq_recv}. */
    static final MethodHandle INT_PPP_HANDLE = Downcalls.unbound(INT_PPP);
    /** The same, critical. */
    static final MethodHandle INT_PPP_CRITICAL_HANDLE = Downcalls.unbound(INT_PPP, CRITICAL);
    /** {@code int (*)(void *, int, void *)}: {@code poll_cq}. */
    static final MethodHandle INT_PIP_HANDLE = Downcalls.unbound(INT_PIP);
    /** The same, critical. */
    static final MethodHandle INT_PIP_CRITICAL_HANDLE = Downcalls.unbound(INT_PIP, CRITICAL);
    /** {@code int (*)(void *, int)}: {@code req_notify_cq}. */
    static final MethodHandle INT_PI_HANDLE = Downcalls.unbound(INT_PI);
    /** The same, critical. */
    static final MethodHandle INT_PI_CRITICAL_HANDLE = Downcalls.unbound(INT_PI, CRITICAL);
    /** {@code int (*)(ibv_context *, uint8_t, ibv_port_attr *, size_t)}: {@code verbs_context.query_port}. */
    static final MethodHandle INT_PBPL_HANDLE = Downcalls.unbound(
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS, JAVA_LONG));

    /** {@code ibv_xrcd *(*)(ibv_context *, ibv_xrcd_init_attr *)}: {@code verbs_context.open_xrcd}, errno captured. */
    static final MethodHandle PTR_PP_ERRNO_HANDLE = Downcalls.unbound(FunctionDescriptor.of(ADDRESS, ADDRESS, ADDRESS),
        Errno.CAPTURE);
    /** {@code int (*)(ibv_srq *, uint32_t *)}: {@code verbs_context.get_srq_num}. */
    static final MethodHandle INT_PP_HANDLE = Downcalls.unbound(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS));
    /** {@code int (*)(void *)}: {@code verbs_context.close_xrcd}. */
    static final MethodHandle INT_P_HANDLE = Downcalls.unbound(FunctionDescriptor.of(JAVA_INT, ADDRESS));

    /** {@code ibv_context.abi_compat} when a {@code verbs_context} is present: {@code (void *) UINTPTR_MAX}. */
    private static final long ABI_COMPAT_EXTENDED = -1L;

    private IbvInline() {
    }

    /**
     * The ops-table function of the context an object belongs to: {@code object->context->ops.X}. Every verbs
     * object ({@code ibv_qp}, {@code ibv_cq}, {@code ibv_srq}, ...) starts with its {@code ibv_context *}.
     *
     * @param object the object.
     * @param opsOffset the offset of the op in {@code ibv_context}, e.g. {@code IbvContextLayouts.OPS_POST_SEND}.
     * @return the function pointer, NULL if the provider has none.
     */
    public static MemorySegment opsFunction(MemorySegment object, long opsOffset) {
        MemorySegment context = object.reinterpret(ADDRESS.byteSize()).get(ADDRESS, 0).reinterpret(CONTEXT_SIZE);
        return context.get(ADDRESS, opsOffset);
    }

    /**
     * Port of {@code verbs_get_ctx_op(ctx, op)}: the op of the {@code verbs_context} in front of a context, if the
     * context has one ({@code abi_compat == UINTPTR_MAX}), the provider filled it ({@code sz} covers it) and it is
     * not NULL.
     *
     * @param context the {@code ibv_context}.
     * @param relativeOffset the op's offset relative to the context, e.g. {@code IbvContextLayouts.VCTX_QUERY_PORT}.
     * @return the function pointer, or NULL if the op is not supported.
     */
    public static MemorySegment verbsContextOp(MemorySegment context, long relativeOffset) {
        MemorySegment ctx = context.reinterpret(CONTEXT_SIZE);
        if (ctx.get(JAVA_LONG, CONTEXT_ABI_COMPAT) != ABI_COMPAT_EXTENDED) {
            return MemorySegment.NULL;
        }
        long sz = MemorySegment.ofAddress(context.address() + VCTX_SZ).reinterpret(Long.BYTES).get(JAVA_LONG, 0);
        if (sz < CONTEXT_SIZE - relativeOffset) {
            return MemorySegment.NULL;
        }
        return MemorySegment.ofAddress(context.address() + relativeOffset).reinterpret(ADDRESS.byteSize())
            .get(ADDRESS, 0);
    }

    /**
     * Port of the {@code ibv_query_port} macro: the {@code verbs_context.query_port} op with the full struct
     * length, else (after zeroing the struct) the exported compatibility function.
     *
     * @param context the {@code ibv_context}.
     * @param portNumber the port, from 1.
     * @param portAttr a {@code struct ibv_port_attr} of at least {@code PORT_ATTR_SIZE} bytes.
     * @throws NativeCallException if the query fails.
     */
    public static void queryPort(MemorySegment context, int portNumber, MemorySegment portAttr)
        throws NativeCallException {
        MemorySegment op = verbsContextOp(context, VCTX_QUERY_PORT);
        if (op.equals(MemorySegment.NULL)) {
            portAttr.reinterpret(PORT_ATTR_SIZE).fill((byte) 0);
            IbvCalls.queryPortCompat(context, (byte) portNumber, portAttr);
            return;
        }
        int result;
        try {
            result = (int) INT_PBPL_HANDLE.invokeExact(op, context, (byte) portNumber, portAttr, PORT_ATTR_SIZE);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_query_port", result, null);
    }

    /**
     * Port of the {@code ibv_open_xrcd} inline: the {@code verbs_context.open_xrcd} op, or {@code EOPNOTSUPP} if the
     * context has none. A provider without XRC keeps libibverbs' default op, which fails the same way.
     *
     * @param context the {@code ibv_context}.
     * @param initAttr a {@code struct ibv_xrcd_init_attr}.
     * @return the {@code ibv_xrcd}.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment openXrcd(MemorySegment context, MemorySegment initAttr) throws NativeCallException {
        return callPointerOp(context, VCTX_OPEN_XRCD, "ibv_open_xrcd", initAttr);
    }

    /**
     * Port of the {@code ibv_close_xrcd} inline: the {@code verbs_context.close_xrcd} op.
     *
     * @param context the {@code ibv_context} the domain was opened on.
     * @param xrcd the {@code ibv_xrcd}.
     * @throws NativeCallException if it fails (the domain still has XRC SRQs or target QPs: {@code EBUSY}).
     */
    public static void closeXrcd(MemorySegment context, MemorySegment xrcd) throws NativeCallException {
        MemorySegment op = supportedOp(context, VCTX_CLOSE_XRCD, "ibv_close_xrcd");
        int result;
        try {
            result = (int) INT_P_HANDLE.invokeExact(op, xrcd);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_close_xrcd", result, null);
    }

    /**
     * Port of the {@code ibv_create_srq_ex} inline for what the plain {@code ibv_create_srq} cannot make (an XRC SRQ:
     * {@code comp_mask} with the type, the domain and the completion queue): the {@code verbs_context.create_srq_ex}
     * op, or {@code EOPNOTSUPP}.
     *
     * @param context the {@code ibv_context}.
     * @param initAttr a {@code struct ibv_srq_init_attr_ex}; the provider writes the depth it granted back.
     * @return the {@code ibv_srq}.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment createSrqEx(MemorySegment context, MemorySegment initAttr)
        throws NativeCallException {
        return callPointerOp(context, VCTX_CREATE_SRQ_EX, "ibv_create_srq_ex", initAttr);
    }

    /**
     * Port of the {@code ibv_create_qp_ex} inline for what the plain {@code ibv_create_qp} cannot make (an XRC send or
     * receive queue pair): the {@code verbs_context.create_qp_ex} op, or {@code EOPNOTSUPP}.
     *
     * @param context the {@code ibv_context}.
     * @param initAttr a {@code struct ibv_qp_init_attr_ex}.
     * @return the {@code ibv_qp}.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment createQpEx(MemorySegment context, MemorySegment initAttr) throws NativeCallException {
        return callPointerOp(context, VCTX_CREATE_QP_EX, "ibv_create_qp_ex", initAttr);
    }

    /**
     * Port of the {@code ibv_open_qp} inline: a reference of this process to an XRC target queue pair of the domain,
     * by number (the {@code verbs_context.open_qp} op, or {@code EOPNOTSUPP}); {@code ibv_destroy_qp} drops it.
     *
     * @param context the {@code ibv_context}.
     * @param openAttr a {@code struct ibv_qp_open_attr}.
     * @return the {@code ibv_qp}.
     * @throws NativeCallException if it fails.
     */
    public static MemorySegment openQp(MemorySegment context, MemorySegment openAttr) throws NativeCallException {
        return callPointerOp(context, VCTX_OPEN_QP, "ibv_open_qp", openAttr);
    }

    /**
     * Port of the {@code ibv_get_srq_num} inline: the number remote XRC senders put into {@code remote_srqn}.
     *
     * @param context the {@code ibv_context} of the SRQ.
     * @param srq the {@code ibv_srq}.
     * @param number where the number is written (a {@code uint32_t}).
     * @throws NativeCallException if it fails ({@code EOPNOTSUPP} without the op).
     */
    public static void getSrqNum(MemorySegment context, MemorySegment srq, MemorySegment number)
        throws NativeCallException {
        MemorySegment op = supportedOp(context, VCTX_GET_SRQ_NUM, "ibv_get_srq_num");
        int result;
        try {
            result = (int) INT_PP_HANDLE.invokeExact(op, srq, number);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        RETURNS_ERRNO.check("ibv_get_srq_num", result, null);
    }

    /**
     * Call a {@code verbs_context} op that takes the context and an attribute struct and returns an object or NULL
     * with errno.
     */
    private static MemorySegment callPointerOp(MemorySegment context, long relativeOffset, String function,
        MemorySegment attr) throws NativeCallException {
        MemorySegment op = supportedOp(context, relativeOffset, function);
        MemorySegment state = Errno.callState();
        MemorySegment result;
        try {
            result = (MemorySegment) PTR_PP_ERRNO_HANDLE.invokeExact(op, state, context, attr);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        NULL_SETS_ERRNO.check(function, result.address(), state);
        return result;
    }

    /**
     * {@link #verbsContextOp}, failing as the inline verbs do ({@code EOPNOTSUPP}) where the context lacks the op.
     */
    private static MemorySegment supportedOp(MemorySegment context, long relativeOffset, String function)
        throws NativeCallException {
        MemorySegment op = verbsContextOp(context, relativeOffset);
        if (op.equals(MemorySegment.NULL)) {
            throw Errno.exception(function, Errno.EOPNOTSUPP);
        }
        return op;
    }
}
