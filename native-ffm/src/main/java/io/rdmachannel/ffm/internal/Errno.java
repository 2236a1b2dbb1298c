package io.rdmachannel.ffm.internal;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.ffm.NativeCallException;
import io.rdmachannel.ffm.layout.CConstants;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;

/**
 * errno, captured by the linker right after the call ({@code captureCallState("errno")}), and the texts of error
 * numbers ({@code strerror}) and resolver codes ({@code gai_strerror}).
 *
 * <p>A capturing handle takes the capture segment as its first argument; {@link #callState()} returns one per
 * thread, so a control-path call allocates nothing.
 */
public final class Errno {
    private static final CConstants C = new CConstants();

    /** {@code EINTR}. */
    public static final int EINTR = C.value("EINTR", 4);
    /** {@code EBADF}. */
    public static final int EBADF = C.value("EBADF", 9);
    /** {@code EAGAIN}, the same value as {@code EWOULDBLOCK} on Linux. */
    public static final int EAGAIN = C.value("EAGAIN", 11);
    /** {@code EWOULDBLOCK}. */
    public static final int EWOULDBLOCK = C.value("EWOULDBLOCK", 11);
    /** {@code ENOMEM}. */
    public static final int ENOMEM = C.value("ENOMEM", 12);
    /** {@code ENODEV}: librdmacm without {@code /dev/infiniband/rdma_cm}. */
    public static final int ENODEV = C.value("ENODEV", 19);
    /** {@code EINVAL}. */
    public static final int EINVAL = C.value("EINVAL", 22);
    /** {@code ENOSYS}: libibverbs on a kernel without the RDMA subsystem. */
    public static final int ENOSYS = C.value("ENOSYS", 38);
    /** {@code ENODATA}. */
    public static final int ENODATA = C.value("ENODATA", 61);
    /** {@code EOPNOTSUPP}. */
    public static final int EOPNOTSUPP = C.value("EOPNOTSUPP", 95);
    /** {@code EAI_SYSTEM}: the resolver code meaning "see errno". */
    public static final int EAI_SYSTEM = C.value("EAI_SYSTEM", -11);
    /** {@code EAI_NONAME}. */
    public static final int EAI_NONAME = C.value("EAI_NONAME", -2);

    /** The linker option that captures errno; capturing handles take {@link #callState()} first. */
    public static final Linker.Option CAPTURE = Linker.Option.captureCallState("errno");

    private static final VarHandle ERRNO = Linker.Option.captureStateLayout()
        .varHandle(PathElement.groupElement("errno"));
    private static final ThreadLocal<MemorySegment> STATE = ThreadLocal.withInitial(
        () -> Arena.ofAuto().allocate(Linker.Option.captureStateLayout()));

    private static final MethodHandle STRERROR = Downcalls.link(NativeLibrary.LIBC, "strerror",
        FunctionDescriptor.of(ADDRESS, JAVA_INT));
    private static final MethodHandle GAI_STRERROR = Downcalls.link(NativeLibrary.LIBC, "gai_strerror",
        FunctionDescriptor.of(ADDRESS, JAVA_INT));
    private static final int MAX_MESSAGE = 1024;

    private Errno() {
    }

    /**
     * The calling thread's capture segment, to pass as first argument of a capturing handle.
     *
     * @return the segment; read it with {@link #errno(MemorySegment)} before the next call on this thread.
     */
    public static MemorySegment callState() {
        return STATE.get();
    }

    /**
     * The errno captured by the last call that used this segment.
     *
     * @param state the capture segment.
     * @return the errno value.
     */
    public static int errno(MemorySegment state) {
        return (int) ERRNO.get(state, 0L);
    }

    /**
     * The text of an error number.
     *
     * @param errno the error number.
     * @return e.g. {@code Cannot allocate memory}.
     */
    public static String strerror(int errno) {
        try {
            return text((MemorySegment) STRERROR.invokeExact(errno), "Unknown error " + errno);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    /**
     * The text of a resolver code.
     *
     * @param code an {@code EAI_*} code.
     * @return e.g. {@code Name or service not known}.
     */
    public static String gaiStrerror(int code) {
        try {
            return text((MemorySegment) GAI_STRERROR.invokeExact(code), "Unknown resolver error " + code);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
    }

    private static String text(MemorySegment string, String fallback) {
        return string.equals(MemorySegment.NULL) ? fallback : string.reinterpret(MAX_MESSAGE).getString(0);
    }

    /**
     * The exception for a failed call.
     *
     * @param function the C function.
     * @param errno the error number.
     * @return the exception, its message in the form {@code function(..) failed with error(errno): text}.
     */
    public static NativeCallException exception(String function, int errno) {
        return new NativeCallException(function, errno, strerror(errno));
    }

    /**
     * The exception for a resolver failure.
     *
     * @param function the C function.
     * @param code the {@code EAI_*} code.
     * @return the exception.
     */
    public static NativeCallException addressInfoException(String function, int code) {
        return NativeCallException.addressInfo(function, code, gaiStrerror(code));
    }
}
