package io.rdmachannel.ffm.internal;

import java.lang.foreign.MemorySegment;

import io.rdmachannel.ffm.NativeCallException;

/**
 * How a C function reports failure. Every wrapper names the policy of its function; the check turns a failure into
 * a {@link NativeCallException} and leaves success (and, for non-blocking calls, "would block") to the caller.
 */
public enum ErrorPolicy {
    /** Returns 0 or an errno value, and does not set errno: the data-path inlines, {@code ibv_modify_qp}, ... */
    RETURNS_ERRNO,
    /** Returns -1 (or any negative value) and sets errno: most of libc and librdmacm. */
    MINUS_ONE_SETS_ERRNO,
    /** Returns a pointer, NULL with errno set on failure: {@code ibv_open_device}, {@code ibv_create_qp}, ... */
    NULL_SETS_ERRNO,
    /**
     * {@code rdma_getaddrinfo}: 0, or -1 (or {@code EAI_SYSTEM}) with errno set, or a raw negative {@code EAI_*}
     * code (which then is not an errno value).
     */
    ADDRINFO_CODE;

    /** What {@link #checkNonBlocking} returns when the call would have blocked ({@code EAGAIN}). */
    public static final long WOULD_BLOCK = -1;

    /**
     * Check a result.
     *
     * @param function the C function, for the message.
     * @param result the return value; for pointers, the address.
     * @param state the capture segment the call used, or {@code null} for {@link #RETURNS_ERRNO}.
     * @return {@code result}.
     * @throws NativeCallException if the result means failure.
     */
    public long check(String function, long result, MemorySegment state) throws NativeCallException {
        int error = error(result, state);
        if (error != 0) {
            throw this == ADDRINFO_CODE && !isErrnoResult(result) ? Errno.addressInfoException(function, error)
                : Errno.exception(function, error);
        }
        return result;
    }

    /**
     * Check the result of a call on a non-blocking descriptor, where {@code EAGAIN} is an answer, not a failure.
     *
     * @param function the C function, for the message.
     * @param result the return value.
     * @param state the capture segment the call used, or {@code null} for {@link #RETURNS_ERRNO}.
     * @return {@code result}, or {@link #WOULD_BLOCK} when the call would have blocked.
     * @throws NativeCallException if the result means another failure.
     */
    public long checkNonBlocking(String function, long result, MemorySegment state) throws NativeCallException {
        int error = error(result, state);
        if (error == Errno.EAGAIN || error == Errno.EWOULDBLOCK) {
            return WOULD_BLOCK;
        }
        return check(function, result, state);
    }

    private int error(long result, MemorySegment state) {
        return switch (this) {
            case RETURNS_ERRNO -> (int) result;
            case MINUS_ONE_SETS_ERRNO -> result < 0 ? errnoOrUnknown(state) : 0;
            case NULL_SETS_ERRNO -> result == 0 ? errnoOrUnknown(state) : 0;
            case ADDRINFO_CODE -> result == 0 ? 0 : isErrnoResult(result) ? errnoOrUnknown(state) : (int) result;
        };
    }

    private static boolean isErrnoResult(long result) {
        return result == -1 || result == Errno.EAI_SYSTEM;
    }

    private static int errnoOrUnknown(MemorySegment state) {
        int errno = Errno.errno(state);
        // A failure that did not set errno must still be reported as a failure.
        return errno != 0 ? errno : Errno.EINVAL;
    }
}
