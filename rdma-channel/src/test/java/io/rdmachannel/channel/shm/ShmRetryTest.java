package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.spi.CompletionStatus.RNR_RETRY_EXCEEDED;
import static io.rdmachannel.channel.spi.CompletionStatus.SUCCESS;
import static io.rdmachannel.channel.spi.CompletionStatus.TRANSPORT_RETRY_EXCEEDED;
import static io.rdmachannel.channel.spi.CompletionStatus.WORK_REQUEST_FLUSHED;
import static io.rdmachannel.channel.spi.QueuePairState.ERROR;
import static io.rdmachannel.channel.spi.QueuePairState.INIT;
import static io.rdmachannel.channel.spi.QueuePairState.READY_TO_RECEIVE;
import static io.rdmachannel.channel.spi.QueuePairState.READY_TO_SEND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.shm.ShmFixture.Completion;
import io.rdmachannel.channel.shm.ShmFixture.Config;
import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.lang.foreign.ValueLayout;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Receiver-not-ready and transport retries: a request that finds no receive or no ready peer waits at the head of
 * the send queue, and fails once its retries are spent.
 */
@Timeout(20)
class ShmRetryTest {
    /** RNR timer code 9: 0.24 ms. */
    private static final int RNR_TIMER = 9;

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @ParameterizedTest(name = "rnrRetry {0}")
    @ValueSource(ints = {0, 1, 2, 3, 4, 5, 6})
    void shouldFailASendWithNoReceiveAfterTheRnrRetries(final int rnrRetry) throws Exception {
        final Pair pair = fixture.pair(new Config().connectA(a -> a.rnrRetry(rnrRetry))
            .connectB(b -> b.minRnrTimer(RNR_TIMER)));
        final long start = System.nanoTime();
        pair.a.postSend(WorkRequestOpcode.SEND, 1, SendFlags.SIGNALED, 0, 8);
        pair.a.postSend(WorkRequestOpcode.SEND, 2, SendFlags.SIGNALED, 0, 8);
        final List<Completion> completions = pair.a.await(2);
        final long elapsed = System.nanoTime() - start;
        assertEquals(List.of(1L, 2L), completions.stream().map(Completion::id).toList());
        assertEquals(List.of(RNR_RETRY_EXCEEDED, WORK_REQUEST_FLUSHED),
            completions.stream().map(Completion::status).toList());
        assertTrue(elapsed >= rnrRetry * QueuePairAttributes.rnrTimerNanos(RNR_TIMER),
            "failed after " + elapsed + " ns");
        assertEquals(ERROR, pair.a.qp.state());
        // the responder merely had no receive: it is not in error
        assertEquals(READY_TO_SEND, pair.b.qp.state());
    }

    @Test
    void shouldFailAWriteWithImmediateWithNoReceiveAfterTheRnrRetries() throws Exception {
        final Pair pair = fixture.pair(new Config().connectA(a -> a.rnrRetry(2))
            .connectB(b -> b.minRnrTimer(1)));
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE_WITH_IMM, 1, SendFlags.SIGNALED, 0, 8, pair.b.mr.address(),
            pair.b.mr.remoteKey());
        assertEquals(RNR_RETRY_EXCEEDED, pair.a.awaitOne().status());
    }

    @Test
    void shouldWaitForAReceiveWithInfiniteRnrRetryAndKeepLaterPostsInOrder() throws Exception {
        final Pair pair = fixture.pair(new Config().connectA(a -> a.rnrRetry(QueuePairAttributes.RNR_RETRY_INFINITE))
            .connectB(b -> b.minRnrTimer(1)));
        pair.a.mr.segment().fill((byte) 9);
        pair.a.postSend(WorkRequestOpcode.SEND, 1, SendFlags.SIGNALED, 0, 8);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 2, SendFlags.SIGNALED, 0, 8, pair.b.mr.address() + 1024,
            pair.b.mr.remoteKey());
        pair.a.postSend(WorkRequestOpcode.SEND_WITH_IMM, 3, SendFlags.SIGNALED, 0, 8);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 4, 0, 0, 8, pair.b.mr.address() + 2048,
            pair.b.mr.remoteKey());
        // many RNR timer periods pass: nothing completes and the queued write has not touched B's memory
        final long until = System.nanoTime() + 20 * QueuePairAttributes.rnrTimerNanos(1) + 5_000_000;
        ShmFixture.awaitCondition("RNR periods to pass", () -> System.nanoTime() - until > 0);
        assertEquals(List.of(), pair.a.poll());
        assertEquals(0, pair.b.mr.segment().get(ValueLayout.JAVA_LONG, 1024));
        assertEquals(READY_TO_SEND, pair.a.qp.state());

        pair.b.postReceive(11, 0, 64);
        final List<Completion> first = pair.a.await(2);
        assertEquals(List.of(1L, 2L), first.stream().map(Completion::id).toList());
        assertTrue(first.stream().allMatch(c -> c.status() == SUCCESS), first.toString());
        assertEquals(0x0909090909090909L, pair.b.mr.segment().get(ValueLayout.JAVA_LONG, 1024));
        assertEquals(0, pair.b.mr.segment().get(ValueLayout.JAVA_LONG, 2048));
        pair.b.postReceive(12, 64, 64);
        final Completion third = pair.a.awaitOne();
        assertEquals(3, third.id());
        assertEquals(SUCCESS, third.status());
        ShmFixture.awaitCondition("the unsignalled write",
            () -> pair.b.mr.segment().get(ValueLayout.JAVA_LONG, 2048) == 0x0909090909090909L);
        assertEquals(List.of(11L, 12L), pair.b.await(2).stream().map(Completion::id).toList());
    }

    @Test
    void shouldNotSpendRnrRetriesOnLaterPosts() throws Exception {
        // RNR timer code 0 is 655 ms: the one retry allowed cannot run before the receive is posted
        final Pair pair = fixture.pair(new Config().connectA(a -> a.rnrRetry(1))
            .connectB(b -> b.minRnrTimer(0)));
        pair.a.postSend(WorkRequestOpcode.SEND, 1, SendFlags.SIGNALED, 0, 8);
        pair.a.postSend(WorkRequestOpcode.SEND, 2, SendFlags.SIGNALED, 0, 8);
        pair.a.postSend(WorkRequestOpcode.SEND, 3, SendFlags.SIGNALED, 0, 8);
        assertEquals(List.of(), pair.a.poll());
        assertEquals(READY_TO_SEND, pair.a.qp.state());
        pair.b.postReceive(11, 0, 64);
        pair.b.postReceive(12, 64, 64);
        pair.b.postReceive(13, 128, 64);
        final List<Completion> completions = pair.a.await(3);
        assertEquals(List.of(SUCCESS, SUCCESS, SUCCESS), completions.stream().map(Completion::status).toList());
    }

    @Test
    void shouldFailASendToADestroyedQueuePairWithATransportError() throws Exception {
        final Pair pair = fixture.pair(new Config().sameDevice(true).connect(false));
        pair.b.qp.modify(INIT, new QueuePairAttributes());
        pair.a.connectTo(pair.b);
        pair.a.postReceive(5, 0, 64);
        pair.b.qp.close();
        pair.a.postSend(WorkRequestOpcode.SEND, 1, SendFlags.SIGNALED, 0, 8);
        pair.a.postSend(WorkRequestOpcode.SEND, 2, 0, 0, 8);
        final List<Completion> completions = pair.a.await(3);
        assertEquals(List.of(new Completion(1, TRANSPORT_RETRY_EXCEEDED, CompletionOpcode.SEND, 0, false, 0,
            pair.a.qp.number())), completions.stream().filter(c -> c.id() == 1).toList());
        assertEquals(List.of(WORK_REQUEST_FLUSHED, WORK_REQUEST_FLUSHED),
            completions.stream().filter(c -> c.id() != 1).map(Completion::status).toList());
        assertEquals(ERROR, pair.a.qp.state());
    }

    @Test
    void shouldFailASendToAPeerThatNeverBecomesReady() throws Exception {
        final Pair pair = fixture.pair(new Config().connect(false).connectA(a -> a.retryCount(2).timeout(1)));
        pair.b.qp.modify(INIT, new QueuePairAttributes());
        pair.a.connectTo(pair.b);
        pair.b.postReceive(5, 0, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 1, SendFlags.SIGNALED, 0, 8);
        assertEquals(TRANSPORT_RETRY_EXCEEDED, pair.a.awaitOne().status());
        assertEquals(ERROR, pair.a.qp.state());
        assertEquals(INIT, pair.b.qp.state());
    }

    @Test
    void shouldDeliverToAPeerThatBecomesReadyWithinTheRetries() throws Exception {
        final Pair pair = fixture.pair(new Config().connect(false).connectA(a -> a.retryCount(7).timeout(10)));
        pair.b.qp.modify(INIT, new QueuePairAttributes().accessFlags(ShmFixture.FULL_ACCESS));
        pair.a.connectTo(pair.b);
        pair.b.postReceive(5, 0, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 1, SendFlags.SIGNALED, 0, 8);
        assertEquals(List.of(), pair.a.poll());
        pair.b.qp.modify(READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(pair.a.device.queryGid(1, 0))
            .remoteQueuePairNumber(pair.a.qp.number()));
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertEquals(5, pair.b.awaitOne().id());
    }

    @Test
    void shouldMoveToErrorAndFlushWhenTheConnectedPeerCloses() throws Exception {
        final Pair pair = fixture.pair();
        pair.a.postReceive(1, 0, 64);
        pair.a.postReceive(2, 64, 64);
        pair.b.qp.close();
        ShmFixture.awaitCondition("A to notice", () -> pair.a.qp.state() == ERROR);
        final List<Completion> flushed = pair.a.await(2);
        assertEquals(List.of(1L, 2L), flushed.stream().map(Completion::id).toList());
        assertTrue(flushed.stream().allMatch(c -> c.status() == WORK_REQUEST_FLUSHED), flushed.toString());
        pair.a.postSend(WorkRequestOpcode.SEND, 3, 0, 0, 8);
        assertEquals(WORK_REQUEST_FLUSHED, pair.a.awaitOne().status());
    }
}
