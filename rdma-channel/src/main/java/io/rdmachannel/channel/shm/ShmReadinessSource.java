package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.ResourceCounter;

import java.util.Objects;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Readiness source of the shared-memory provider: a queue of signalled tokens guarded by a lock and condition, so
 * a waiting virtual thread parks without holding its carrier.
 */
final class ShmReadinessSource implements ReadinessSource {
    private final ShmDevice device;
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition signalled = lock.newCondition();
    private long[] tokens = new long[16];
    private long[] handOver = new long[16];
    private int head;
    private int size;
    private boolean wakeupPending;
    private volatile boolean closed;
    private int users;
    private volatile ReadyHandler directHandler;

    ShmReadinessSource(final ShmDevice device) {
        this.device = device;
    }

    ShmDevice device() {
        return device;
    }

    /**
     * Queue a token and wake the waiter, or hand it to the direct handler on this thread.
     */
    void signal(final long token) {
        final ReadyHandler direct = directHandler;
        if (direct != null) {
            if (!closed) {
                direct.onReady(token);
            }
            return;
        }
        lock.lock();
        try {
            if (closed) {
                return;
            }
            if (size == tokens.length) {
                final long[] larger = new long[tokens.length * 2];
                for (int i = 0; i < size; i++) {
                    larger[i] = tokens[(head + i) % tokens.length];
                }
                tokens = larger;
                head = 0;
            }
            tokens[(head + size) % tokens.length] = token;
            size++;
            signalled.signal();
        } finally {
            lock.unlock();
        }
    }

    @Override
    public boolean dispatchDirectly(final ReadyHandler handler) {
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("readiness source is closed");
            }
            directHandler = Objects.requireNonNull(handler, "handler");
            // tokens queued before the switch are handed over now, so none is lost
            for (int i = 0; i < size; i++) {
                handler.onReady(tokens[(head + i) % tokens.length]);
            }
            head = 0;
            size = 0;
            return true;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public int await(final long timeoutNanos, final ReadyHandler handler) {
        final int count;
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("readiness source is closed");
            }
            if (directHandler != null) {
                throw new IllegalStateException("readiness source dispatches directly; nothing waits on it");
            }
            long remaining = timeoutNanos;
            while (size == 0 && !wakeupPending && remaining != 0 && !closed) {
                if (Thread.currentThread().isInterrupted()) {
                    break;
                }
                try {
                    if (remaining < 0) {
                        signalled.await();
                    } else {
                        remaining = Math.max(0, signalled.awaitNanos(remaining));
                    }
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            wakeupPending = false;
            count = size;
            if (handOver.length < count) {
                handOver = new long[tokens.length];
            }
            for (int i = 0; i < count; i++) {
                handOver[i] = tokens[(head + i) % tokens.length];
            }
            head = 0;
            size = 0;
        } finally {
            lock.unlock();
        }
        for (int i = 0; i < count; i++) {
            handler.onReady(handOver[i]);
        }
        return count;
    }

    @Override
    public void wakeup() {
        lock.lock();
        try {
            wakeupPending = true;
            signalled.signal();
        } finally {
            lock.unlock();
        }
    }

    void attach() {
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException("readiness source is closed");
            }
            users++;
        } finally {
            lock.unlock();
        }
    }

    void detach() {
        lock.lock();
        try {
            users--;
        } finally {
            lock.unlock();
        }
    }

    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            if (users != 0) {
                throw new IllegalStateException("readiness source is still used by " + users
                    + " completion queues: close them first");
            }
            closed = true;
            signalled.signalAll();
        } finally {
            lock.unlock();
        }
        device.childClosed(ResourceCounter.Kind.READINESS_SOURCE);
    }

    @Override
    public String toString() {
        return "ShmReadinessSource{pending=" + size + ", closed=" + closed + '}';
    }
}
