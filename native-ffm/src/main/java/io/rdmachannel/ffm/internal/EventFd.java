package io.rdmachannel.ffm.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.ffm.NativeCallException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A non-blocking {@code eventfd}: a wake-up any thread may {@link #signal()} without allocating, and a waiter
 * {@link #drain()}s. Its owner closes it once nobody waits on it or signals it any more.
 */
public final class EventFd implements AutoCloseable {
    /** The 8 bytes {@link #signal()} writes: always 1, never written again, so any thread may use them. */
    private static final MemorySegment ONE = Arena.global().allocateFrom(JAVA_LONG, 1L);

    private final Arena arena = Arena.ofShared();
    private final MemorySegment counter = arena.allocate(JAVA_LONG);
    private final int fd;
    private volatile boolean closed;

    /**
     * Create one, non-blocking and close-on-exec.
     *
     * @throws NativeCallException if the descriptor cannot be made.
     */
    public EventFd() throws NativeCallException {
        try {
            this.fd = LibC.eventfd(0, LibC.EFD_NONBLOCK | LibC.EFD_CLOEXEC);
        } catch (NativeCallException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /**
     * The descriptor, to poll or watch.
     *
     * @return the fd.
     */
    public int fd() {
        return fd;
    }

    /**
     * Make the descriptor readable. Safe from any thread; does nothing once closed.
     *
     * @throws NativeCallException if the write fails.
     */
    public void signal() throws NativeCallException {
        if (!closed) {
            LibC.write(fd, ONE, Long.BYTES);
        }
    }

    /**
     * Reset the counter: the descriptor is not readable until the next {@link #signal()}. One thread at a time.
     *
     * @throws NativeCallException if the read fails otherwise than with EAGAIN.
     */
    public void drain() throws NativeCallException {
        LibC.read(fd, counter, Long.BYTES);
    }

    /**
     * Whether {@link #close()} ran.
     *
     * @return true once closed.
     */
    public boolean isClosed() {
        return closed;
    }

    @Override
    public void close() throws NativeCallException {
        if (closed) {
            return;
        }
        closed = true;
        try {
            LibC.close(fd);
        } finally {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "EventFd{fd=" + fd + ", closed=" + closed + '}';
    }
}
