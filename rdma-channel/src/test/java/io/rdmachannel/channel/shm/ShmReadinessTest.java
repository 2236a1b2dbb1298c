package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.shm.ShmFixture.Completion;
import io.rdmachannel.channel.shm.ShmFixture.Config;
import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.shm.ShmFixture.Side;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Readiness sources: armed completion queues wake a waiter once per arming, across devices.
 */
@Timeout(20)
class ShmReadinessTest {
    /** The one place a timeout proves that nothing happened. */
    private static final long NO_WAKE_NANOS = TimeUnit.MILLISECONDS.toNanos(50);

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    /** What a waiting thread saw: the tokens, the completions it polled afterwards, its interrupt status. */
    record Woken(int count, List<Long> tokens, List<Completion> completions, boolean interrupted) {
    }

    private static Thread start(final boolean virtual, final Runnable task) {
        return virtual ? Thread.ofVirtual().start(task) : Thread.ofPlatform().daemon().start(task);
    }

    /** Start a thread that waits on the side's source without limit, then polls the side's queue. */
    private static CompletableFuture<Woken> waiter(final Side side, final boolean virtual, final Thread[] thread) {
        final CompletableFuture<Woken> result = new CompletableFuture<>();
        thread[0] = start(virtual, () -> {
            try {
                final List<Long> tokens = new CopyOnWriteArrayList<>();
                final int count = side.source.await(-1, tokens::add);
                final boolean interrupted = Thread.currentThread().isInterrupted();
                result.complete(new Woken(count, tokens, side.poll(), interrupted));
            } catch (final Throwable ex) {
                result.completeExceptionally(ex);
            }
        });
        return result;
    }

    @ParameterizedTest(name = "virtual {0}")
    @ValueSource(booleans = {false, true})
    void shouldWakeAWaiterWhenACompletionArrivesFromThePeer(final boolean virtual) throws Exception {
        final Pair pair = fixture.pair(new Config().readinessSources(true));
        pair.b.postReceive(5, 0, 64);
        pair.b.cq.requestNotification();
        final Thread[] thread = new Thread[1];
        final CompletableFuture<Woken> woken = waiter(pair.b, virtual, thread);
        ShmFixture.awaitBlocked(thread[0]);
        pair.a.postSend(WorkRequestOpcode.SEND, 1, 0, 0, 8);
        final Woken seen = woken.get(10, TimeUnit.SECONDS);
        assertEquals(1, seen.count());
        assertEquals(List.of(pair.b.cq.token()), seen.tokens());
        assertEquals(1, seen.completions().size());
        assertEquals(5, seen.completions().getFirst().id());
        assertEquals(CompletionStatus.SUCCESS, seen.completions().getFirst().status());
    }

    @Test
    void shouldSignalOncePerArming() throws Exception {
        final Pair pair = fixture.pair(new Config().readinessSources(true));
        pair.b.postReceive(5, 0, 64);
        pair.b.postReceive(6, 0, 64);
        pair.b.postReceive(7, 0, 64);
        pair.b.cq.requestNotification();
        pair.a.postSend(WorkRequestOpcode.SEND, 1, 0, 0, 8);
        pair.a.postSend(WorkRequestOpcode.SEND, 2, SendFlags.SIGNALED, 0, 8);
        assertEquals(CompletionStatus.SUCCESS, pair.a.awaitOne().status());
        final List<Long> tokens = new CopyOnWriteArrayList<>();
        assertEquals(1, pair.b.source.await(-1, tokens::add));
        assertEquals(List.of(pair.b.cq.token()), tokens);
        assertEquals(2, pair.b.await(2).size());
        assertEquals(0, pair.b.source.await(NO_WAKE_NANOS, tokens::add));
        // armed again, the next completion signals again
        pair.b.cq.requestNotification();
        pair.a.postSend(WorkRequestOpcode.SEND, 3, 0, 0, 8);
        assertEquals(1, pair.b.source.await(-1, tokens::add));
        assertEquals(7, pair.b.awaitOne().id());
    }

    @Test
    void shouldDispatchDirectlyOnTheSignallingThreadWithoutLosingAQueuedToken() throws Exception {
        // one device: the posting thread itself signals the peer's queue, so every step below is synchronous
        final Pair pair = fixture.pair(new Config().readinessSources(true).sameDevice(true));
        pair.b.postReceive(5, 0, 64);
        pair.b.postReceive(6, 0, 64);
        pair.b.cq.requestNotification();
        pair.a.postSend(WorkRequestOpcode.SEND, 1, 0, 0, 8);
        final List<Long> tokens = new CopyOnWriteArrayList<>();

        // the token queued before the switch is handed over by the switch itself
        assertTrue(pair.b.source.dispatchDirectly(tokens::add));
        assertEquals(List.of(pair.b.cq.token()), tokens);
        assertEquals(5, pair.b.awaitOne().id());

        // a later signal runs the handler before the post that raised it returns
        pair.b.cq.requestNotification();
        pair.a.postSend(WorkRequestOpcode.SEND, 2, 0, 0, 8);
        assertEquals(List.of(pair.b.cq.token(), pair.b.cq.token()), tokens);
        assertEquals(6, pair.b.awaitOne().id());
        assertEquals("readiness source dispatches directly; nothing waits on it", org.junit.jupiter.api.Assertions
            .assertThrows(IllegalStateException.class, () -> pair.b.source.await(0, tokens::add)).getMessage());
    }

    @Test
    void shouldSignalTheSendQueueOfThePostingSide() throws Exception {
        final Pair pair = fixture.pair(new Config().readinessSources(true));
        pair.a.cq.requestNotification();
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 1, SendFlags.SIGNALED, 0, 8, pair.b.mr.address(),
            pair.b.mr.remoteKey());
        final List<Long> tokens = new CopyOnWriteArrayList<>();
        assertEquals(1, pair.a.source.await(-1, tokens::add));
        assertEquals(List.of(pair.a.cq.token()), tokens);
        assertEquals(1, pair.a.awaitOne().id());
    }

    @ParameterizedTest(name = "virtual thread and one device {0}")
    @ValueSource(booleans = {false, true})
    void shouldWakeASolicitedWaiterOnlyForASolicitedSend(final boolean virtual) throws Exception {
        final Pair pair = fixture.pair(new Config().readinessSources(true).sameDevice(virtual));
        pair.b.postReceive(5, 0, 64);
        pair.b.postReceive(6, 0, 64);
        pair.b.cq.requestSolicitedNotification();
        pair.a.postSend(WorkRequestOpcode.SEND, 1, SendFlags.SIGNALED, 0, 8);
        assertEquals(CompletionStatus.SUCCESS, pair.a.awaitOne().status());
        final List<Long> tokens = new CopyOnWriteArrayList<>();
        assertEquals(0, pair.b.source.await(NO_WAKE_NANOS, tokens::add));
        final Thread[] thread = new Thread[1];
        final CompletableFuture<Woken> woken = waiter(pair.b, virtual, thread);
        ShmFixture.awaitBlocked(thread[0]);
        pair.a.postSend(WorkRequestOpcode.SEND_WITH_IMM, 2, SendFlags.SOLICITED, 0, 8);
        final Woken seen = woken.get(10, TimeUnit.SECONDS);
        assertEquals(1, seen.count());
        assertEquals(List.of(5L, 6L), seen.completions().stream().map(Completion::id).toList());
    }

    @Test
    void shouldWakeASolicitedWaiterForAnError() throws Exception {
        final Pair pair = fixture.pair(new Config().readinessSources(true));
        pair.b.postReceive(5, 0, 64);
        pair.b.cq.requestSolicitedNotification();
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 1, SendFlags.SIGNALED, 0, 8, pair.b.mr.address(),
            pair.b.mr.remoteKey() + 1);
        final List<Long> tokens = new CopyOnWriteArrayList<>();
        assertEquals(1, pair.b.source.await(-1, tokens::add));
        assertEquals(CompletionStatus.WORK_REQUEST_FLUSHED, pair.b.awaitOne().status());
    }

    @ParameterizedTest(name = "virtual {0}")
    @ValueSource(booleans = {false, true})
    void shouldReturnZeroOnWakeup(final boolean virtual) throws Exception {
        final ReadinessSource source = fixture.own(fixture.device().createReadinessSource());
        final CompletableFuture<Integer> result = new CompletableFuture<>();
        final Thread thread = start(virtual, () -> {
            try {
                result.complete(source.await(-1, token -> { }));
            } catch (final Throwable ex) {
                result.completeExceptionally(ex);
            }
        });
        ShmFixture.awaitBlocked(thread);
        source.wakeup();
        assertEquals(0, result.get(10, TimeUnit.SECONDS));
    }

    @Test
    void shouldKeepAWakeupForTheNextAwait() throws Exception {
        final ReadinessSource source = fixture.own(fixture.device().createReadinessSource());
        source.wakeup();
        source.wakeup();
        assertEquals(0, source.await(-1, token -> { }));
        // consumed: the next await waits for its timeout
        final long start = System.nanoTime();
        assertEquals(0, source.await(NO_WAKE_NANOS, token -> { }));
        assertTrue(System.nanoTime() - start >= NO_WAKE_NANOS);
    }

    @Test
    void shouldReturnZeroAndKeepTheInterruptStatus() throws Exception {
        final ReadinessSource source = fixture.own(fixture.device().createReadinessSource());
        Thread.currentThread().interrupt();
        try {
            assertEquals(0, source.await(-1, token -> { }));
            assertTrue(Thread.currentThread().isInterrupted());
        } finally {
            Thread.interrupted();
        }
    }

    @ParameterizedTest(name = "virtual {0}")
    @ValueSource(booleans = {false, true})
    void shouldReturnZeroWhenABlockedWaiterIsInterrupted(final boolean virtual) throws Exception {
        final Pair pair = fixture.pair(new Config().readinessSources(true));
        final Thread[] thread = new Thread[1];
        final CompletableFuture<Woken> woken = waiter(pair.b, virtual, thread);
        ShmFixture.awaitBlocked(thread[0]);
        thread[0].interrupt();
        final Woken seen = woken.get(10, TimeUnit.SECONDS);
        assertEquals(0, seen.count());
        assertTrue(seen.interrupted());
        assertEquals(List.of(), seen.completions());
    }

    @Test
    void shouldReturnZeroWhenClosedUnderAWaiter() throws Exception {
        final ReadinessSource source = fixture.device().createReadinessSource();
        final CompletableFuture<Integer> result = new CompletableFuture<>();
        final Thread thread = start(false, () -> {
            try {
                result.complete(source.await(-1, token -> { }));
            } catch (final Throwable ex) {
                result.completeExceptionally(ex);
            }
        });
        ShmFixture.awaitBlocked(thread);
        source.close();
        assertEquals(0, result.get(10, TimeUnit.SECONDS));
        assertFalse(thread.isInterrupted());
    }
}
