package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The completion queue's lock-free paths: the hint a spinning thread reads instead of polling
 * ({@code mayHaveCompletions}), and the local ring of send completions, which the poller takes from without the
 * producers' lock.
 */
@Timeout(60)
class ShmCompletionQueueHintTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    /**
     * The hint says "maybe" exactly when a poll would find something: a send completion of this process, a
     * receive completion a peer published, receives flushed by an error; and "nothing" once they were polled.
     */
    @Test
    void shouldHintWhatAPollWouldFind() throws Exception {
        final Pair pair = fixture.pair();
        assertFalse(pair.a.cq.mayHaveCompletions(), "A, nothing posted");
        assertFalse(pair.b.cq.mayHaveCompletions(), "B, nothing posted");
        pair.b.postReceive(1, 0, 64);
        pair.b.postReceive(2, 64, 64);
        assertFalse(pair.b.cq.mayHaveCompletions(), "B, a receive posted is no completion");

        pair.a.postSend(WorkRequestOpcode.SEND, 10, SendFlags.SIGNALED, 0, 16);
        assertTrue(pair.a.cq.mayHaveCompletions(), "A, its send completed");
        assertTrue(pair.b.cq.mayHaveCompletions(), "B, the send consumed a receive");
        assertEquals(1, pair.a.poll().size());
        assertFalse(pair.a.cq.mayHaveCompletions(), "A, after polling");
        assertEquals(1, pair.b.poll().size());
        assertFalse(pair.b.cq.mayHaveCompletions(), "B, after polling");

        // an unsignalled send completes nothing on this side, and still lands on the other
        pair.a.postSend(WorkRequestOpcode.SEND, 11, 0, 0, 16);
        assertFalse(pair.a.cq.mayHaveCompletions(), "A, unsignalled");
        assertTrue(pair.b.cq.mayHaveCompletions(), "B, the second receive");
        assertEquals(1, pair.b.poll().size());

        // an error flushes what is posted: the hint must not hide it from a spinning reader
        pair.b.postReceive(3, 0, 64);
        assertFalse(pair.b.cq.mayHaveCompletions(), "B, one receive posted");
        pair.b.qp.modify(QueuePairState.ERROR, new QueuePairAttributes());
        assertTrue(pair.b.cq.mayHaveCompletions(), "B, in ERROR with a receive to flush");
        assertEquals(CompletionStatus.WORK_REQUEST_FLUSHED, pair.b.poll().getFirst().status());
    }

    /**
     * Four threads post signalled RDMA WRITEs on four queue pairs that share one send completion queue while a
     * fifth polls it: every completion comes out once, each queue pair's in its order, and the send queues (which
     * a poll retires) never jam.
     */
    @Test
    void shouldTakeEverySendCompletionOnceWhileManyThreadsProduce() throws Exception {
        final int threads = 4;
        final int perThread = 50_000;
        final Pair pair = fixture.pair();
        final CompletionQueue shared = fixture.own(pair.a.device.createCompletionQueue(256, null, 1));
        final List<QueuePair> senders = new ArrayList<>();
        for (int i = 0; i < threads; i++) {
            final QueuePair sender = fixture.own(pair.a.pd.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(shared).receiveCompletionQueue(pair.a.cq).maxSendWorkRequests(32)));
            final QueuePair target = fixture.own(pair.b.pd.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(pair.b.cq).receiveCompletionQueue(pair.b.cq)));
            ShmFixture.connect(sender, ShmFixture.FULL_ACCESS, pair.b.device.queryGid(1, 0), target.number(),
                a -> a);
            ShmFixture.connect(target, ShmFixture.FULL_ACCESS, pair.a.device.queryGid(1, 0), sender.number(),
                a -> a);
            senders.add(sender);
        }
        final AtomicReference<Throwable> failure = new AtomicReference<>();
        final long[] next = new long[threads];
        final int[] taken = {0};
        final long deadline = System.nanoTime() + ShmFixture.WAIT_NANOS * 3;
        final Thread poller = Thread.ofPlatform().name("poller").start(() -> {
            try {
                while (taken[0] < threads * perThread) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new AssertionError("only " + taken[0] + " completions taken, next sequences "
                            + Arrays.toString(next) + ": " + shared);
                    }
                    shared.poll(c -> {
                        final int thread = (int) (c.workRequestId() >>> 32);
                        final long sequence = c.workRequestId() & 0xFFFF_FFFFL;
                        if (c.status() != CompletionStatus.SUCCESS || sequence != next[thread]) {
                            throw new AssertionError("thread " + thread + ": expected " + next[thread] + ", got "
                                + sequence + " " + c.status());
                        }
                        next[thread]++;
                        taken[0]++;
                    }, 64);
                }
            } catch (final Throwable ex) {
                failure.compareAndSet(null, ex);
            }
        });
        final List<Thread> producers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            final int thread = t;
            final QueuePair sender = senders.get(t);
            producers.add(Thread.ofPlatform().name("producer-" + t).start(() -> {
                final SendWorkRequest request = sender.createSendWorkRequest();
                try {
                    for (long i = 0; i < perThread && failure.get() == null; i++) {
                        request.reset().id(((long) thread << 32) | i).opcode(WorkRequestOpcode.RDMA_WRITE)
                            .flags(SendFlags.SIGNALED)
                            .remote(pair.b.mr.address() + thread * 8L, pair.b.mr.remoteKey())
                            .sge(0, pair.a.mr.address(), 8, pair.a.mr.localKey());
                        while (failure.get() == null) {
                            try {
                                sender.postSend(request);
                                break;
                            } catch (final IllegalStateException ex) {
                                if (!ex.getMessage().contains("is full")) {
                                    throw ex;
                                }
                                // the poller retires sends as it takes their completions
                                Thread.onSpinWait();
                            }
                        }
                    }
                } catch (final Throwable ex) {
                    failure.compareAndSet(null, ex);
                }
            }));
        }
        for (final Thread producer : producers) {
            producer.join();
        }
        poller.join();
        if (failure.get() != null) {
            throw new AssertionError(failure.get());
        }
        for (int t = 0; t < threads; t++) {
            assertEquals(perThread, next[t], "completions of thread " + t);
        }
        assertFalse(shared.mayHaveCompletions());
    }
}
