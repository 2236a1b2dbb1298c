package io.rdmachannel.nio;

/**
 * How long a waiting thread busy-polls before it arms and parks, learned from how recent waits ended, so that a
 * quick reply is caught without a park and an idle connection costs no CPU. The budget never exceeds the configured
 * {@code RDMA_BUSY_POLL}.
 *
 * <p>The budget starts at the ceiling. A wait that the spin ended (the event came while polling) keeps it at the
 * ceiling; a wait that had to park halves it, so after a few waits of an idle or slow connection it reaches 0 and the
 * thread parks at once. A budget of 0 is probed with the ceiling every {@value #PROBE_PERIOD}th wait, so a connection
 * that turns busy again (a ping-pong starting) is noticed: the waste is bounded by one ceiling's spin per that many
 * waits, which on an idle connection are long anyway.
 *
 * <p>One instance per waiting role (a channel's reader, its writer, a selector), used by one thread at a time (the
 * holder of the read lock, the write lock, the selection lock): no synchronisation.
 */
final class AdaptiveSpin {
    /** Every how many waits a zero budget is probed with the ceiling. */
    static final int PROBE_PERIOD = 8;
    /** Budgets below this are 0: a spin shorter than this cannot catch a reply that would not have come anyway. */
    static final long MIN_SPIN_NANOS = 1_000;

    private long budget = -1;
    private int waitsAtZero;

    /**
     * The spin budget of the next wait.
     *
     * @param ceiling the configured busy-poll time in nanoseconds; 0 never spins.
     * @return nanoseconds to spin, in [0, ceiling].
     */
    long next(final long ceiling) {
        if (ceiling <= 0) {
            return 0;
        }
        if (budget < 0 || budget > ceiling) {
            budget = ceiling;
        }
        if (budget > 0) {
            return budget;
        }
        if (++waitsAtZero >= PROBE_PERIOD) {
            waitsAtZero = 0;
            return ceiling;
        }
        return 0;
    }

    /**
     * How the wait ended.
     *
     * @param caught true if the spin saw the event, false if the thread had to arm and park.
     * @param ceiling the configured busy-poll time in nanoseconds.
     */
    void ended(final boolean caught, final long ceiling) {
        if (caught) {
            budget = ceiling;
            waitsAtZero = 0;
        } else if (budget > 0) {
            budget = budget / 2 < MIN_SPIN_NANOS ? 0 : budget / 2;
        }
    }

    /**
     * The current budget, for diagnostics.
     */
    long budget() {
        return Math.max(0, budget);
    }
}
