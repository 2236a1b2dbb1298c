package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.internal.Futex;
import io.rdmachannel.channel.shm.ShmFixture.Config;
import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A thread waiting on a completion queue itself (a futex on the queue's shared file) is woken directly by the
 * peer's post, by wakeWaiters, by the peer's end, or its timeout; without the readiness source.
 */
@Timeout(20)
class ShmDirectWaitTest {
    private static final long NO_WAKE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @BeforeEach
    void requireFutexes() {
        assertTrue(Futex.isAvailable(), "the test JVM runs with native access: " + Futex.unavailabilityReason());
    }

    /** A platform thread that arms nothing itself and waits with the ticket, recording when it returned. */
    private static CompletableFuture<Long> waiting(final Pair pair, final int ticket, final long timeoutNanos,
        final Thread[] thread) {
        final CompletableFuture<Long> returned = new CompletableFuture<>();
        thread[0] = Thread.ofPlatform().daemon().start(() -> {
            pair.b.cq.awaitWakeup(ticket, timeoutNanos);
            returned.complete(System.nanoTime());
        });
        return returned;
    }

    /** Wait until the thread sits in the futex system call (a native frame on top). */
    private static void awaitInFutex(final Thread thread) {
        ShmFixture.awaitCondition(thread.getName() + " to wait in the futex", () -> {
            // the downcall's own frames are hidden: the futex call is the top frame shown
            final StackTraceElement[] stack = thread.getStackTrace();
            return stack.length > 0 && stack[0].getClassName().equals(Futex.class.getName());
        });
    }

    @Test
    void shouldWakeAWaitingThreadDirectlyFromThePeersPost() throws Exception {
        final Pair pair = fixture.pair(new Config().readinessSources(true));
        assertTrue(pair.b.cq.supportsDirectWait());
        pair.b.postReceive(5, 0, 64);
        final int ticket = pair.b.cq.requestWaiterWakeup();
        assertTrue(pair.b.poll().isEmpty(), "nothing arrived before arming");
        final Thread[] thread = new Thread[1];
        final CompletableFuture<Long> returned = waiting(pair, ticket, -1, thread);
        awaitInFutex(thread[0]);

        pair.a.postSend(WorkRequestOpcode.SEND, 1, 0, 0, 8);

        returned.get(10, TimeUnit.SECONDS);
        assertEquals(5, pair.b.awaitOne().id());
        assertEquals(0, pair.b.source.await(NO_WAKE_NANOS, token -> { }),
            "a queue armed for a waiter only does not signal the readiness source");
    }

    @Test
    void shouldSignalBothAWaiterAndTheReadinessSourceWhenArmedForBoth() throws Exception {
        final Pair pair = fixture.pair(new Config().readinessSources(true));
        pair.b.postReceive(5, 0, 64);
        pair.b.cq.requestNotification();
        final int ticket = pair.b.cq.requestWaiterWakeup();
        final Thread[] thread = new Thread[1];
        final CompletableFuture<Long> returned = waiting(pair, ticket, -1, thread);
        awaitInFutex(thread[0]);

        pair.a.postSend(WorkRequestOpcode.SEND, 1, 0, 0, 8);

        returned.get(10, TimeUnit.SECONDS);
        final List<Long> tokens = new ArrayList<>();
        assertEquals(1, pair.b.source.await(TimeUnit.SECONDS.toNanos(10), tokens::add));
        assertEquals(List.of(pair.b.cq.token()), tokens);
    }

    /**
     * A waiter whose wait ended otherwise (a selector woken by another queue) takes its arming back: the peer's next
     * post then wakes nobody (the waiter word does not move, so the ticket a new waiter gets is the old one).
     */
    @Test
    void shouldLetAWaiterTakeItsArmingBackSoThePeersNextPostWakesNobody() throws Exception {
        final Pair pair = fixture.pair(new Config());
        pair.b.postReceive(5, 0, 64);
        pair.b.postReceive(6, 0, 64);
        assertFalse(pair.b.cq.cancelWaiterWakeup(), "nothing armed yet");
        final int ticket = pair.b.cq.requestWaiterWakeup();
        assertTrue(pair.b.cq.cancelWaiterWakeup());
        assertFalse(pair.b.cq.cancelWaiterWakeup(), "taken back once");

        pair.a.postSend(WorkRequestOpcode.SEND, 1, 0, 0, 8);
        assertEquals(5, pair.b.awaitOne().id());
        assertEquals(ticket, pair.b.cq.requestWaiterWakeup(), "the post woke nobody");

        pair.a.postSend(WorkRequestOpcode.SEND, 2, 0, 0, 8);
        assertEquals(6, pair.b.awaitOne().id());
        assertEquals(ticket + 1, pair.b.cq.requestWaiterWakeup(), "armed, the post bumps the word and wakes");
    }

    @Test
    void shouldReturnAtOnceWhenSignalledBetweenArmingAndWaiting() throws Exception {
        final Pair pair = fixture.pair(new Config());
        pair.b.postReceive(5, 0, 64);
        final int ticket = pair.b.cq.requestWaiterWakeup();
        pair.a.postSend(WorkRequestOpcode.SEND, 1, 0, 0, 8);

        final long start = System.nanoTime();
        pair.b.cq.awaitWakeup(ticket, TimeUnit.SECONDS.toNanos(10));

        assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5), "the wake-up before the wait was lost");
    }

    @Test
    void shouldWakeOnWakeWaitersAndOnTheTimeout() throws Exception {
        final Pair pair = fixture.pair(new Config());
        final Thread[] thread = new Thread[1];
        final CompletableFuture<Long> returned = waiting(pair, pair.b.cq.requestWaiterWakeup(), -1, thread);
        awaitInFutex(thread[0]);

        pair.b.cq.wakeWaiters();

        returned.get(10, TimeUnit.SECONDS);
        final long start = System.nanoTime();
        pair.b.cq.awaitWakeup(pair.b.cq.requestWaiterWakeup(), NO_WAKE_NANOS);
        assertTrue(System.nanoTime() - start >= NO_WAKE_NANOS * 9 / 10, "returned before its timeout");
    }

    @Test
    void shouldWakeAWaiterWhenThePeerQueuePairGoes() throws Exception {
        final Pair pair = fixture.pair(new Config());
        pair.b.postReceive(5, 0, 64);
        final Thread[] thread = new Thread[1];
        final CompletableFuture<Long> returned = waiting(pair, pair.b.cq.requestWaiterWakeup(), -1, thread);
        awaitInFutex(thread[0]);

        pair.a.qp.close();

        returned.get(10, TimeUnit.SECONDS);
        assertEquals(CompletionStatus.WORK_REQUEST_FLUSHED, pair.b.awaitOne().status());
    }
}
