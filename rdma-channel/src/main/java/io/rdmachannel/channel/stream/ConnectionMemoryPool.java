package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.ProtectionDomain;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The memory of connections that ended, kept registered for the next connections of the same shape on one device
 * context. Creating it costs more than a short connection's whole exchange: a registration per region (on a verbs
 * device a kernel call that pins pages; on shm a shared file mapped into the process) and, when it is freed, the
 * closing of shared memory scopes, each a handshake with every thread of the JVM.
 *
 * <p>Memory comes back only when the connection's queue pair is closed and {@linkplain
 * io.rdmachannel.channel.spi.QueuePair#peerAccessEnded() quiescent}: no request of the old peer can reach it any
 * more (remote access needs a live queue pair of this protection domain connected to it, not only the key), so the
 * next connection's peer is the only one that can write it. What peers write of it is zeroed before it is kept
 * ({@link ConnectionMemory#clear}). At most {@code capacity} sets are kept idle, the oldest released beyond that; a set
 * idle for {@code idleMillis} is released by a sweep on the transport's timer, so an idle process gives its memory
 * back; all are released when the context closes.
 */
final class ConnectionMemoryPool implements AutoCloseable {
    private final ProtectionDomain domain;
    private final int capacity;
    private final long idleNanos;
    private final Scheduler scheduler;
    private final Runnable sweep = this::sweep;
    // guarded by this; the most recently released last
    private final ArrayDeque<Idle> idle = new ArrayDeque<>();
    private boolean closed;
    private boolean sweepPending;
    private long reused;

    private record Idle(ConnectionMemory memory, long sinceNanos) {
    }

    /**
     * A pool for one protection domain.
     *
     * @param domain     where the memory is allocated and registered.
     * @param capacity   most idle sets kept; 0 keeps none.
     * @param idleMillis how long an idle set is kept.
     * @param scheduler  runs {@link #sweep()} once after a delay; the transport's timer.
     */
    ConnectionMemoryPool(final ProtectionDomain domain, final int capacity, final long idleMillis,
        final Scheduler scheduler) {
        this.domain = domain;
        this.capacity = capacity;
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(idleMillis);
        this.scheduler = scheduler;
    }

    /**
     * Runs a task once after a delay.
     */
    @FunctionalInterface
    interface Scheduler {
        /**
         * Run {@code task} once in {@code delayNanos}.
         *
         * @param task       the task.
         * @param delayNanos the delay.
         * @return false if the task will not run (the transport is closing).
         */
        boolean schedule(Runnable task, long delayNanos);
    }

    /**
     * Memory of {@code shape}: an idle set of that shape, or a new one.
     */
    ConnectionMemory acquire(final ConnectionMemory.Shape shape) throws IOException {
        synchronized (this) {
            if (!closed) {
                final Iterator<Idle> sets = idle.descendingIterator();
                while (sets.hasNext()) {
                    final ConnectionMemory memory = sets.next().memory();
                    if (memory.shape.equals(shape)) {
                        sets.remove();
                        reused++;
                        return memory;
                    }
                }
            }
        }
        return ConnectionMemory.allocate(domain, shape);
    }

    /**
     * Take back the memory of a connection whose resources are being released.
     *
     * @param memory   the memory, no longer used by its connection.
     * @param reusable whether nothing but a future peer can reach it (see the class comment); closed otherwise.
     */
    void release(final ConnectionMemory memory, final boolean reusable) {
        ConnectionMemory evicted = memory;
        boolean schedule = false;
        if (reusable && capacity > 0 && cleared(memory)) {
            synchronized (this) {
                if (!closed) {
                    idle.addLast(new Idle(memory, System.nanoTime()));
                    evicted = idle.size() > capacity ? idle.pollFirst().memory() : null;
                    schedule = !sweepPending;
                    sweepPending = true;
                }
            }
        }
        if (schedule && !scheduler.schedule(sweep, idleNanos)) {
            close();
        }
        if (evicted != null) {
            evicted.close();
        }
    }

    /**
     * Release the sets idle for longer than the idle time; schedule the next sweep while any remain.
     */
    void sweep() {
        final List<ConnectionMemory> expired = new ArrayList<>();
        long next = -1;
        synchronized (this) {
            final long now = System.nanoTime();
            while (!idle.isEmpty() && now - idle.peekFirst().sinceNanos() >= idleNanos) {
                expired.add(idle.pollFirst().memory());
            }
            if (!closed && !idle.isEmpty()) {
                next = Math.max(1, idle.peekFirst().sinceNanos() + idleNanos - now);
            } else {
                sweepPending = false;
            }
        }
        closeAll(expired);
        if (next > 0 && !scheduler.schedule(sweep, next)) {
            close();
        }
    }

    private static boolean cleared(final ConnectionMemory memory) {
        try {
            memory.clear();
            return true;
        } catch (final IllegalStateException ex) {
            // a scope closed under it (the device went away): it is closed instead
            return false;
        }
    }

    /**
     * Idle sets kept now; for the management view and tests.
     */
    synchronized int idleCount() {
        return idle.size();
    }

    /**
     * How many connections took an idle set instead of allocating.
     */
    synchronized long reusedCount() {
        return reused;
    }

    /**
     * Release every idle set; memory released later is closed at once.
     */
    @Override
    public void close() {
        final ConnectionMemory[] sets;
        synchronized (this) {
            closed = true;
            sets = idle.stream().map(Idle::memory).toArray(ConnectionMemory[]::new);
            idle.clear();
        }
        closeAll(List.of(sets).reversed());
    }

    private static void closeAll(final List<ConnectionMemory> sets) {
        RuntimeException failure = null;
        for (final ConnectionMemory set : sets) {
            failure = Closing.close(set, failure);
        }
        if (failure != null) {
            throw failure;
        }
    }
}
