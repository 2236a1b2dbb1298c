package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.spi.CompletionStatus.SUCCESS;
import static io.rdmachannel.channel.spi.QueuePairState.ERROR;
import static io.rdmachannel.channel.spi.QueuePairState.INIT;
import static io.rdmachannel.channel.spi.QueuePairState.READY_TO_RECEIVE;
import static io.rdmachannel.channel.spi.QueuePairState.READY_TO_SEND;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.shm.ShmFixture.Completion;
import io.rdmachannel.channel.shm.ShmFixture.Config;
import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Misuse of a queue pair or completion queue: refused with an exception, and nothing is posted.
 */
@Timeout(20)
class ShmMisuseTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldRefuseSendsBeforeReadyToSend() throws Exception {
        final Pair pair = fixture.pair(new Config().connect(false));
        final QueuePair qp = pair.a.qp;
        pair.b.connectTo(pair.a);
        pair.b.postReceive(1, 0, 64);
        for (final var step : List.of(INIT, READY_TO_RECEIVE)) {
            assertEquals("postSend: queue pair " + qp.number() + " is in state " + qp.state()
                + "; sends need READY_TO_SEND", assertThrows(IllegalStateException.class,
                    () -> pair.a.postSend(WorkRequestOpcode.SEND, 9, SendFlags.SIGNALED, 0, 8)).getMessage());
            qp.modify(step, step == INIT ? new QueuePairAttributes().accessFlags(ShmFixture.FULL_ACCESS)
                : new QueuePairAttributes().remoteGid(pair.b.device.queryGid(1, 0))
                    .remoteQueuePairNumber(pair.b.qp.number()));
        }
        assertEquals("postSend: queue pair " + qp.number() + " is in state READY_TO_RECEIVE; sends need "
            + "READY_TO_SEND", assertThrows(IllegalStateException.class,
                () -> pair.a.postSend(WorkRequestOpcode.SEND, 9, SendFlags.SIGNALED, 0, 8)).getMessage());
        qp.modify(READY_TO_SEND, new QueuePairAttributes());
        // nothing was posted: the first completion is of the first accepted request
        pair.a.postSend(WorkRequestOpcode.SEND, 10, SendFlags.SIGNALED, 0, 8);
        assertEquals(List.of(10L), pair.a.await(1).stream().map(Completion::id).toList());
        assertEquals(1, pair.b.awaitOne().id());
        assertEquals(List.of(), pair.a.poll());
    }

    @Test
    void shouldRefuseReceivesInReset() throws Exception {
        final Pair pair = fixture.pair(new Config().connect(false));
        final QueuePair qp = pair.a.qp;
        assertEquals("postReceive: queue pair " + qp.number() + " is in state RESET; receives need INIT or later",
            assertThrows(IllegalStateException.class, () -> pair.a.postReceive(1, 0, 64)).getMessage());
        qp.modify(INIT, new QueuePairAttributes());
        pair.a.postReceive(2, 0, 64);
        pair.a.connectTo(pair.b);
        pair.b.connectTo(pair.a);
        pair.b.postSend(WorkRequestOpcode.SEND, 3, SendFlags.SIGNALED, 0, 8);
        assertEquals(2, pair.a.awaitOne().id());
    }

    @Test
    void shouldRefuseASendBeyondTheQueueDepthUntilCompletionsArePolled() throws Exception {
        final Pair pair = fixture.pair(new Config().initA(a -> a.maxSendWorkRequests(3)));
        final QueuePair qp = pair.a.qp;
        final long target = pair.b.mr.address();
        final int rkey = pair.b.mr.remoteKey();
        for (int i = 0; i < 3; i++) {
            pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, i, SendFlags.SIGNALED, 0, 8, target, rkey);
        }
        final IllegalStateException ex = assertThrows(IllegalStateException.class,
            () -> pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 3, SendFlags.SIGNALED, 0, 8, target, rkey));
        assertEquals("send queue of queue pair " + qp.number() + " is full: 3 requests are outstanding; poll their "
            + "completions first", ex.getMessage());
        assertEquals(1, pair.a.cq.poll(c -> { }, 1));
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 4, SendFlags.SIGNALED, 0, 8, target, rkey);
        assertEquals(List.of(1L, 2L, 4L), pair.a.await(3).stream().map(Completion::id).toList());
    }

    @Test
    void shouldRefuseAReceiveBeyondTheQueueDepthUntilCompletionsArePolled() throws Exception {
        final Pair pair = fixture.pair(new Config().initB(b -> b.maxReceiveWorkRequests(2)));
        final QueuePair qp = pair.b.qp;
        pair.b.postReceive(1, 0, 64);
        pair.b.postReceive(2, 64, 64);
        final IllegalStateException ex = assertThrows(IllegalStateException.class,
            () -> pair.b.postReceive(3, 128, 64));
        assertEquals("receive queue of queue pair " + qp.number() + " is full: 2 receives are outstanding; poll "
            + "their completions first", ex.getMessage());
        pair.a.postSend(WorkRequestOpcode.SEND, 10, SendFlags.SIGNALED, 0, 8);
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        // consumed but not yet polled: the slot is still in use
        assertThrows(IllegalStateException.class, () -> pair.b.postReceive(3, 128, 64));
        assertEquals(1, pair.b.awaitOne().id());
        pair.b.postReceive(4, 128, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 11, SendFlags.SIGNALED, 0, 8);
        pair.a.postSend(WorkRequestOpcode.SEND, 12, SendFlags.SIGNALED, 0, 8);
        assertEquals(2, pair.a.await(2).size());
        assertEquals(List.of(2L, 4L), pair.b.await(2).stream().map(Completion::id).toList());
    }

    @Test
    void shouldRefuseRequestsOfAnotherQueuePair() throws Exception {
        final Pair pair = fixture.pair();
        final SendWorkRequest foreignSend = pair.b.qp.createSendWorkRequest().opcode(WorkRequestOpcode.SEND)
            .flags(SendFlags.SIGNALED);
        assertEquals("the send request was not created by this queue pair",
            assertThrows(IllegalArgumentException.class, () -> pair.a.qp.postSend(foreignSend)).getMessage());
        final ReceiveWorkRequest foreignReceive = pair.b.qp.createReceiveWorkRequest();
        assertEquals("the receive request was created by another queue pair",
            assertThrows(IllegalArgumentException.class, () -> pair.a.qp.postReceive(foreignReceive)).getMessage());
        assertEquals(List.of(), pair.a.poll());
    }

    @Test
    void shouldRefuseMalformedRequests() throws Exception {
        final Pair pair = fixture.pair();
        final SendWorkRequest send = pair.a.send.reset().id(1).opcode(WorkRequestOpcode.SEND)
            .flags(SendFlags.SIGNALED | 0x10);
        assertEquals("unknown send flags: flags=0x12",
            assertThrows(IllegalArgumentException.class, () -> pair.a.qp.postSend(send)).getMessage());
        send.flags(SendFlags.SIGNALED).sge(0, pair.a.mr.address(), -1, pair.a.mr.localKey());
        assertEquals("sge 0 has a negative length: length=-1",
            assertThrows(IllegalArgumentException.class, () -> pair.a.qp.postSend(send)).getMessage());
        assertEquals("sgeCount=2 is outside [0, 1]",
            assertThrows(IllegalArgumentException.class, () -> send.sgeCount(2)).getMessage());
        assertThrows(IndexOutOfBoundsException.class, () -> send.sge(1, 0, 0, 0));
        final ReceiveWorkRequest recv = pair.b.recv.reset().sge(0, pair.b.mr.address(), -5, pair.b.mr.localKey());
        assertEquals("sge 0 has a negative length: length=-5",
            assertThrows(IllegalArgumentException.class, () -> pair.b.qp.postReceive(recv)).getMessage());
        // nothing was posted on either side
        pair.b.postReceive(2, 0, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 3, SendFlags.SIGNALED, 0, 8);
        assertEquals(List.of(3L), pair.a.await(1).stream().map(Completion::id).toList());
        assertEquals(2, pair.b.awaitOne().id());
    }

    @Test
    void shouldRefuseUseOfAClosedQueuePair() throws Exception {
        final Pair pair = fixture.pair();
        final QueuePair qp = pair.a.qp;
        qp.close();
        qp.close();
        final String closed = "queue pair " + qp.number() + " is closed";
        assertEquals(closed, assertThrows(IllegalStateException.class,
            () -> pair.a.postSend(WorkRequestOpcode.SEND, 1, 0, 0, 8)).getMessage());
        assertEquals(closed, assertThrows(IllegalStateException.class,
            () -> pair.a.postReceive(1, 0, 8)).getMessage());
        assertEquals(closed, assertThrows(IllegalStateException.class,
            () -> qp.modify(ERROR, null)).getMessage());
        assertEquals(closed, assertThrows(IllegalStateException.class, qp::createSendWorkRequest).getMessage());
        assertEquals(closed, assertThrows(IllegalStateException.class, qp::createReceiveWorkRequest).getMessage());
        assertEquals(ERROR, qp.state());
        assertTrue(qp.toString().contains("number=" + qp.number()), qp.toString());
    }

    @Test
    void shouldReportACompletionQueueOverrun() throws Exception {
        final Pair pair = fixture.pair(new Config().completionQueueEntries(2));
        final long target = pair.b.mr.address();
        final int rkey = pair.b.mr.remoteKey();
        for (int i = 0; i < 3; i++) {
            pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, i, SendFlags.SIGNALED, 0, 8, target, rkey);
        }
        final String id = Integer.toString(((ShmCompletionQueue) pair.a.cq).id());
        assertEquals("completion queue " + id + " overran: more than 2 send completions were outstanding; size it "
            + "for every signalled request", assertThrows(IllegalStateException.class,
                () -> pair.a.cq.poll(c -> { }, 8)).getMessage());
    }
}
