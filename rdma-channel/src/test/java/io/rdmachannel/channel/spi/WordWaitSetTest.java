package io.rdmachannel.channel.spi;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.internal.Futex;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * One thread sleeping on several shared words at once ({@code futex_waitv}): woken by a wake of any of them, by a
 * word that already differs, by the set's own wake, and by its absolute deadline; full sets refuse words.
 */
@Timeout(20)
class WordWaitSetTest {
    private static final VarHandle INT = JAVA_INT.varHandle();
    private static final long NOT_WOKEN_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final Arena arena = Arena.ofShared();
    private final MemorySegment words = arena.allocate(64, 64);

    @BeforeEach
    void requireFutexWaitv() {
        assertTrue(WordWaitSet.isAvailable(), "the test JVM runs with native access on Linux 5.16 or later: "
            + WordWaitSet.unavailabilityReason());
    }

    @AfterEach
    void close() {
        arena.close();
    }

    /** Sleep on the set on a platform thread; completes with the time it returned. */
    private static CompletableFuture<Long> sleeping(final WordWaitSet set, final long deadline) {
        final CompletableFuture<Long> returned = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("wait-set").start(() -> {
            set.await(deadline);
            returned.complete(System.nanoTime());
        });
        return returned;
    }

    /** Bump a word and wake its sleepers, as a completion queue's producer does. */
    private void bumpAndWake(final long offset) {
        INT.getAndAdd(words, offset, 1);
        Futex.wake(words, offset);
    }

    @Test
    void shouldReturnWhenAnyWordOfTheSetIsWokenAndSayWhichMoved() throws Exception {
        final WordWaitSet set = new WordWaitSet();
        set.clear();
        assertTrue(set.add(words, 0, 0));
        final int second = set.size();
        assertTrue(set.add(words, 8, 0));
        final CompletableFuture<Long> returned = sleeping(set, 0);
        Thread.sleep(50);
        assertFalse(returned.isDone(), "nothing woke the set yet");

        bumpAndWake(8);
        returned.get(5, TimeUnit.SECONDS);
        assertFalse(set.changed(1, second), "the first word did not move");
        assertTrue(set.changed(second, set.size()), "the second word moved");
    }

    @Test
    void shouldNotSleepWhenAWordAlreadyDiffersFromWhatTheCallerSaw() throws Exception {
        final WordWaitSet set = new WordWaitSet();
        set.clear();
        INT.setVolatile(words, 4L, 7);
        assertTrue(set.add(words, 4, 6));
        final long start = System.nanoTime();
        set.await(start + TimeUnit.SECONDS.toNanos(10));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "returned at once");
        assertTrue(set.changed(1, 2));
    }

    @Test
    void shouldReturnOnItsOwnWakeFromAnotherThreadAlsoBeforeItSleeps() throws Exception {
        final WordWaitSet set = new WordWaitSet();
        set.clear();
        assertTrue(set.add(words, 0, 0));
        final CompletableFuture<Long> returned = sleeping(set, 0);
        Thread.sleep(50);
        set.wake();
        returned.get(5, TimeUnit.SECONDS);
        assertFalse(set.changed(1, 2), "the caller's word did not move");

        // a wake between clear() and await() is not lost
        set.clear();
        assertTrue(set.add(words, 0, 0));
        set.wake();
        final long start = System.nanoTime();
        set.await(start + TimeUnit.SECONDS.toNanos(10));
        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "returned at once");
    }

    @Test
    void shouldReturnAtItsDeadlineAndNotBefore() throws Exception {
        final WordWaitSet set = new WordWaitSet();
        set.clear();
        assertTrue(set.add(words, 0, 0));
        final long start = System.nanoTime();
        final long deadline = start + NOT_WOKEN_NANOS;
        final long returned = sleeping(set, deadline).get(5, TimeUnit.SECONDS);
        assertTrue(returned - deadline >= 0, "returned " + (deadline - returned) + " ns before the deadline");
    }

    @Test
    void shouldHoldAtMostItsCapacityAndDropWhatATruncationTakesBack() {
        final WordWaitSet set = new WordWaitSet();
        set.clear();
        assertEquals(1, set.size(), "its own wake word");
        while (set.remaining() > 0) {
            assertTrue(set.add(words, 0, 0));
        }
        assertEquals(WordWaitSet.CAPACITY, set.size());
        assertFalse(set.add(words, 4, 0), "full");
        set.truncate(2);
        assertEquals(2, set.size());
        assertThrows(IllegalArgumentException.class, () -> set.truncate(0));
        assertThrows(IndexOutOfBoundsException.class, () -> set.add(words, 62, 0));
        set.clear();
        assertEquals(1, set.size());
    }

    @Test
    void shouldSayAWordWhoseMemoryIsGoneMoved() {
        final WordWaitSet set = new WordWaitSet();
        set.clear();
        final Arena gone = Arena.ofShared();
        assertTrue(set.add(gone.allocate(JAVA_INT), 0, 0));
        assertFalse(set.changed(1, 2));
        gone.close();
        assertTrue(set.changed(1, 2), "a closed queue's word counts as moved");
    }
}
