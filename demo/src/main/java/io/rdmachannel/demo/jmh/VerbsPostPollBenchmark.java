package io.rdmachannel.demo.jmh;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkCompletion;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The verbs SPI on the shm provider: two RC queue pairs on two devices of this JVM, connected to each other. One
 * operation posts an RDMA WRITE WITH IMMEDIATE of {@code size} bytes from A's region into B's, polls both completion
 * queues until the send completion (A) and the receive completion (B) are both seen, and posts B's receive again.
 * The work requests and the completion handler are the reusable flyweights: nothing is built per operation.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JmhSupport.ADD_EXPORTS, JmhSupport.ADD_EXPORTS_VALUE,
    JmhSupport.ENABLE_NATIVE_ACCESS})
public class VerbsPostPollBenchmark {
    private static final int QUEUE_DEPTH = 16;
    private static final int REGION_LENGTH = 64 * 1024;
    private static final int ACCESS = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE;

    /** Bytes per RDMA WRITE WITH IMMEDIATE. */
    @Param({"64", "65536"})
    public int size;

    private final CompletionHandler handler = this::onCompletion;
    private RdmaDevice deviceA;
    private RdmaDevice deviceB;
    private Side a;
    private Side b;
    private SendWorkRequest send;
    private ReceiveWorkRequest receive;
    private int seen;

    /**
     * One end: protection domain, one completion queue for sends and receives, a region and the queue pair.
     */
    private static final class Side {
        final ProtectionDomain domain;
        CompletionQueue queue;
        MemoryRegion region;
        QueuePair queuePair;

        Side(final RdmaDevice device) throws IOException {
            domain = device.allocateProtectionDomain();
            try {
                queue = device.createCompletionQueue(2 * QUEUE_DEPTH, null, 0);
                region = domain.allocate(REGION_LENGTH, ACCESS);
                queuePair = domain.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(queue)
                    .receiveCompletionQueue(queue).maxSendWorkRequests(QUEUE_DEPTH)
                    .maxReceiveWorkRequests(QUEUE_DEPTH));
            } catch (final IOException | RuntimeException ex) {
                close();
                throw ex;
            }
        }

        void connectTo(final RdmaDevice peerDevice, final Side peer, final ReceiveWorkRequest receive)
            throws IOException {
            queuePair.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(ACCESS));
            for (int i = 0; i < QUEUE_DEPTH; i++) {
                queuePair.postReceive(receive.reset().id(i));
            }
            queuePair.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes()
                .remoteGid(peerDevice.queryGid(1, 0)).remoteQueuePairNumber(peer.queuePair.number()));
            queuePair.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes());
        }

        void close() {
            if (queuePair != null) {
                queuePair.close();
            }
            if (region != null) {
                region.close();
            }
            if (queue != null) {
                queue.close();
            }
            domain.close();
        }
    }

    /**
     * Open both devices and connect the queue pairs.
     *
     * @throws IOException if a step fails.
     */
    @Setup(Level.Trial)
    public void open() throws IOException {
        final RdmaProvider provider = RdmaProviders.byName("shm");
        try {
            deviceA = provider.openDevice(null);
            deviceB = provider.openDevice(null);
            a = new Side(deviceA);
            b = new Side(deviceB);
            a.connectTo(deviceB, b, a.queuePair.createReceiveWorkRequest());
            receive = b.queuePair.createReceiveWorkRequest();
            b.connectTo(deviceA, a, receive);
            send = a.queuePair.createSendWorkRequest();
        } catch (final IOException | RuntimeException ex) {
            close();
            throw ex;
        }
    }

    /**
     * Release everything in reverse order of creation.
     */
    @TearDown(Level.Trial)
    public void close() {
        if (b != null) {
            b.close();
            b = null;
        }
        if (a != null) {
            a.close();
            a = null;
        }
        if (deviceB != null) {
            deviceB.close();
            deviceB = null;
        }
        if (deviceA != null) {
            deviceA.close();
            deviceA = null;
        }
    }

    /**
     * Post one RDMA WRITE WITH IMMEDIATE, poll both completions, post the consumed receive again.
     *
     * @return the completions seen (2).
     */
    @Benchmark
    public int writeWithImmediate() {
        a.queuePair.postSend(send.reset().id(size).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM)
            .flags(SendFlags.SIGNALED).immediate(size).remote(b.region.address(), b.region.remoteKey())
            .sge(0, a.region.address(), size, a.region.localKey()));
        seen = 0;
        int idleRounds = 0;
        while (seen < 2) {
            if (a.queue.poll(handler, 4) + b.queue.poll(handler, 4) == 0) {
                idleRounds = JmhSupport.idle(idleRounds, "completions of the RDMA WRITE WITH IMMEDIATE");
            }
        }
        b.queuePair.postReceive(receive.reset().id(0));
        return seen;
    }

    private void onCompletion(final WorkCompletion completion) {
        if (completion.status() != CompletionStatus.SUCCESS) {
            throw new IllegalStateException("the benchmark's request failed: " + completion);
        }
        seen++;
    }
}
