package io.rdmachannel.nio;

/**
 * How long a waiting thread busy-polls before it arms and parks, learned from how recent waits ended, so that a
 * quick reply is caught without a park and an idle connection costs no CPU. The budget never exceeds the configured
 * {@code RDMA_BUSY_POLL}.
 *
 * <p>A wait that the spin ended (the event came while polling) sets the budget to the ceiling; a wait that had to
 * park halves it, so after a few waits of an idle or slow connection it reaches 0 and the thread parks at once. A
 * budget of 0 is probed with the ceiling every {@value #PROBE_PERIOD}th wait, so a connection that turns busy again
 * (a ping-pong starting) is noticed: the waste is bounded by one ceiling's spin per that many waits, which on an idle
 * connection are long anyway.
 *
 * <p>A channel's first wait has no history of its own: it takes its budget from the {@link FirstWaits} of its kind,
 * which learns the same way from the first waits of the channels before it. A server of short connections (each
 * makes a wait or two: connect, one exchange, close) thus stops spinning on every new connection for a reply that
 * comes after a thread hand-off or two on the other side, which on a loaded machine costs the other side the CPU it
 * needs; one new channel in {@value #PROBE_PERIOD} still probes.
 *
 * <p>One instance per waiting role (a channel's reader, its writer, a selector), used by one thread at a time (the
 * holder of the read lock, the write lock, the selection lock): no synchronisation.
 */
final class AdaptiveSpin {
    /** Every how many waits a zero budget is probed with the ceiling. */
    static final int PROBE_PERIOD = 8;
    /** Budgets below this are 0: a spin shorter than this cannot catch a reply that would not have come anyway. */
    static final long MIN_SPIN_NANOS = 1_000;

    private final FirstWaits firstWaits;
    private long budget = -1;
    private int waitsAtZero;
    /** The wait under way is this instance's first, and its end goes to {@link #firstWaits} too. */
    private boolean firstUnderWay;

    /**
     * A role whose first wait starts at the ceiling (a selector: long-lived, its first wait tells little).
     */
    AdaptiveSpin() {
        this(null);
    }

    /**
     * A role whose first wait takes its budget from {@code firstWaits} ({@code null}: the ceiling).
     */
    AdaptiveSpin(final FirstWaits firstWaits) {
        this.firstWaits = firstWaits;
    }

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
        if (budget < 0) {
            budget = firstWaits == null ? ceiling : firstWaits.next(ceiling);
            // a first wait that does not spin learns nothing; the role's later waits (probes too) are its own
            firstUnderWay = firstWaits != null && budget > 0;
            return budget;
        }
        if (budget > ceiling) {
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
        if (firstUnderWay) {
            firstUnderWay = false;
            firstWaits.ended(caught, ceiling);
        }
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

    /**
     * The budget of the first waits of one kind of channel (for example the readers of accepted channels), learned
     * from how the first waits of the channels before ended, by the rule of {@link AdaptiveSpin} itself. Shared by the
     * channels of a provider, whose threads take its lock once or twice in a channel's life.
     */
    static final class FirstWaits {
        private final AdaptiveSpin rule = new AdaptiveSpin();

        synchronized long next(final long ceiling) {
            return rule.next(ceiling);
        }

        synchronized void ended(final boolean caught, final long ceiling) {
            rule.ended(caught, ceiling);
        }

        /** The budget the next first wait gets under {@code ceiling} when it is not probed, for diagnostics. */
        synchronized long budget(final long ceiling) {
            return rule.budget < 0 ? ceiling : Math.min(rule.budget, ceiling);
        }
    }
}
