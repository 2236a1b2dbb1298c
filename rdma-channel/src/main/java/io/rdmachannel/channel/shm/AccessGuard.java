package io.rdmachannel.channel.shm;

import java.lang.foreign.MemorySegment;

/**
 * A guard word in shared memory in front of memory that is reused: a queue-pair block, a memory-region table entry.
 * It holds the identity of the current user of the memory (a queue pair's incarnation, a region's key) and how many
 * peer accesses are under way.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |        Identity (high 32 bits of the long; 0 = revoked)       |
 *  +---------------------------------------------------------------+
 *  |        Accesses under way (low 32 bits)                       |
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * A peer {@link #enter enters} with the identity it was given and touches the memory only if that succeeds; the owner
 * {@link #revoke revokes} the identity, so no new access can start, and reuses the memory only once the accesses
 * under way have {@link #awaitDrained drained}. A peer that died inside an access leaves the count up: that memory is
 * never reused.
 */
final class AccessGuard {
    static final int LENGTH = Long.BYTES;
    private static final long USERS_MASK = 0xFFFF_FFFFL;

    private AccessGuard() {
    }

    /**
     * Give the memory to a new user; only on memory that was revoked and drained (or never used).
     */
    static void publish(final MemorySegment segment, final long offset, final int identity) {
        Atomics.setLongVolatile(segment, offset, (long) identity << 32);
    }

    /**
     * The identity the memory currently belongs to, 0 if revoked.
     */
    static int identity(final MemorySegment segment, final long offset) {
        return (int) (Atomics.getLongVolatile(segment, offset) >>> 32);
    }

    /**
     * Start an access on behalf of {@code identity}.
     *
     * @return false if the memory no longer belongs to it: the caller must not touch the memory.
     */
    static boolean enter(final MemorySegment segment, final long offset, final int identity) {
        if (identity == 0) {
            return false;
        }
        while (true) {
            final long word = Atomics.getLongVolatile(segment, offset);
            if ((int) (word >>> 32) != identity) {
                return false;
            }
            if (Atomics.compareAndSetLong(segment, offset, word, word + 1)) {
                return true;
            }
        }
    }

    /**
     * End an access that {@link #enter} started.
     */
    static void exit(final MemorySegment segment, final long offset) {
        Atomics.getAndAddLong(segment, offset, -1);
    }

    /**
     * Revoke the identity: no access starts after this returns.
     */
    static void revoke(final MemorySegment segment, final long offset) {
        while (true) {
            final long word = Atomics.getLongVolatile(segment, offset);
            if (Atomics.compareAndSetLong(segment, offset, word, word & USERS_MASK)) {
                return;
            }
        }
    }

    /**
     * Wait, bounded, until no access is under way; call after {@link #revoke}.
     *
     * @return true if the memory may be reused, false if an access is still under way (or its peer died in it).
     */
    static boolean awaitDrained(final MemorySegment segment, final long offset, final long timeoutNanos) {
        long spins = 0;
        long deadline = 0;
        while ((Atomics.getLongVolatile(segment, offset) & USERS_MASK) != 0) {
            if (++spins < 100) {
                Thread.onSpinWait();
                continue;
            }
            final long now = System.nanoTime();
            if (deadline == 0) {
                deadline = now + timeoutNanos;
            } else if (now - deadline > 0) {
                return false;
            }
            Thread.yield();
        }
        return true;
    }
}
