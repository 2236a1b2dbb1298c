package io.rdmachannel.ffm.internal;

import static io.rdmachannel.ffm.internal.ErrorPolicy.MINUS_ONE_SETS_ERRNO;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.ffm.NativeCallException;
import io.rdmachannel.ffm.layout.CConstants;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The libc calls of the event loop: {@code fcntl}, {@code epoll_*}, {@code eventfd}, {@code read}, {@code write},
 * {@code close} and {@code poll}. Every handle captures errno; the wrappers throw {@link NativeCallException}, except
 * that EAGAIN on a non-blocking descriptor is returned as {@link ErrorPolicy#WOULD_BLOCK} and EINTR from a wait as
 * zero events.
 */
public final class LibC {
    private static final CConstants C = new CConstants();

    /** {@code F_GETFL}. */
    public static final int F_GETFL = C.value("F_GETFL", 3);
    /** {@code F_SETFL}. */
    public static final int F_SETFL = C.value("F_SETFL", 4);
    /** {@code O_NONBLOCK}. */
    public static final int O_NONBLOCK = C.value("O_NONBLOCK", 0x800);
    /** {@code O_CLOEXEC}. */
    public static final int O_CLOEXEC = C.value("O_CLOEXEC", 0x80000);
    /** {@code EPOLL_CLOEXEC}. */
    public static final int EPOLL_CLOEXEC = C.value("EPOLL_CLOEXEC", 0x80000);
    /** {@code EPOLL_CTL_ADD}. */
    public static final int EPOLL_CTL_ADD = C.value("EPOLL_CTL_ADD", 1);
    /** {@code EPOLL_CTL_DEL}. */
    public static final int EPOLL_CTL_DEL = C.value("EPOLL_CTL_DEL", 2);
    /** {@code EPOLL_CTL_MOD}. */
    public static final int EPOLL_CTL_MOD = C.value("EPOLL_CTL_MOD", 3);
    /** {@code EPOLLIN}. */
    public static final int EPOLLIN = C.value("EPOLLIN", 0x1);
    /** {@code EPOLLOUT}. */
    public static final int EPOLLOUT = C.value("EPOLLOUT", 0x4);
    /** {@code EPOLLERR}. */
    public static final int EPOLLERR = C.value("EPOLLERR", 0x8);
    /** {@code EPOLLHUP}. */
    public static final int EPOLLHUP = C.value("EPOLLHUP", 0x10);
    /** {@code EPOLLONESHOT}. */
    public static final int EPOLLONESHOT = C.value("EPOLLONESHOT", 1 << 30);
    /** {@code EPOLLET}. */
    public static final int EPOLLET = C.value("EPOLLET", 1 << 31);
    /** {@code EFD_NONBLOCK}. */
    public static final int EFD_NONBLOCK = C.value("EFD_NONBLOCK", 0x800);
    /** {@code EFD_CLOEXEC}. */
    public static final int EFD_CLOEXEC = C.value("EFD_CLOEXEC", 0x80000);
    /** {@code POLLIN}. */
    public static final int POLLIN = C.value("POLLIN", 0x1);
    /** {@code sizeof(pthread_mutex_t)}, which every struct with an embedded mutex depends on. */
    public static final long PTHREAD_MUTEX_SIZE = C.longValue("sizeof(pthread_mutex_t)", Platform.PTHREAD_MUTEX_SIZE);
    /** {@code sizeof(pthread_cond_t)}. */
    public static final long PTHREAD_COND_SIZE = C.longValue("sizeof(pthread_cond_t)", Platform.PTHREAD_COND_SIZE);

    private static final Linker.Option CAPTURE = Errno.CAPTURE;
    private static final MethodHandle FCNTL = Downcalls.link(NativeLibrary.LIBC, "fcntl",
        FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT), CAPTURE, Linker.Option.firstVariadicArg(2));
    private static final MethodHandle EPOLL_CREATE1 = Downcalls.link(NativeLibrary.LIBC, "epoll_create1",
        FunctionDescriptor.of(JAVA_INT, JAVA_INT), CAPTURE);
    private static final MethodHandle EPOLL_CTL = Downcalls.link(NativeLibrary.LIBC, "epoll_ctl",
        FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS), CAPTURE);
    private static final MethodHandle EPOLL_WAIT = Downcalls.link(NativeLibrary.LIBC, "epoll_wait",
        FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), CAPTURE);
    private static final MethodHandle EVENTFD = Downcalls.link(NativeLibrary.LIBC, "eventfd",
        FunctionDescriptor.of(JAVA_INT, JAVA_INT, JAVA_INT), CAPTURE);
    private static final MethodHandle READ = Downcalls.link(NativeLibrary.LIBC, "read",
        FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), CAPTURE);
    private static final MethodHandle WRITE = Downcalls.link(NativeLibrary.LIBC, "write",
        FunctionDescriptor.of(JAVA_LONG, JAVA_INT, ADDRESS, JAVA_LONG), CAPTURE);
    private static final MethodHandle CLOSE = Downcalls.link(NativeLibrary.LIBC, "close",
        FunctionDescriptor.of(JAVA_INT, JAVA_INT), CAPTURE);
    private static final MethodHandle POLL = Downcalls.link(NativeLibrary.LIBC, "poll",
        FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), CAPTURE);

    private LibC() {
    }

    /**
     * {@code fcntl(fd, cmd, arg)}, linked as a variadic call.
     *
     * @param fd the descriptor.
     * @param command e.g. {@link #F_GETFL}.
     * @param argument the third argument (0 if the command takes none).
     * @return the result.
     * @throws NativeCallException if it fails.
     */
    public static int fcntl(int fd, int command, int argument) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) FCNTL.invokeExact(state, fd, command, argument);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        return (int) MINUS_ONE_SETS_ERRNO.check("fcntl", result, state);
    }

    /**
     * Set {@code O_NONBLOCK} on a descriptor, e.g. a completion channel's.
     *
     * @param fd the descriptor.
     * @throws NativeCallException if it fails.
     */
    public static void setNonBlocking(int fd) throws NativeCallException {
        int flags = fcntl(fd, F_GETFL, 0);
        if ((flags & O_NONBLOCK) == 0) {
            fcntl(fd, F_SETFL, flags | O_NONBLOCK);
        }
    }

    /**
     * {@code epoll_create1(flags)}.
     *
     * @param flags e.g. {@link #EPOLL_CLOEXEC}.
     * @return the epoll descriptor.
     * @throws NativeCallException if it fails.
     */
    public static int epollCreate1(int flags) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) EPOLL_CREATE1.invokeExact(state, flags);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        return (int) MINUS_ONE_SETS_ERRNO.check("epoll_create1", result, state);
    }

    /**
     * {@code epoll_ctl(epfd, op, fd, event)}.
     *
     * @param epfd the epoll descriptor.
     * @param operation e.g. {@link #EPOLL_CTL_ADD}.
     * @param fd the descriptor to watch.
     * @param event a {@code struct epoll_event}, or NULL for {@link #EPOLL_CTL_DEL}.
     * @throws NativeCallException if it fails.
     */
    public static void epollCtl(int epfd, int operation, int fd, MemorySegment event) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) EPOLL_CTL.invokeExact(state, epfd, operation, fd, event);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("epoll_ctl", result, state);
    }

    /**
     * {@code epoll_wait(epfd, events, max, timeout)}; blocking, so never from a virtual thread or under a lock.
     *
     * @param epfd the epoll descriptor.
     * @param events an array of {@code struct epoll_event}.
     * @param maxEvents its length.
     * @param timeoutMillis -1 to wait forever, 0 to poll.
     * @return the number of ready events; 0 on timeout or when interrupted by a signal.
     * @throws NativeCallException if it fails.
     */
    public static int epollWait(int epfd, MemorySegment events, int maxEvents, int timeoutMillis)
        throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) EPOLL_WAIT.invokeExact(state, epfd, events, maxEvents, timeoutMillis);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        if (result < 0 && Errno.errno(state) == Errno.EINTR) {
            return 0;
        }
        return (int) MINUS_ONE_SETS_ERRNO.check("epoll_wait", result, state);
    }

    /**
     * {@code eventfd(initval, flags)}.
     *
     * @param initialValue the initial counter.
     * @param flags e.g. {@link #EFD_NONBLOCK} | {@link #EFD_CLOEXEC}.
     * @return the descriptor.
     * @throws NativeCallException if it fails.
     */
    public static int eventfd(int initialValue, int flags) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) EVENTFD.invokeExact(state, initialValue, flags);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        return (int) MINUS_ONE_SETS_ERRNO.check("eventfd", result, state);
    }

    /**
     * {@code read(fd, buf, count)}.
     *
     * @param fd the descriptor.
     * @param buffer where to read to.
     * @param count the most bytes to read.
     * @return the bytes read (0 at end of file), or {@link ErrorPolicy#WOULD_BLOCK}.
     * @throws NativeCallException if it fails otherwise.
     */
    public static long read(int fd, MemorySegment buffer, long count) throws NativeCallException {
        MemorySegment state = Errno.callState();
        long result;
        try {
            result = (long) READ.invokeExact(state, fd, buffer, count);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        return MINUS_ONE_SETS_ERRNO.checkNonBlocking("read", result, state);
    }

    /**
     * {@code write(fd, buf, count)}.
     *
     * @param fd the descriptor.
     * @param buffer what to write.
     * @param count the bytes to write.
     * @return the bytes written, or {@link ErrorPolicy#WOULD_BLOCK}.
     * @throws NativeCallException if it fails otherwise.
     */
    public static long write(int fd, MemorySegment buffer, long count) throws NativeCallException {
        MemorySegment state = Errno.callState();
        long result;
        try {
            result = (long) WRITE.invokeExact(state, fd, buffer, count);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        return MINUS_ONE_SETS_ERRNO.checkNonBlocking("write", result, state);
    }

    /**
     * {@code close(fd)}.
     *
     * @param fd the descriptor.
     * @throws NativeCallException if it fails.
     */
    public static void close(int fd) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) CLOSE.invokeExact(state, fd);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        MINUS_ONE_SETS_ERRNO.check("close", result, state);
    }

    /**
     * {@code poll(fds, nfds, timeout)}.
     *
     * @param fds an array of {@code struct pollfd}.
     * @param count its length.
     * @param timeoutMillis -1 to wait forever, 0 to poll.
     * @return the number of ready descriptors; 0 on timeout or when interrupted by a signal.
     * @throws NativeCallException if it fails.
     */
    public static int poll(MemorySegment fds, long count, int timeoutMillis) throws NativeCallException {
        MemorySegment state = Errno.callState();
        int result;
        try {
            result = (int) POLL.invokeExact(state, fds, count, timeoutMillis);
        } catch (Throwable t) {
            throw Downcalls.unexpected(t);
        }
        if (result < 0 && Errno.errno(state) == Errno.EINTR) {
            return 0;
        }
        return (int) MINUS_ONE_SETS_ERRNO.check("poll", result, state);
    }
}
