package io.rdmachannel.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.ffm.internal.LibC;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * The native wait set's own wake-up and deadline, without a device (its queues' channels are tested in the soft-RoCE
 * guest, {@code NativeProviderGuestTest}): a wake from another thread ends a wait in {@code poll}, a wake before the
 * wait ends it and is used up by it, the deadline holds, and a closed set ignores wakes.
 */
@EnabledOnOs(OS.LINUX)
@Timeout(20)
class ChannelWaitSetTest {
    private static final long LONG_NANOS = TimeUnit.SECONDS.toNanos(30);

    @Test
    void shouldEndAWaitInPollWhenAnotherThreadWakesIt() throws Exception {
        try (ChannelWaitSet set = new ChannelWaitSet()) {
            set.clear();
            CompletableFuture<Long> waited = new CompletableFuture<>();
            Thread thread = Thread.ofPlatform().daemon().name("set-waiter").start(() -> {
                long start = System.nanoTime();
                set.await(start + LONG_NANOS);
                waited.complete(System.nanoTime() - start);
            });
            awaitInPoll(thread, waited);
            set.wake();
            assertTrue(waited.get(10, TimeUnit.SECONDS) < LONG_NANOS);
            assertEquals(1, set.size());
            assertEquals(ChannelWaitSet.CAPACITY - 1, set.remaining());
        }
    }

    @Test
    void shouldReturnAtOnceWhenWokenBeforeTheWaitAndSleepAgainInTheNextRound() {
        try (ChannelWaitSet set = new ChannelWaitSet()) {
            set.clear();
            set.wake();
            long start = System.nanoTime();
            set.await(start + LONG_NANOS);
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "a wake before the wait ends it");

            // the round the wake ended drained it: the next round sleeps to its deadline, with no spurious return
            set.clear();
            start = System.nanoTime();
            set.await(start + TimeUnit.MILLISECONDS.toNanos(150));
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(140), "the wake was drained");
        }
    }

    @Test
    void shouldHonourTheDeadlineAndIgnoreWakesOnceClosed() {
        ChannelWaitSet set = new ChannelWaitSet();
        set.clear();
        long start = System.nanoTime();
        set.await(start + TimeUnit.MILLISECONDS.toNanos(120));
        assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(110), "returned before the deadline");
        set.await(start);
        assertFalse(set.changed(0, 1), "its own entry is never an event");
        assertThrows(IllegalArgumentException.class, () -> set.truncate(0));
        assertThrows(IllegalArgumentException.class, () -> set.truncate(2));
        set.close();
        set.wake();
        set.close();
        assertTrue(set.toString().contains("closed=true"), set::toString);
    }

    private static void awaitInPoll(Thread thread, CompletableFuture<?> finished) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            assertFalse(finished.isDone(), "returned before blocking in poll");
            StackTraceElement[] stack = thread.getStackTrace();
            if (stack.length > 0 && stack[0].getClassName().equals(LibC.class.getName())
                && stack[0].getMethodName().equals("poll")) {
                return;
            }
            Thread.sleep(5);
        }
        throw new AssertionError("the waiter did not block in poll");
    }
}
