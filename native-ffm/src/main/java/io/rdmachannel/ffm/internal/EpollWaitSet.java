package io.rdmachannel.ffm.internal;

import static io.rdmachannel.ffm.layout.LibcLayouts.EPOLL_EVENT_DATA;
import static io.rdmachannel.ffm.layout.LibcLayouts.EPOLL_EVENT_EVENTS;
import static io.rdmachannel.ffm.layout.LibcLayouts.EPOLL_EVENT_SIZE;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;

import io.rdmachannel.ffm.NativeCallException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * An epoll set with an eventfd for wake-up: the thin primitive a readiness source is built on. Descriptors are
 * registered with a token, {@link #await(int)} returns how many are ready and {@link #token(int)} says which.
 * The wake-up descriptor is registered with token {@link #WAKEUP_TOKEN} and drained by {@code await}.
 *
 * <p>Not thread-safe except {@link #wakeup()}, which any thread may call.
 */
public final class EpollWaitSet implements AutoCloseable {
    /** The token of the wake-up eventfd. */
    public static final long WAKEUP_TOKEN = -1;

    /** One {@code epoll_event} per calling thread for {@link #modify}, made once: re-arming allocates nothing. */
    private static final ThreadLocal<MemorySegment> SCRATCH = ThreadLocal.withInitial(
        () -> Arena.ofAuto().allocate(EPOLL_EVENT_SIZE, 8));

    private final Arena arena = Arena.ofShared();
    private final int epfd;
    private final EventFd wakeupFd;
    private final int capacity;
    private final MemorySegment events;
    private final MemorySegment control;

    /**
     * Create the set.
     *
     * @param capacity the most events one {@link #await(int)} returns.
     * @throws NativeCallException if a descriptor cannot be created.
     */
    public EpollWaitSet(int capacity) throws NativeCallException {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity=" + capacity);
        }
        this.capacity = capacity;
        this.events = arena.allocate(EPOLL_EVENT_SIZE * capacity);
        this.control = arena.allocate(EPOLL_EVENT_SIZE);
        int ep = -1;
        EventFd wake = null;
        try {
            ep = LibC.epollCreate1(LibC.EPOLL_CLOEXEC);
            wake = new EventFd();
            this.epfd = ep;
            this.wakeupFd = wake;
            add(wake.fd(), LibC.EPOLLIN, WAKEUP_TOKEN);
        } catch (NativeCallException | RuntimeException e) {
            if (wake != null) {
                try {
                    wake.close();
                } catch (NativeCallException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            closeQuietly(ep);
            arena.close();
            throw e;
        }
    }

    /**
     * Watch a descriptor.
     *
     * @param fd the descriptor, usually non-blocking.
     * @param interest e.g. {@link LibC#EPOLLIN}.
     * @param token what {@link #token(int)} returns when it is ready.
     * @throws NativeCallException if epoll refuses.
     */
    public void add(int fd, int interest, long token) throws NativeCallException {
        control.set(JAVA_INT_UNALIGNED, EPOLL_EVENT_EVENTS, interest);
        control.set(JAVA_LONG_UNALIGNED, EPOLL_EVENT_DATA, token);
        LibC.epollCtl(epfd, LibC.EPOLL_CTL_ADD, fd, control);
    }

    /**
     * Change what a watched descriptor is watched for; with {@link LibC#EPOLLONESHOT} this re-enables it.
     *
     * @param fd the descriptor.
     * @param interest e.g. {@code EPOLLIN | EPOLLONESHOT}.
     * @param token what {@link #token(int)} returns when it is ready.
     * @throws NativeCallException if epoll refuses.
     */
    public void modify(int fd, int interest, long token) throws NativeCallException {
        MemorySegment event = SCRATCH.get();
        event.set(JAVA_INT_UNALIGNED, EPOLL_EVENT_EVENTS, interest);
        event.set(JAVA_LONG_UNALIGNED, EPOLL_EVENT_DATA, token);
        LibC.epollCtl(epfd, LibC.EPOLL_CTL_MOD, fd, event);
    }

    /**
     * Stop watching a descriptor.
     *
     * @param fd the descriptor.
     * @throws NativeCallException if epoll refuses.
     */
    public void remove(int fd) throws NativeCallException {
        LibC.epollCtl(epfd, LibC.EPOLL_CTL_DEL, fd, MemorySegment.NULL);
    }

    /**
     * Wait until a descriptor is ready, the set is woken up, or the timeout passes. Blocks in native code: call it
     * from a platform thread holding no lock.
     *
     * @param timeoutMillis -1 to wait forever, 0 to poll.
     * @return the number of ready entries, read with {@link #token(int)} and {@link #readyEvents(int)}.
     * @throws NativeCallException if epoll fails.
     */
    public int await(int timeoutMillis) throws NativeCallException {
        int ready = LibC.epollWait(epfd, events, capacity, timeoutMillis);
        for (int i = 0; i < ready; i++) {
            if (token(i) == WAKEUP_TOKEN) {
                wakeupFd.drain();
            }
        }
        return ready;
    }

    /**
     * The token of a ready entry.
     *
     * @param index from 0 to the last {@link #await(int)} result.
     * @return the token given to {@link #add(int, int, long)}.
     */
    public long token(int index) {
        return events.get(JAVA_LONG_UNALIGNED, index * EPOLL_EVENT_SIZE + EPOLL_EVENT_DATA);
    }

    /**
     * The events of a ready entry.
     *
     * @param index from 0 to the last {@link #await(int)} result.
     * @return e.g. {@link LibC#EPOLLIN}.
     */
    public int readyEvents(int index) {
        return events.get(JAVA_INT_UNALIGNED, index * EPOLL_EVENT_SIZE + EPOLL_EVENT_EVENTS);
    }

    /**
     * Make a waiting (or the next) {@link #await(int)} return. Safe from any thread.
     *
     * @throws NativeCallException if the eventfd cannot be written.
     */
    public void wakeup() throws NativeCallException {
        wakeupFd.signal();
    }

    @Override
    public void close() throws NativeCallException {
        try {
            wakeupFd.close();
            LibC.close(epfd);
        } finally {
            arena.close();
        }
    }

    private static void closeQuietly(int fd) {
        if (fd >= 0) {
            try {
                LibC.close(fd);
            } catch (NativeCallException ignored) {
                // Already failing; the first exception is the one reported.
            }
        }
    }
}
