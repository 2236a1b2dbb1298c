package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;

/**
 * A hostile local process that executes the peer's requests writes whatever it likes into a queue pair's inbound
 * completion ring (the entries' work request ids, lengths, statuses, opcodes, flags, receive slots and sequence
 * numbers), as its shared block lets it. The owner polling its completion queue must never throw, never report a
 * receive it did not post or one twice, never report a SEND of more bytes than the receive's buffer holds, and its
 * receive queue must stay whole: afterwards exactly the slots not completed are still taken. Runs its corpus in every
 * build; {@code ./rdmachannel fuzz} fuzzes it.
 */
class ShmInboundCompletionFuzzTest {
    private static final int RECEIVES = 8;
    private static final int BUFFER = 64;
    private static final long FIRST_ID = 1000;

    private static RdmaDevice deviceA;
    private static RdmaDevice deviceB;

    private static synchronized void open() throws IOException {
        if (deviceA == null) {
            deviceA = RdmaProviders.byName("shm").openDevice(null);
            deviceB = RdmaProviders.byName("shm").openDevice(null);
        }
    }

    @AfterAll
    static synchronized void close() {
        if (deviceA != null) {
            deviceB.close();
            deviceA.close();
            deviceA = null;
        }
    }

    @FuzzTest
    void shouldReportOnlyPostedReceivesWhateverThePeerWrites(final FuzzedDataProvider data) throws Exception {
        open();
        final Deque<AutoCloseable> owned = new ArrayDeque<>();
        try {
            final Side a = side(deviceA, owned);
            final Side b = side(deviceB, owned);
            a.connectTo(b);
            b.connectTo(a);
            final int posted = data.consumeInt(0, RECEIVES);
            final ReceiveWorkRequest receive = b.qp.createReceiveWorkRequest();
            for (int i = 0; i < posted; i++) {
                b.qp.postReceive(receive.reset().id(FIRST_ID + i).sge(0, b.mr.address() + (long) i * BUFFER, BUFFER,
                    b.mr.localKey()));
            }
            writeEntries(((ShmQueuePair) b.qp).inboundRing(), data);
            final Set<Long> reported = new HashSet<>();
            for (int round = 0; round < 8; round++) {
                b.cq.poll(completion -> {
                    final long id = completion.workRequestId();
                    assertTrue(id >= FIRST_ID && id < FIRST_ID + posted, () -> "a receive that was never posted was "
                        + "reported: id=" + id + ", status=" + completion.status());
                    assertTrue(reported.add(id), () -> "receive " + id + " was reported twice");
                    if (completion.status() == CompletionStatus.SUCCESS
                        && completion.opcode() == CompletionOpcode.RECV) {
                        assertTrue(completion.byteLength() >= 0 && completion.byteLength() <= BUFFER,
                            () -> "receive " + id + " reported " + completion.byteLength() + " bytes in a buffer of "
                                + BUFFER);
                    }
                }, 64);
            }
            // the receive queue is whole: exactly the receives not reported still hold their slots
            int more = 0;
            while (true) {
                try {
                    b.qp.postReceive(receive.reset().id(FIRST_ID + posted + more).sge(0, b.mr.address(), BUFFER,
                        b.mr.localKey()));
                    more++;
                } catch (final IllegalStateException full) {
                    break;
                }
                if (more > RECEIVES) {
                    fail("the receive queue took more than its " + RECEIVES + " receives");
                }
            }
            if (b.qp.state() != QueuePairState.ERROR) {
                assertEquals(RECEIVES - posted + reported.size(), more, "free receive slots after the completions");
            }
        } finally {
            while (!owned.isEmpty()) {
                owned.pop().close();
            }
        }
    }

    /**
     * Entries from the ring's start (a fresh queue pair's next position), each field the fuzzer's; the sequence mostly
     * the one that publishes the entry.
     */
    private static void writeEntries(final MemorySegment ring, final FuzzedDataProvider data) {
        final int capacity = ring.get(Atomics.INT, InboundCompletionDescriptor.CAPACITY_OFFSET);
        final int count = data.consumeInt(1, 2 * RECEIVES);
        for (int position = 0; position < count; position++) {
            final long entry = InboundCompletionDescriptor.entryOffset(capacity, position);
            ring.set(Atomics.LONG, entry + InboundCompletionDescriptor.WR_ID_OFFSET,
                data.consumeBoolean() ? FIRST_ID + data.consumeInt(0, RECEIVES) : data.consumeLong());
            ring.set(Atomics.INT, entry + InboundCompletionDescriptor.BYTE_LENGTH_OFFSET,
                data.consumeBoolean() ? data.consumeInt(0, 2 * BUFFER) : data.consumeInt());
            ring.set(Atomics.INT, entry + InboundCompletionDescriptor.IMMEDIATE_OFFSET, data.consumeInt());
            ring.set(Atomics.INT, entry + InboundCompletionDescriptor.STATUS_OFFSET,
                data.consumeBoolean() ? 0 : data.consumeInt());
            ring.set(Atomics.INT, entry + InboundCompletionDescriptor.OPCODE_OFFSET, data.consumeInt());
            ring.set(Atomics.INT, entry + InboundCompletionDescriptor.FLAGS_OFFSET, data.consumeInt());
            ring.set(Atomics.INT, entry + InboundCompletionDescriptor.SLOT_OFFSET,
                data.consumeBoolean() ? data.consumeInt(-1, RECEIVES) : data.consumeInt());
            ring.set(Atomics.INT, entry + InboundCompletionDescriptor.VENDOR_ERROR_OFFSET, data.consumeInt());
            Atomics.setLongRelease(ring, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET,
                data.consumeInt(0, 15) == 0 ? data.consumeLong() : position + 1);
        }
    }

    /**
     * One end: a queue pair with its own completion queue and a region of {@link #RECEIVES} receive buffers.
     */
    private record Side(RdmaDevice device, QueuePair qp, CompletionQueue cq, MemoryRegion mr) {
        void connectTo(final Side peer) throws IOException {
            ShmFixture.connect(qp, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE, peer.device.queryGid(1, 0),
                peer.qp.number(), attributes -> attributes);
        }
    }

    private static Side side(final RdmaDevice device, final Deque<AutoCloseable> owned) throws IOException {
        final ProtectionDomain pd = device.allocateProtectionDomain();
        owned.push(pd);
        final CompletionQueue cq = device.createCompletionQueue(64, null, 0);
        owned.push(cq);
        final MemoryRegion mr = pd.allocate((long) RECEIVES * BUFFER, AccessFlags.LOCAL_WRITE
            | AccessFlags.REMOTE_WRITE);
        owned.push(mr);
        final QueuePair qp = pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
            .receiveCompletionQueue(cq).maxSendWorkRequests(RECEIVES).maxReceiveWorkRequests(RECEIVES)
            .maxSendSge(1).maxReceiveSge(1));
        owned.push(qp);
        return new Side(device, qp, cq, mr);
    }
}
