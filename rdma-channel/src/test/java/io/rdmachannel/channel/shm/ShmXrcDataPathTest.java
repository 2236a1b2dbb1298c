package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.shm.ShmFixture.FULL_ACCESS;
import static io.rdmachannel.channel.shm.ShmFixture.awaitCondition;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.shm.ShmFixture.Completion;
import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairEvent;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcSharedReceiveQueue;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import com.sun.management.ThreadMXBean;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The XRC data path of the shm provider, devices standing for processes: an initiator queue pair on one device, its
 * target queue pair in a domain opened by two other devices, each with an XRC shared receive queue of its own. Every
 * request lands in the queue it names, whichever device made that queue; the target's rules (connected to one
 * initiator, ERROR on a fatal request) and the queues' (limit events, wake-ups) hold across devices.
 */
@Timeout(60)
class ShmXrcDataPathTest {
    private static final int RECEIVE_LENGTH = 256;

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @TempDir
    Path temp;

    /** One device with a handle of the domain, an XRC shared receive queue and memory. */
    private final class Receiver {
        final RdmaDevice device;
        final XrcDomain domain;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final MemoryRegion mr;
        final XrcSharedReceiveQueue srq;
        private long nextId;

        Receiver(final boolean create, final ReadinessSource source) throws IOException {
            this(fixture.device(), create, source);
        }

        Receiver(final RdmaDevice device, final ReadinessSource source) throws IOException {
            this(device, false, source);
        }

        private Receiver(final RdmaDevice device, final boolean create, final ReadinessSource source)
            throws IOException {
            this.device = device;
            domain = fixture.own(device.openXrcDomain(temp.resolve("domain"), create));
            pd = fixture.own(device.allocateProtectionDomain());
            cq = fixture.own(device.createCompletionQueue(64, source, 7));
            mr = fixture.own(pd.allocate(16 * RECEIVE_LENGTH, FULL_ACCESS));
            srq = fixture.own(domain.createSharedReceiveQueue(pd, cq, 16, 1));
            fixture.watch(srq);
        }

        Receiver post(final int count) {
            for (int i = 0; i < count; i++) {
                final long id = nextId++;
                srq.postReceive(srq.createReceiveWorkRequest().id(id)
                    .sge(0, mr.address() + id % 16 * RECEIVE_LENGTH, RECEIVE_LENGTH, mr.localKey()));
            }
            return this;
        }

        List<Completion> await(final int count) {
            final List<Completion> completions = new ArrayList<>();
            if (count == 0) {
                cq.poll(c -> completions.add(Completion.of(c)), 16);
                return completions;
            }
            awaitCondition("completions of XRC shared receive queue " + srq.number(), () -> {
                cq.poll(c -> completions.add(Completion.of(c)), count - completions.size());
                return completions.size() == count;
            });
            return completions;
        }

        String text(final long receiveId, final int length) {
            final byte[] bytes = new byte[length];
            MemorySegment.copy(mr.segment(), receiveId % 16 * RECEIVE_LENGTH, MemorySegment.ofArray(bytes), 0,
                length);
            return new String(bytes, StandardCharsets.UTF_8);
        }
    }

    /** An XRC initiator queue pair on its own device, with memory to send from. */
    private final class Initiator {
        final RdmaDevice device;
        final CompletionQueue cq;
        final MemoryRegion mr;
        final QueuePair qp;
        final SendWorkRequest send;

        Initiator() throws IOException {
            this(fixture.device());
        }

        Initiator(final RdmaDevice device) throws IOException {
            this.device = device;
            final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
            cq = fixture.own(device.createCompletionQueue(64, null, 0));
            mr = fixture.own(pd.allocate(4096, FULL_ACCESS));
            qp = fixture.own(pd.createQueuePair(new QueuePairInitAttributes().type(QueuePairType.XRC_SEND)
                .sendCompletionQueue(cq).maxSendWorkRequests(16).signalAll(true)));
            fixture.watch(qp);
            send = qp.createSendWorkRequest();
        }

        void connectTo(final Receiver owner, final XrcTargetQueuePair target, final int retryCount)
            throws IOException {
            qp.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(FULL_ACCESS));
            qp.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes()
                .remoteGid(owner.device.queryGid(1, 0)).remoteQueuePairNumber(target.number()));
            qp.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes().retryCount(retryCount).timeout(1));
        }

        void send(final WorkRequestOpcode opcode, final int srqn, final String text) {
            final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
            MemorySegment.copy(MemorySegment.ofArray(bytes), 0, mr.segment(), 0, bytes.length);
            qp.postSend(send.reset().id(srqn).opcode(opcode).remoteSharedReceiveQueue(srqn).immediate(srqn)
                .sge(0, mr.address(), bytes.length, mr.localKey()));
        }

        Completion awaitOne() {
            final List<Completion> completions = new ArrayList<>();
            awaitCondition("a send completion of the initiator", () -> {
                cq.poll(c -> completions.add(Completion.of(c)), 1);
                return !completions.isEmpty();
            });
            return completions.getFirst();
        }
    }

    /** The target queue pair of {@code owner}'s domain, connected to {@code initiator}. */
    private XrcTargetQueuePair target(final Receiver owner, final Initiator initiator) throws IOException {
        final XrcTargetQueuePair target = fixture.own(owner.domain.createTargetQueuePair());
        target.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(FULL_ACCESS));
        target.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes()
            .remoteGid(initiator.device.queryGid(1, 0)).remoteQueuePairNumber(initiator.qp.number()));
        return target;
    }

    private static List<QueuePairEvent> events(final XrcTargetQueuePair target) {
        final List<QueuePairEvent> events = new ArrayList<>();
        target.pollEvents((number, event) -> events.add(event), 16);
        return events;
    }

    @Test
    void shouldDeliverEachRequestIntoTheQueueItNamesWhicheverDeviceMadeIt() throws Exception {
        final Receiver first = new Receiver(true, null).post(4);
        final Receiver second = new Receiver(false, null).post(4);
        final Initiator initiator = new Initiator();
        final XrcTargetQueuePair target = target(first, initiator);
        initiator.connectTo(first, target, 7);

        initiator.send(WorkRequestOpcode.SEND, first.srq.number(), "to the first");
        assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());
        initiator.send(WorkRequestOpcode.SEND_WITH_IMM, second.srq.number(), "to the second");
        assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());

        final Completion atFirst = first.await(1).getFirst();
        assertEquals(new Completion(0, CompletionStatus.SUCCESS, CompletionOpcode.RECV, 12, false, 0,
            target.number()), atFirst);
        assertEquals("to the first", first.text(0, 12));
        final Completion atSecond = second.await(1).getFirst();
        assertEquals(new Completion(0, CompletionStatus.SUCCESS, CompletionOpcode.RECV, 13, true,
            second.srq.number(), target.number()), atSecond);
        assertEquals("to the second", second.text(0, 13));
        assertEquals(List.of(), first.await(0));
    }

    @Test
    void shouldCheckRemoteKeysAgainstTheProtectionDomainOfTheNamedQueue() throws Exception {
        final Receiver first = new Receiver(true, null).post(2);
        final Receiver second = new Receiver(false, null).post(2);
        final Initiator initiator = new Initiator();
        final XrcTargetQueuePair target = target(first, initiator);
        initiator.connectTo(first, target, 7);
        final byte[] bytes = "written".getBytes(StandardCharsets.UTF_8);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, initiator.mr.segment(), 0, bytes.length);
        final long remote = second.mr.address() + 3000;

        // a write with immediate into the second device's memory, through its queue: one receive consumed
        initiator.qp.postSend(initiator.send.reset().id(1).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM)
            .immediate(42).remoteSharedReceiveQueue(second.srq.number()).remote(remote, second.mr.remoteKey())
            .sge(0, initiator.mr.address(), bytes.length, initiator.mr.localKey()));
        assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());
        assertEquals(new Completion(0, CompletionStatus.SUCCESS, CompletionOpcode.RECV_RDMA_WITH_IMM, 7, true, 42,
            target.number()), second.await(1).getFirst());
        final byte[] landed = new byte[bytes.length];
        MemorySegment.copy(second.mr.segment(), 3000, MemorySegment.ofArray(landed), 0, landed.length);
        assertEquals("written", new String(landed, StandardCharsets.UTF_8));

        // a read back from there
        initiator.qp.postSend(initiator.send.reset().id(2).opcode(WorkRequestOpcode.RDMA_READ)
            .remoteSharedReceiveQueue(second.srq.number()).remote(remote, second.mr.remoteKey())
            .sge(0, initiator.mr.address() + 100, bytes.length, initiator.mr.localKey()));
        assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());
        final byte[] read = new byte[bytes.length];
        MemorySegment.copy(initiator.mr.segment(), 100, MemorySegment.ofArray(read), 0, read.length);
        assertEquals("written", new String(read, StandardCharsets.UTF_8));

        // the second device's key through the first device's queue: that queue's protection domain does not hold it
        initiator.qp.postSend(initiator.send.reset().id(3).opcode(WorkRequestOpcode.RDMA_WRITE)
            .remoteSharedReceiveQueue(first.srq.number()).remote(remote, second.mr.remoteKey())
            .sge(0, initiator.mr.address(), bytes.length, initiator.mr.localKey()));
        final Completion refused = initiator.awaitOne();
        assertEquals(CompletionStatus.REMOTE_ACCESS_ERROR, refused.status());
        assertEquals(QueuePairState.ERROR, initiator.qp.state());
        assertEquals(QueuePairState.ERROR, target.state());
    }

    @Test
    void shouldFailAQueueNumberTheDomainDoesNotHoldAndMoveTheTargetToError() throws Exception {
        final Receiver first = new Receiver(true, null).post(2);
        final Initiator initiator = new Initiator();
        final XrcTargetQueuePair target = target(first, initiator);
        final XrcTargetQueuePair opened = fixture.own(new Receiver(false, null).domain
            .openTargetQueuePair(target.number()));
        initiator.connectTo(first, target, 7);

        initiator.send(WorkRequestOpcode.SEND, first.srq.number() + 1000, "lost");
        assertEquals(CompletionStatus.REMOTE_INVALID_REQUEST, initiator.awaitOne().status());
        assertEquals(QueuePairState.ERROR, initiator.qp.state());
        assertEquals(QueuePairState.ERROR, target.state());
        // every handle of the target hears it, in any device
        assertEquals(List.of(QueuePairEvent.FATAL), events(target));
        assertEquals(List.of(QueuePairEvent.FATAL), events(opened));
        assertEquals(List.of(), first.await(0));
    }

    @Test
    void shouldFailRequestsToAQueueClosedSinceTheInitiatorReachedIt() throws Exception {
        final Receiver first = new Receiver(true, null).post(2);
        final Receiver second = new Receiver(false, null).post(2);
        final Initiator initiator = new Initiator();
        final XrcTargetQueuePair target = target(first, initiator);
        initiator.connectTo(first, target, 7);
        initiator.send(WorkRequestOpcode.SEND, second.srq.number(), "one");
        assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());
        assertEquals(1, second.await(1).size());
        final int closedNumber = second.srq.number();
        second.srq.close();

        initiator.send(WorkRequestOpcode.SEND, closedNumber, "two");
        assertEquals(CompletionStatus.REMOTE_INVALID_REQUEST, initiator.awaitOne().status());
        assertEquals(QueuePairState.ERROR, target.state());
    }

    @Test
    void shouldRefuseAnInitiatorTheTargetIsNotConnectedTo() throws Exception {
        final Receiver first = new Receiver(true, null).post(2);
        final Initiator connected = new Initiator();
        final XrcTargetQueuePair target = target(first, connected);
        final Initiator stranger = new Initiator();
        stranger.connectTo(first, target, 0);

        stranger.send(WorkRequestOpcode.SEND, first.srq.number(), "not for me");
        assertEquals(CompletionStatus.TRANSPORT_RETRY_EXCEEDED, stranger.awaitOne().status());
        assertEquals(QueuePairState.READY_TO_RECEIVE, target.state());
        assertEquals(List.of(), first.await(0));

        connected.connectTo(first, target, 7);
        connected.send(WorkRequestOpcode.SEND, first.srq.number(), "for me");
        assertEquals(CompletionStatus.SUCCESS, connected.awaitOne().status());
        assertEquals(6, first.await(1).getFirst().byteLength());
    }

    @Test
    void shouldWaitForAReceiveAndReportTheLimitToTheQueuesDevice() throws Exception {
        final Receiver first = new Receiver(true, null);
        final Receiver second = new Receiver(false, null);
        final Initiator initiator = new Initiator();
        final XrcTargetQueuePair target = target(first, initiator);
        initiator.connectTo(first, target, 7);

        // no receive posted: the request waits (RNR) until one is
        initiator.send(WorkRequestOpcode.SEND, second.srq.number(), "patient");
        Thread.sleep(50);
        assertEquals(List.of(), second.await(0));
        second.post(3);
        assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());
        assertEquals(7, second.await(1).getFirst().byteLength());

        // 2 posted; the limit fires when a claim leaves fewer than 2
        final AtomicInteger reached = new AtomicInteger();
        second.srq.armLimit(2, queue -> {
            assertEquals(second.srq, queue);
            reached.incrementAndGet();
        });
        initiator.send(WorkRequestOpcode.SEND, second.srq.number(), "low");
        assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());
        awaitCondition("the limit event at the queue's device", () -> reached.get() == 1);
        assertEquals(1, second.await(1).size());
    }

    @Test
    void shouldWakeTheReadinessSourceOfTheQueuesDevice() throws Exception {
        final Receiver first = new Receiver(true, null).post(1);
        final RdmaDevice device = fixture.device();
        final ReadinessSource source = fixture.own(device.createReadinessSource());
        final Receiver watched = new Receiver(device, source).post(1);
        final Initiator initiator = new Initiator();
        final XrcTargetQueuePair target = target(first, initiator);
        initiator.connectTo(first, target, 7);
        watched.cq.requestNotification();

        initiator.send(WorkRequestOpcode.SEND, watched.srq.number(), "wake up");
        assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());
        assertEquals(List.of(7L), ShmFixture.awaitTokens("the wake-up of the queue's readiness source", source));
        assertEquals(1, watched.await(1).size());
    }

    /**
     * One socket per pair of devices for XRC: the initiators of a device share its link to the device of the queues
     * they reach (each with a link of its own, a process with N connections to one peer paid N sockets); the link
     * carries every initiator's wake-ups, outlives the close of one of them, goes with the last, and its end tells
     * each of them that the device is gone.
     */
    @Test
    void shouldShareOneLinkToAPeerDeviceBetweenTheInitiatorsOfADevice() throws Exception {
        final Receiver first = new Receiver(true, null).post(1);
        final RdmaDevice peer = fixture.device();
        final ReadinessSource source = fixture.own(peer.createReadinessSource());
        final Receiver watched = new Receiver(peer, source).post(6);
        final RdmaDevice local = fixture.device();
        final ShmAgent agent = ((ShmDevice) local).agent();
        final Initiator one = connected(local, first);
        final Initiator two = connected(local, first);
        final int socketsBefore = agent.socketsConnected();

        sendAndWake(one, watched, source, "from one");
        sendAndWake(two, watched, source, "from two");
        assertEquals(1, agent.socketsConnected() - socketsBefore, "sockets connected for two initiators");
        assertEquals(1, agent.xrcLinkCount());
        assertEquals(1, ((ShmQueuePair) one.qp).xrcLinkCount());
        assertEquals(1, ((ShmQueuePair) two.qp).xrcLinkCount());

        // the first initiator goes and the link stays for the second; it goes with the second
        one.qp.close();
        sendAndWake(two, watched, source, "still linked");
        assertEquals(1, agent.xrcLinkCount());
        two.qp.close();
        assertEquals(0, agent.xrcLinkCount());
        assertEquals(3, watched.await(3).size());

        // two more share a new link; the peer device's end of it tells both that it is gone
        final Initiator three = connected(local, first);
        final Initiator four = connected(local, first);
        sendAndWake(three, watched, source, "from three");
        sendAndWake(four, watched, source, "from four");
        assertEquals(2, agent.socketsConnected() - socketsBefore, "sockets connected for four initiators");
        ((ShmDevice) peer).agent().close();
        awaitCondition("both initiators to see the peer device gone", () -> agent.xrcLinkCount() == 0
            && ((ShmQueuePair) three.qp).xrcLinkCount() == 0 && ((ShmQueuePair) four.qp).xrcLinkCount() == 0);
    }

    /** An initiator on {@code device}, connected to a target of {@code owner}'s domain. */
    private Initiator connected(final RdmaDevice device, final Receiver owner) throws IOException {
        final Initiator initiator = new Initiator(device);
        initiator.connectTo(owner, target(owner, initiator), 7);
        return initiator;
    }

    /** Send {@code text} into {@code to}'s queue with its completion queue armed: its source hears token 7. */
    private static void sendAndWake(final Initiator from, final Receiver to, final ReadinessSource source,
        final String text) {
        to.cq.requestNotification();
        from.send(WorkRequestOpcode.SEND, to.srq.number(), text);
        assertEquals(CompletionStatus.SUCCESS, from.awaitOne().status());
        assertEquals(List.of(7L), ShmFixture.awaitTokens("the wake-up of " + text, source));
    }

    @Test
    void shouldRefuseAReceiveSideOnAnInitiator() throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        final IllegalArgumentException withReceives = assertThrows(IllegalArgumentException.class,
            () -> pd.createQueuePair(new QueuePairInitAttributes().type(QueuePairType.XRC_SEND)
                .sendCompletionQueue(cq).receiveCompletionQueue(cq)));
        assertEquals("an XRC initiator queue pair has no receive side: set no receive completion queue and no "
            + "shared receive queue", withReceives.getMessage());
        final QueuePair qp = fixture.own(pd.createQueuePair(new QueuePairInitAttributes()
            .type(QueuePairType.XRC_SEND).sendCompletionQueue(cq)));
        assertEquals(QueuePairType.XRC_SEND, qp.type());
        final IllegalStateException post = assertThrows(IllegalStateException.class,
            () -> qp.postReceive(qp.createReceiveWorkRequest()));
        assertEquals("XRC initiator queue pair " + qp.number() + " has no receive queue", post.getMessage());
        qp.modify(QueuePairState.INIT, new QueuePairAttributes());
        final IOException noTarget = assertThrows(IOException.class, () -> qp.modify(
            QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(device.queryGid(1, 0))
                .remoteQueuePairNumber(77)));
        assertTrue(noTarget.getMessage().startsWith("no XRC target queue pair 77 on shm device "),
            noTarget.getMessage());
    }

    /**
     * Every initiator process writes the queue's completion ring: what a hostile one writes there is checked against
     * the queue's own record of its receives, never taken on trust.
     */
    @Test
    void shouldCheckWhatAHostileInitiatorWritesIntoTheCompletionRing() throws Exception {
        final Receiver receiver = new Receiver(true, null).post(2);
        final ShmXrcSharedReceiveQueue queue = (ShmXrcSharedReceiveQueue) receiver.srq;
        final MemorySegment ring = queue.inboundRing();
        final int capacity = ring.get(Atomics.INT, InboundCompletionDescriptor.CAPACITY_OFFSET);
        // a receive never posted, a message longer than its receive, then a well-formed one
        forge(ring, capacity, 0, 9, 5);
        forge(ring, capacity, 1, 0, 1_000_000);
        forge(ring, capacity, 2, 1, 5);
        assertEquals(List.of(
            new Completion(0, CompletionStatus.LOCAL_LENGTH_ERROR, CompletionOpcode.RECV, 0, false, 0, 77),
            new Completion(1, CompletionStatus.SUCCESS, CompletionOpcode.RECV, 5, false, 0, 77)),
            receiver.await(2));
        assertEquals(2, queue.corruptCompletions());
        assertEquals(List.of(), receiver.await(0));
    }

    private static void forge(final MemorySegment ring, final int capacity, final long position, final int slot,
        final int byteLength) {
        final long entry = InboundCompletionDescriptor.entryOffset(capacity, position);
        InboundCompletionDescriptor.write(ring, entry, 12345, slot, CompletionStatus.SUCCESS, CompletionOpcode.RECV,
            byteLength, 0, 0);
        ring.set(Atomics.INT, entry + InboundCompletionDescriptor.QUEUE_PAIR_OFFSET, 77);
        Atomics.setLongRelease(ring, entry + InboundCompletionDescriptor.SEQUENCE_OFFSET, position + 1);
    }

    /**
     * The XRC data path allocates nothing per message once warm: the initiator's post (target check, queue lookup,
     * delivery into another device's queue) and the receiver's poll and repost. Less than a byte per message, as the
     * channels' allocation tests: the counter also sees what the JVM allocates on this thread now and then (a
     * deoptimisation materialising an object the compiler had eliminated); one object per message, even the smallest
     * (16 bytes), exceeds it.
     */
    @Test
    void shouldAllocateNothingPerMessage() throws Exception {
        final Receiver receiver = new Receiver(true, null).post(16);
        final Initiator initiator = new Initiator();
        final XrcTargetQueuePair target = target(receiver, initiator);
        initiator.connectTo(receiver, target, 7);
        final SendWorkRequest send = initiator.send.reset().opcode(WorkRequestOpcode.SEND_WITH_IMM).immediate(1)
            .remoteSharedReceiveQueue(receiver.srq.number())
            .sge(0, initiator.mr.address(), 64, initiator.mr.localKey());
        final ReceiveWorkRequest repost = receiver.srq.createReceiveWorkRequest();
        final long[] received = new long[1];
        final CompletionHandler onReceive = completion -> {
            received[0]++;
            final long id = completion.workRequestId();
            receiver.srq.postReceive(repost.reset().id(id)
                .sge(0, receiver.mr.address() + id % 16 * RECEIVE_LENGTH, RECEIVE_LENGTH, receiver.mr.localKey()));
        };
        final CompletionHandler onSend = completion -> { };
        final ThreadMXBean threads = (ThreadMXBean) ManagementFactory.getThreadMXBean();
        final long self = Thread.currentThread().threadId();
        long before = 0;
        for (int round = 0; round < 2; round++) {
            if (round == 1) {
                before = threads.getThreadAllocatedBytes(self);
            }
            for (int i = 0; i < 20_000; i++) {
                initiator.qp.postSend(send);
                while (initiator.cq.poll(onSend, 4) == 0) {
                    Thread.onSpinWait();
                }
                final long expected = received[0] + 1;
                while (received[0] < expected) {
                    receiver.cq.poll(onReceive, 4);
                }
            }
        }
        final long allocated = threads.getThreadAllocatedBytes(self) - before;
        assertTrue(allocated < 20_000, allocated + " bytes allocated by 20,000 messages");
    }

    /**
     * An initiator process that died between claiming a position of the queue's completion ring and taking its entry
     * holds up nothing for good: the queue skips the position after the grace time, woken by its device's agent if
     * no later message wakes it; a producer that comes back to a skipped position finds it taken from it.
     */
    @Test
    void shouldSkipAPositionAnInitiatorClaimedAndNeverWrote() throws Exception {
        final long grace = SharedInboundRing.skipGraceNanos;
        SharedInboundRing.skipGraceNanos = TimeUnit.MILLISECONDS.toNanos(100);
        try {
            final RdmaDevice device = fixture.device();
            final ReadinessSource source = fixture.own(device.createReadinessSource());
            final Receiver receiver = new Receiver(device, true, source).post(4);
            final Initiator initiator = new Initiator();
            final XrcTargetQueuePair target = target(receiver, initiator);
            initiator.connectTo(receiver, target, 7);
            final ShmXrcSharedReceiveQueue queue = (ShmXrcSharedReceiveQueue) receiver.srq;
            final MemorySegment ring = queue.inboundRing();
            // the dead initiator's claim: the tail moved, the entry was never taken
            assertTrue(Atomics.compareAndSetLong(ring, InboundCompletionDescriptor.TAIL_OFFSET, 0, 1));
            receiver.cq.requestNotification();
            initiator.send(WorkRequestOpcode.SEND, receiver.srq.number(), "behind the dead");
            assertEquals(CompletionStatus.SUCCESS, initiator.awaitOne().status());
            ShmFixture.awaitTokens("a wake-up of the queue's readiness source", source);
            assertEquals(List.of(), receiver.await(0));
            // nothing else will come: the agent wakes the queue once the grace time passed
            receiver.cq.requestNotification();
            ShmFixture.awaitTokens("a wake-up of the queue's readiness source", source);
            final Completion completion = receiver.await(1).getFirst();
            assertEquals(15, completion.byteLength());
            assertEquals("behind the dead", receiver.text(completion.id(), 15));
            assertEquals(1, queue.skippedPositions());

            // a producer that claimed position 2 and comes back after it was skipped writes nothing
            final int capacity = ring.get(Atomics.INT, InboundCompletionDescriptor.CAPACITY_OFFSET);
            final long entry = InboundCompletionDescriptor.entryOffset(capacity, 2);
            assertTrue(SharedInboundRing.skip(ring, entry, 0, 2, capacity));
            assertFalse(SharedInboundRing.take(ring, entry, 2, capacity));
            // and the entry is free again for the next round's position
            assertTrue(SharedInboundRing.take(ring, entry, 2 + capacity, capacity));
        } finally {
            SharedInboundRing.skipGraceNanos = grace;
        }
    }

}
