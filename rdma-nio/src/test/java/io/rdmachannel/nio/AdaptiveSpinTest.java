package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/**
 * How long a waiting thread spins: learned per waiting role from its own waits, and for a role's first wait from the
 * first waits of the roles of its kind before it.
 */
class AdaptiveSpinTest {
    private static final long CEILING = 50_000;
    /** More waits than any loop of these tests needs: one that goes on fails instead of hanging. */
    private static final int MAX_WAITS = 100;

    @Test
    void shouldHalveTheBudgetOnEachParkedWaitProbeAtZeroAndGoBackToTheCeilingOnACaughtOne() {
        final AdaptiveSpin spin = new AdaptiveSpin();
        assertEquals(CEILING, spin.next(CEILING), "a role without first-wait history starts at the ceiling");
        long expected = CEILING;
        while (expected > 0) {
            spin.ended(false, CEILING);
            expected = expected / 2 < AdaptiveSpin.MIN_SPIN_NANOS ? 0 : expected / 2;
            assertEquals(expected, spin.next(CEILING));
        }
        for (int wait = 2; wait < AdaptiveSpin.PROBE_PERIOD; wait++) {
            spin.ended(false, CEILING);
            assertEquals(0, spin.next(CEILING), "wait " + wait + " at zero");
        }
        spin.ended(false, CEILING);
        assertEquals(CEILING, spin.next(CEILING), "every " + AdaptiveSpin.PROBE_PERIOD + "th wait at zero probes");
        spin.ended(true, CEILING);
        assertEquals(CEILING, spin.next(CEILING), "a caught wait restores the ceiling");
        assertEquals(0, spin.next(0), "no ceiling, no spin");
    }

    @Test
    void shouldStartANewRolesFirstWaitFromWhatTheFirstWaitsBeforeItLearned() {
        final AdaptiveSpin.FirstWaits firstWaits = new AdaptiveSpin.FirstWaits();
        // short connections: each role waits once, for a reply that never comes within a spin
        long expected = CEILING;
        int roles = 0;
        while (expected > 0) {
            final AdaptiveSpin spin = new AdaptiveSpin(firstWaits);
            assertEquals(expected, spin.next(CEILING), "first wait of role " + roles);
            spin.ended(false, CEILING);
            expected = expected / 2 < AdaptiveSpin.MIN_SPIN_NANOS ? 0 : expected / 2;
            roles++;
        }
        assertEquals(0, firstWaits.budget(CEILING));
        int probes = 0;
        for (int role = 0; role < 4 * AdaptiveSpin.PROBE_PERIOD; role++) {
            final AdaptiveSpin spin = new AdaptiveSpin(firstWaits);
            final long budget = spin.next(CEILING);
            if (budget == CEILING) {
                probes++;
            } else {
                assertEquals(0, budget, "a new role's first wait parks at once");
            }
            spin.ended(false, CEILING);
        }
        assertEquals(4, probes, "one new role in " + AdaptiveSpin.PROBE_PERIOD + " probes");

        // a probe that catches its event: the next new role spins the whole ceiling again, and so does its next wait
        AdaptiveSpin spin;
        int untilProbe = 0;
        do {
            assertTrue(++untilProbe < MAX_WAITS, "no new role probed");
            spin = new AdaptiveSpin(firstWaits);
        } while (spin.next(CEILING) != CEILING);
        spin.ended(true, CEILING);
        final AdaptiveSpin next = new AdaptiveSpin(firstWaits);
        assertEquals(CEILING, next.next(CEILING));
        next.ended(true, CEILING);
        assertEquals(CEILING, next.next(CEILING));
        assertEquals(CEILING / 2, firstWaits.budget(CEILING / 2), "a smaller ceiling caps what was learned");
    }

    @Test
    void shouldLearnOnlyFromFirstWaitsNotFromTheWaitsAfter() {
        final AdaptiveSpin.FirstWaits firstWaits = new AdaptiveSpin.FirstWaits();
        final AdaptiveSpin spin = new AdaptiveSpin(firstWaits);
        assertEquals(CEILING, spin.next(CEILING));
        spin.ended(true, CEILING);
        for (int wait = 0; wait < 20; wait++) {
            spin.next(CEILING);
            spin.ended(false, CEILING);
        }
        assertEquals(0, spin.next(CEILING), "the role's own budget went down");
        assertEquals(CEILING, firstWaits.budget(CEILING), "what a role does after its first wait is its own");
    }

    @Test
    void shouldNotCountALaterProbeOfARoleWhoseFirstWaitDidNotSpinAsAFirstWait() {
        final AdaptiveSpin.FirstWaits firstWaits = new AdaptiveSpin.FirstWaits();
        for (int roles = 0; firstWaits.budget(CEILING) > 0; roles++) {
            assertTrue(roles < MAX_WAITS, "the first waits never learned to park at once");
            final AdaptiveSpin spin = new AdaptiveSpin(firstWaits);
            spin.next(CEILING);
            spin.ended(false, CEILING);
        }
        AdaptiveSpin spin;
        int roles = 0;
        do {
            assertTrue(++roles < MAX_WAITS, "no new role got a budget of 0");
            spin = new AdaptiveSpin(firstWaits);
        } while (spin.next(CEILING) != 0);
        // the caller spins nothing and reports nothing for a budget of 0; the role probes on its own later
        long budget;
        int waits = 0;
        do {
            assertTrue(++waits < MAX_WAITS, "the role never probed");
            budget = spin.next(CEILING);
        } while (budget == 0);
        assertEquals(CEILING, budget);
        spin.ended(true, CEILING);
        assertEquals(0, firstWaits.budget(CEILING), "a role's own probe is not a first wait");
    }

    @Test
    void shouldShareFirstWaitsPerKindOfChannelOnOneProvider() {
        final RdmaSelectorProvider provider = new RdmaSelectorProvider(new FakeTransport());
        assertSame(provider.firstWaits(true, true), provider.firstWaits(true, true));
        assertNotSame(provider.firstWaits(true, true), provider.firstWaits(false, true),
            "accepted channels' readers wait for other things than connected channels' readers");
        assertNotSame(provider.firstWaits(true, true), provider.firstWaits(true, false));
        assertNotSame(provider.firstWaits(false, true), provider.firstWaits(false, false));
        assertNotSame(provider.firstWaits(true, false), provider.firstWaits(false, false));
    }
}
