package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.LibcLayouts.POLLFD_EVENTS;
import static io.rdmachannel.ffm.layout.LibcLayouts.POLLFD_FD;
import static io.rdmachannel.ffm.layout.LibcLayouts.POLLFD_REVENTS;
import static io.rdmachannel.ffm.layout.LibcLayouts.POLLFD_SIZE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.rdmachannel.ffm.internal.EventFd;
import io.rdmachannel.ffm.internal.LibC;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Cleaner;

/**
 * What a platform thread needs to wait on one completion channel itself: its own eventfd, which only wake-ups meant
 * for this thread make readable (a shared one could be reset by another waiter before this one saw it), and a
 * {@code pollfd} pair. One per thread, made on its first direct wait; the eventfd is closed once the thread is gone.
 */
final class WaitingThread {
    private static final Cleaner CLEANER = Cleaner.create();
    private static final ThreadLocal<WaitingThread> CURRENT = ThreadLocal.withInitial(WaitingThread::create);

    private final EventFd wake;
    private final MemorySegment pollFds;

    private WaitingThread(EventFd wake, MemorySegment pollFds) {
        this.wake = wake;
        this.pollFds = pollFds;
    }

    private static WaitingThread create() {
        EventFd wake;
        try {
            wake = new EventFd();
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot create a thread's wake-up eventfd: " + e.getMessage(), e);
        }
        WaitingThread thread = new WaitingThread(wake, Arena.ofAuto().allocate(POLLFD_SIZE * 2, 8));
        CLEANER.register(thread, () -> {
            try {
                wake.close();
            } catch (NativeCallException ignored) {
                // the descriptor is gone either way
            }
        });
        return thread;
    }

    /** The calling thread's, made on first use. */
    static WaitingThread current() {
        return CURRENT.get();
    }

    /** Wake this thread if it waits; safe from any thread while the thread is registered with a queue. */
    void wake() {
        try {
            wake.signal();
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot wake a waiting thread: " + e.getMessage(), e);
        }
    }

    /** Forget wake-ups of earlier waits. */
    void reset() {
        try {
            wake.drain();
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot reset a thread's wake-up eventfd: " + e.getMessage(), e);
        }
    }

    /**
     * Wait until the channel is readable, this thread is woken, or the timeout.
     *
     * @return 0 on timeout, otherwise bit 1 when the channel is readable and bit 2 when this thread was woken.
     */
    int await(int channelFd, int timeoutMillis) throws NativeCallException {
        MemorySegment fds = pollFds;
        fds.set(JAVA_INT, POLLFD_FD, channelFd);
        fds.set(JAVA_SHORT, POLLFD_EVENTS, (short) LibC.POLLIN);
        fds.set(JAVA_SHORT, POLLFD_REVENTS, (short) 0);
        fds.set(JAVA_INT, POLLFD_SIZE + POLLFD_FD, wake.fd());
        fds.set(JAVA_SHORT, POLLFD_SIZE + POLLFD_EVENTS, (short) LibC.POLLIN);
        fds.set(JAVA_SHORT, POLLFD_SIZE + POLLFD_REVENTS, (short) 0);
        if (LibC.poll(fds, 2, timeoutMillis) == 0) {
            return 0;
        }
        return (fds.get(JAVA_SHORT, POLLFD_REVENTS) != 0 ? 1 : 0)
            | (fds.get(JAVA_SHORT, POLLFD_SIZE + POLLFD_REVENTS) != 0 ? 2 : 0);
    }
}
