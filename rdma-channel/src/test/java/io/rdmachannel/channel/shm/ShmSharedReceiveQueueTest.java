package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.spi.CompletionStatus.REMOTE_ACCESS_ERROR;
import static io.rdmachannel.channel.spi.CompletionStatus.SUCCESS;
import static io.rdmachannel.channel.spi.CompletionStatus.WORK_REQUEST_FLUSHED;
import static io.rdmachannel.channel.spi.QueuePairState.ERROR;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.rdmachannel.channel.shm.ShmFixture.Completion;
import io.rdmachannel.channel.shm.ShmFixture.Config;
import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Shared receive queues: two queue pairs of device B take their receives from one queue; device A sends to both.
 */
@Timeout(20)
class ShmSharedReceiveQueueTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    private Pair pair;
    private SharedReceiveQueue srq;
    private QueuePair first;
    private QueuePair second;
    private QueuePair secondSender;

    private void open(final int depth, final UnaryOperator<QueuePairAttributes> responder) throws IOException {
        pair = fixture.pair(new Config().connect(false).connectA(a -> a.rnrRetry(7)));
        srq = fixture.own(pair.b.pd.createSharedReceiveQueue(depth, 2));
        first = createOnSrq();
        second = createOnSrq();
        secondSender = fixture.own(pair.a.pd.createQueuePair(new QueuePairInitAttributes()
            .sendCompletionQueue(pair.a.cq).receiveCompletionQueue(pair.a.cq)));
        final byte[] gidA = pair.a.device.queryGid(1, 0);
        final byte[] gidB = pair.b.device.queryGid(1, 0);
        ShmFixture.connect(pair.a.qp, ShmFixture.FULL_ACCESS, gidB, first.number(), UnaryOperator.identity());
        ShmFixture.connect(first, ShmFixture.FULL_ACCESS, gidA, pair.a.qp.number(), responder);
        ShmFixture.connect(secondSender, ShmFixture.FULL_ACCESS, gidB, second.number(), UnaryOperator.identity());
        ShmFixture.connect(second, ShmFixture.FULL_ACCESS, gidA, secondSender.number(), responder);
        fixture.watch(srq);
    }

    private QueuePair createOnSrq() throws IOException {
        final QueuePair qp = fixture.own(pair.b.pd.createQueuePair(new QueuePairInitAttributes()
            .sendCompletionQueue(pair.b.cq).receiveCompletionQueue(pair.b.cq).sharedReceiveQueue(srq)));
        fixture.watch(qp);
        return qp;
    }

    private void postToSrq(final long id, final long offset, final int length) {
        final ReceiveWorkRequest recv = srq.createReceiveWorkRequest();
        srq.postReceive(recv.id(id).sge(0, pair.b.mr.address() + offset, length, pair.b.mr.localKey()));
    }

    private void send(final QueuePair from, final long id, final int length) {
        final SendWorkRequest send = from.createSendWorkRequest().id(id).opcode(WorkRequestOpcode.SEND)
            .flags(SendFlags.SIGNALED).sge(0, pair.a.mr.address(), length, pair.a.mr.localKey());
        from.postSend(send);
    }

    @Test
    void shouldConsumeSharedReceivesFromEveryQueuePairUsingTheQueue() throws Exception {
        open(8, UnaryOperator.identity());
        assertEquals(0, first.maxReceiveWorkRequests());
        final ReceiveWorkRequest own = first.createReceiveWorkRequest().id(1);
        assertEquals("queue pair " + first.number() + " takes its receives from a shared receive queue: post them "
            + "there", assertThrows(IllegalStateException.class, () -> first.postReceive(own)).getMessage());
        postToSrq(1, 0, 64);
        postToSrq(2, 64, 64);
        postToSrq(3, 128, 64);
        pair.a.mr.segment().fill((byte) 3);
        send(pair.a.qp, 10, 10);
        send(secondSender, 20, 20);
        send(pair.a.qp, 11, 30);
        assertEquals(3, pair.a.await(3).size());
        assertEquals(List.of(new Completion(1, SUCCESS, CompletionOpcode.RECV, 10, false, 0, first.number()),
            new Completion(3, SUCCESS, CompletionOpcode.RECV, 30, false, 0, first.number()),
            new Completion(2, SUCCESS, CompletionOpcode.RECV, 20, false, 0, second.number())),
            sortedByQueuePair(pair.b.await(3)));
        assertEquals((byte) 3, pair.b.mr.segment().get(ValueLayout.JAVA_BYTE, 64 + 19));
        assertEquals((byte) 0, pair.b.mr.segment().get(ValueLayout.JAVA_BYTE, 64 + 20));
    }

    private List<Completion> sortedByQueuePair(final List<Completion> completions) {
        return completions.stream().sorted((x, y) -> Integer.compare(x.queuePairNumber() == first.number() ? 0 : 1,
            y.queuePairNumber() == first.number() ? 0 : 1)).toList();
    }

    @Test
    void shouldRefuseAReceiveBeyondTheDepthAndAClosingQueueInUse() throws Exception {
        open(2, UnaryOperator.identity());
        postToSrq(1, 0, 64);
        postToSrq(2, 64, 64);
        final String id = Integer.toString(((ShmSharedReceiveQueue) srq).id());
        assertEquals("shared receive queue " + id + " is full: 2 receives are outstanding; poll their completions "
            + "first", assertThrows(IllegalStateException.class, () -> postToSrq(3, 128, 64)).getMessage());
        assertEquals("shared receive queue " + id + " is still used by 2 queue pairs: close them first",
            assertThrows(IllegalStateException.class, srq::close).getMessage());
        send(pair.a.qp, 10, 8);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertEquals(1, pair.b.awaitOne().id());
        postToSrq(3, 128, 64);
    }

    @Test
    void shouldReportTheArmedLimitOnceWhenASenderLeavesFewerReceives() throws Exception {
        open(8, UnaryOperator.identity());
        for (int i = 1; i <= 4; i++) {
            postToSrq(i, 64L * i, 64);
        }
        final List<SharedReceiveQueue> reached = new CopyOnWriteArrayList<>();
        srq.armLimit(2, reached::add);
        // 4 posted: taking one leaves 3, then 2 (not below the limit), then 1 (below it: the event)
        send(pair.a.qp, 10, 8);
        send(secondSender, 20, 8);
        assertEquals(2, pair.a.await(2).size());
        assertEquals(2, pair.b.await(2).size());
        assertEquals(List.of(), reached, "2 receives are left, not fewer than 2");
        send(pair.a.qp, 11, 8);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        pair.b.awaitOne();
        ShmFixture.awaitCondition("the limit event", () -> reached.size() == 1);
        assertSame(srq, reached.get(0));
        // disarmed by the event: the last receive taken reports nothing
        send(secondSender, 21, 8);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        pair.b.awaitOne();
        Thread.sleep(100);
        assertEquals(1, reached.size());
        // armed again: the next receive taken below the limit reports again
        postToSrq(5, 0, 64);
        srq.armLimit(4, reached::add);
        send(pair.a.qp, 12, 8);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        ShmFixture.awaitCondition("the second limit event", () -> reached.size() == 2);
        assertEquals("limit=9 is outside [0, 8]", assertThrows(IllegalArgumentException.class,
            () -> srq.armLimit(9, reached::add)).getMessage());
        assertEquals("arming a limit needs a handler", assertThrows(IllegalArgumentException.class,
            () -> srq.armLimit(1, null)).getMessage());
    }

    @Test
    void shouldRefuseASharedReceiveQueueOfAnotherDomain() throws Exception {
        open(2, UnaryOperator.identity());
        final ProtectionDomain other = fixture.own(pair.b.device.allocateProtectionDomain());
        assertEquals("the shared receive queue belongs to another protection domain",
            assertThrows(IllegalArgumentException.class, () -> other.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(pair.b.cq).receiveCompletionQueue(pair.b.cq).sharedReceiveQueue(srq)))
                .getMessage());
    }

    @Test
    void shouldRetryASendUntilTheSharedQueueHasAReceive() throws Exception {
        open(4, b -> b.minRnrTimer(1));
        send(pair.a.qp, 10, 8);
        assertEquals(List.of(), pair.a.poll());
        postToSrq(1, 0, 64);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertEquals(1, pair.b.awaitOne().id());
    }

    @Test
    void shouldKeepSharedReceivesForOtherQueuePairsWhenOneFails() throws Exception {
        open(4, UnaryOperator.identity());
        postToSrq(1, 0, 64);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 10, SendFlags.SIGNALED, 0, 8, 0, 0x7FFFFF00);
        assertEquals(REMOTE_ACCESS_ERROR, pair.a.awaitOne().status());
        ShmFixture.awaitCondition("the responder to fail", () -> first.state() == ERROR);
        // the failed queue pair reports its ERROR state once, consuming no shared receive
        assertEquals(new Completion(SharedReceiveQueue.LAST_RECEIVE_ID, WORK_REQUEST_FLUSHED, CompletionOpcode.RECV,
            0, false, 0, first.number()), pair.b.awaitOne());
        send(secondSender, 20, 8);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertEquals(new Completion(1, SUCCESS, CompletionOpcode.RECV, 8, false, 0, second.number()),
            pair.b.awaitOne());
        assertEquals(List.of(), pair.b.poll());
    }

    @Test
    void shouldReportAQueuePairMovedToErrorAfterItsLastReceiveWithoutFlushingTheQueue() throws Exception {
        open(4, UnaryOperator.identity());
        postToSrq(1, 0, 64);
        postToSrq(2, 64, 64);
        send(pair.a.qp, 10, 8);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        first.modify(ERROR, null);
        assertEquals(List.of(new Completion(1, SUCCESS, CompletionOpcode.RECV, 8, false, 0, first.number()),
            new Completion(SharedReceiveQueue.LAST_RECEIVE_ID, WORK_REQUEST_FLUSHED, CompletionOpcode.RECV, 0, false,
                0, first.number())), pair.b.await(2));
        assertEquals(List.of(), pair.b.poll());
        // receive 2 is still there, for the other queue pair
        send(secondSender, 20, 8);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertEquals(new Completion(2, SUCCESS, CompletionOpcode.RECV, 8, false, 0, second.number()),
            pair.b.awaitOne());
    }
}
