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
import java.util.Arrays;

/**
 * What a platform thread needs to wait on one completion channel itself: its own eventfd, which only wake-ups meant
 * for this thread make readable (a shared one could be reset by another waiter before this one saw it), and a
 * {@code pollfd} pair. A thread takes one from its device's {@link Pool} for one wait and gives it back after, so the
 * eventfds are as many as the threads that ever waited at once, and the device closes them: none waits for the
 * garbage collector to find a finished thread (a server with a thread per connection used to keep one eventfd per
 * finished thread open until a collection).
 */
final class WaitingThread {
    private final EventFd wake;
    private final Arena arena;
    private final MemorySegment pollFds;
    /**
     * Set before each {@link #wake()} writes the eventfd: {@link #reset()} drains only then, so a wait that nobody
     * woke costs no read system call that would only find the eventfd empty.
     */
    private volatile boolean signalled;

    private WaitingThread(EventFd wake, Arena arena) {
        this.wake = wake;
        this.arena = arena;
        this.pollFds = arena.allocate(POLLFD_SIZE * 2, 8);
    }

    private static WaitingThread create() {
        EventFd wake;
        try {
            wake = new EventFd();
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot create a waiting thread's wake-up eventfd: " + e.getMessage(), e);
        }
        return new WaitingThread(wake, Arena.ofShared());
    }

    /** Whether the device closed this waiter's eventfd, for tests. */
    boolean isClosed() {
        return wake.isClosed();
    }

    private void close() {
        try {
            wake.close();
        } catch (NativeCallException ignored) {
            // the descriptor is gone either way
        } finally {
            arena.close();
        }
    }

    /**
     * A device's waiters not in use: taken for one wait, given back after it, closed with the device. No allocation
     * once it holds as many as the threads that wait at once.
     */
    static final class Pool {
        private WaitingThread[] idle = new WaitingThread[4];
        private int idleCount;
        private boolean closed;

        /**
         * An idle waiter, or a new one.
         *
         * @throws IllegalStateException if no eventfd can be made, or the pool is closed.
         */
        synchronized WaitingThread take() {
            if (closed) {
                throw new IllegalStateException("the device's waiters are closed");
            }
            if (idleCount == 0) {
                return create();
            }
            WaitingThread waiter = idle[--idleCount];
            idle[idleCount] = null;
            return waiter;
        }

        /** Give back a waiter no queue knows any more; closed at once if the pool is. */
        synchronized void give(WaitingThread waiter) {
            if (closed) {
                waiter.close();
                return;
            }
            if (idleCount == idle.length) {
                idle = Arrays.copyOf(idle, idleCount * 2);
            }
            idle[idleCount++] = waiter;
        }

        /** How many waiters are idle, for tests. */
        synchronized int idleCount() {
            return idleCount;
        }

        /** Close the idle waiters, and those given back from now on. */
        synchronized void close() {
            closed = true;
            for (int i = 0; i < idleCount; i++) {
                idle[i].close();
                idle[i] = null;
            }
            idleCount = 0;
        }
    }

    /** Wake this thread if it waits; safe from any thread while the thread is registered with a queue. */
    void wake() {
        signalled = true;
        try {
            wake.signal();
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot wake a waiting thread: " + e.getMessage(), e);
        }
    }

    /**
     * Forget wake-ups of earlier waits: drain the eventfd if a wake-up was sent since the last drain. A wake-up whose
     * write comes after this drain leaves the eventfd readable; the wait then sees it and calls {@link #drain()}.
     */
    void reset() {
        if (signalled) {
            drain();
        }
    }

    /** Drain the eventfd: the wait saw it readable. */
    void drain() {
        signalled = false;
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
