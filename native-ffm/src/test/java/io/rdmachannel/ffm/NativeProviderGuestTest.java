package io.rdmachannel.ffm;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.DeviceEvents;
import io.rdmachannel.channel.spi.DeviceResources;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.channel.spi.WaitSet;
import io.rdmachannel.channel.spi.WordWaitSet;
import io.rdmachannel.channel.spi.WorkCompletion;
import io.rdmachannel.channel.spi.WorkRequestOpcode;
import io.rdmachannel.ffm.internal.LibC;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Real verbs on a real device (soft-RoCE in the guest tier): two queue pairs of one device connected by hand, GID
 * and QP number exchanged in-process. Skipped where the native provider is unavailable.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class NativeProviderGuestTest {
    private static final long TOKEN_A = 11;
    private static final long TOKEN_B = 22;
    private static final int SIZE = 4096;
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(20);
    private static final int REMOTE = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ;

    private RdmaDevice device;
    private ProtectionDomain domain;
    private ReadinessSource source;
    private CompletionQueue cqA;
    private CompletionQueue cqB;
    private QueuePair qpA;
    private QueuePair qpB;
    private MemoryRegion memoryA;
    private MemoryRegion memoryB;
    private byte[] gid;

    private record Completion(long id, CompletionStatus status, CompletionOpcode opcode, int byteLength,
        boolean hasImmediate, int immediate, int queuePairNumber) {
        static Completion of(WorkCompletion c) {
            return new Completion(c.workRequestId(), c.status(),
                c.status() == CompletionStatus.SUCCESS ? c.opcode() : null, c.byteLength(), c.hasImmediate(),
                c.hasImmediate() ? c.immediate() : 0, c.queuePairNumber());
        }
    }

    @BeforeEach
    void openAndConnect() throws IOException {
        RdmaProvider provider = RdmaProviders.byName("native");
        if (System.getenv("RDMACHANNEL_GUEST") != null) {
            // inside the soft-RoCE guest the device must be there: a skip would hide a broken tier
            assertTrue(provider.isAvailable(), () -> "native provider unavailable in the guest: "
                + provider.unavailabilityCause());
        }
        assumeTrue(provider.isAvailable(), () -> "native provider unavailable: " + provider.unavailabilityCause());
        device = provider.openDevice(null);
        System.out.println("device " + device.name() + ": " + device.attributes() + " " + device);
        domain = device.allocateProtectionDomain();
        source = device.createReadinessSource();
        cqA = device.createCompletionQueue(64, source, TOKEN_A);
        cqB = device.createCompletionQueue(64, source, TOKEN_B);
        qpA = domain.createQueuePair(initAttributes(cqA));
        qpB = domain.createQueuePair(initAttributes(cqB));
        memoryA = domain.allocate(SIZE, REMOTE);
        memoryB = domain.allocate(SIZE, REMOTE);
        gid = ipv4Gid();
        System.out.println("gid " + HexFormat.of().formatHex(gid) + ", qpA " + qpA + ", qpB " + qpB);
    }

    private QueuePairInitAttributes initAttributes(CompletionQueue cq) {
        int inline = Math.min(64, device.attributes().maxInlineData());
        return new QueuePairInitAttributes().sendCompletionQueue(cq).receiveCompletionQueue(cq)
            .maxSendWorkRequests(16).maxReceiveWorkRequests(16).maxInlineData(inline).signalAll(true);
    }

    private byte[] ipv4Gid() throws IOException {
        byte[] first = device.queryGid(1, 0);
        for (int index = 0; index < 16; index++) {
            byte[] candidate;
            try {
                candidate = device.queryGid(1, index);
            } catch (IOException e) {
                break;
            }
            if (candidate[10] == (byte) 0xFF && candidate[11] == (byte) 0xFF) {
                return candidate;
            }
        }
        return first;
    }

    @AfterEach
    void closeAll() {
        for (AutoCloseable resource : new AutoCloseable[] {memoryB, memoryA, qpB, qpA, cqB, cqA, source, domain,
            device}) {
            if (resource != null) {
                try {
                    resource.close();
                } catch (Exception e) {
                    throw new AssertionError("close failed: " + resource, e);
                }
            }
        }
    }

    private void connect() throws IOException {
        QueuePairAttributes init = new QueuePairAttributes().accessFlags(AccessFlags.REMOTE_WRITE
            | AccessFlags.REMOTE_READ);
        qpA.modify(QueuePairState.INIT, init);
        qpB.modify(QueuePairState.INIT, init);
        qpA.modify(QueuePairState.READY_TO_RECEIVE, rtr(qpB.number(), 200));
        qpB.modify(QueuePairState.READY_TO_RECEIVE, rtr(qpA.number(), 100));
        qpA.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes().sendPacketSequenceNumber(100)
            .timeout(14).retryCount(7));
        qpB.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes().sendPacketSequenceNumber(200)
            .timeout(14).retryCount(7));
        assertEquals(QueuePairState.READY_TO_SEND, qpA.state());
        assertEquals(QueuePairState.READY_TO_SEND, qpB.state());
    }

    private QueuePairAttributes rtr(int remoteNumber, int psn) {
        return new QueuePairAttributes().remoteGid(gid).remoteQueuePairNumber(remoteNumber)
            .receivePacketSequenceNumber(psn).pathMtu(1024);
    }

    private static Completion pollOne(CompletionQueue cq) {
        List<Completion> found = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (found.isEmpty()) {
            cq.poll(c -> found.add(Completion.of(c)), 1);
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("no completion within 20 s on " + cq);
            }
            Thread.onSpinWait();
        }
        return found.get(0);
    }

    private static void await(BooleanSupplier condition, String what) {
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.onSpinWait();
        }
    }

    private void postReceiveB(long id, int length) {
        ReceiveWorkRequest receive = qpB.createReceiveWorkRequest().id(id);
        if (length > 0) {
            receive.sge(0, memoryB.address(), length, memoryB.localKey());
        }
        qpB.postReceive(receive);
    }

    private SendWorkRequest request(WorkRequestOpcode opcode, long id, int length) {
        return qpA.createSendWorkRequest().id(id).opcode(opcode)
            .sge(0, memoryA.address(), length, memoryA.localKey());
    }

    private static byte[] bytes(MemoryRegion region, int length) {
        return region.segment().asSlice(0, length).toArray(JAVA_BYTE);
    }

    private static byte[] fill(MemoryRegion region, String text) {
        byte[] data = text.getBytes(StandardCharsets.US_ASCII);
        region.segment().copyFrom(java.lang.foreign.MemorySegment.ofArray(data));
        return data;
    }

    @Test
    void shouldCountTheOpenObjectsByKind() {
        assertEquals(new DeviceResources(1, 2, 1, 2, 0, 2, 0, 0, 2L * SIZE), device.resources());
        memoryB.close();
        memoryB = null;
        qpB.close();
        qpB = null;
        cqB.close();
        cqB = null;
        assertEquals(new DeviceResources(1, 1, 1, 1, 0, 1, 0, 0, SIZE), device.resources());
    }

    @Test
    void shouldSend() throws IOException {
        connect();
        byte[] data = fill(memoryA, "hello over soft-RoCE");
        postReceiveB(7, SIZE);

        qpA.postSend(request(WorkRequestOpcode.SEND, 1, data.length));

        Completion sent = pollOne(cqA);
        assertEquals(new Completion(1, CompletionStatus.SUCCESS, CompletionOpcode.SEND, sent.byteLength(), false, 0,
            qpA.number()), sent);
        Completion received = pollOne(cqB);
        assertEquals(new Completion(7, CompletionStatus.SUCCESS, CompletionOpcode.RECV, data.length, false, 0,
            qpB.number()), received);
        assertArrayEquals(data, bytes(memoryB, data.length));
    }

    @Test
    void shouldSendInline() throws IOException {
        assumeTrue(qpA.maxInlineData() >= 16, "no inline data");
        connect();
        byte[] data = fill(memoryA, "inline payload..");
        postReceiveB(8, SIZE);

        qpA.postSend(request(WorkRequestOpcode.SEND, 2, data.length).flags(SendFlags.INLINE));

        assertEquals(CompletionStatus.SUCCESS, pollOne(cqA).status());
        assertEquals(data.length, pollOne(cqB).byteLength());
        assertArrayEquals(data, bytes(memoryB, data.length));
    }

    @Test
    void shouldSendWithImmediate() throws IOException {
        connect();
        byte[] data = fill(memoryA, "with immediate");
        postReceiveB(9, SIZE);

        qpA.postSend(request(WorkRequestOpcode.SEND_WITH_IMM, 3, data.length).immediate(0x12345678));

        assertEquals(CompletionOpcode.SEND, pollOne(cqA).opcode());
        Completion received = pollOne(cqB);
        assertEquals(new Completion(9, CompletionStatus.SUCCESS, CompletionOpcode.RECV, data.length, true,
            0x12345678, qpB.number()), received);
        assertArrayEquals(data, bytes(memoryB, data.length));
    }

    @Test
    void shouldWriteRemoteMemory() throws IOException {
        connect();
        byte[] data = fill(memoryA, "an RDMA WRITE lands without a receive");

        qpA.postSend(request(WorkRequestOpcode.RDMA_WRITE, 4, data.length)
            .remote(memoryB.address() + 100, memoryB.remoteKey()));

        Completion written = pollOne(cqA);
        assertEquals(CompletionStatus.SUCCESS, written.status());
        assertEquals(CompletionOpcode.RDMA_WRITE, written.opcode());
        assertArrayEquals(data, memoryB.segment().asSlice(100, data.length).toArray(JAVA_BYTE));
        assertEquals(0, cqB.poll(c -> { }, 1));
    }

    @Test
    void shouldWriteWithImmediate() throws IOException {
        connect();
        byte[] data = fill(memoryA, "write with immediate");
        qpB.postReceive(qpB.createReceiveWorkRequest().id(10));

        qpA.postSend(request(WorkRequestOpcode.RDMA_WRITE_WITH_IMM, 5, data.length)
            .remote(memoryB.address() + 8, memoryB.remoteKey()).immediate(-2));

        assertEquals(CompletionOpcode.RDMA_WRITE, pollOne(cqA).opcode());
        Completion received = pollOne(cqB);
        assertEquals(new Completion(10, CompletionStatus.SUCCESS, CompletionOpcode.RECV_RDMA_WITH_IMM, data.length,
            true, -2, qpB.number()), received);
        assertArrayEquals(data, memoryB.segment().asSlice(8, data.length).toArray(JAVA_BYTE));
    }

    @Test
    void shouldReadRemoteMemory() throws IOException {
        connect();
        byte[] data = fill(memoryB, "read me from the peer");

        qpA.postSend(request(WorkRequestOpcode.RDMA_READ, 6, data.length)
            .remote(memoryB.address(), memoryB.remoteKey()));

        Completion read = pollOne(cqA);
        assertEquals(new Completion(6, CompletionStatus.SUCCESS, CompletionOpcode.RDMA_READ, data.length, false, 0,
            qpA.number()), read);
        assertArrayEquals(data, bytes(memoryA, data.length));
    }

    @Test
    void shouldFailAWriteWithAWrongKeyAndMoveBothToError() throws IOException {
        connect();
        fill(memoryA, "never lands");
        postReceiveB(12, SIZE);

        qpA.postSend(request(WorkRequestOpcode.RDMA_WRITE, 13, 11)
            .remote(memoryB.address(), memoryB.remoteKey() ^ 0x5A5A00));

        Completion failed = pollOne(cqA);
        assertEquals(13, failed.id());
        assertEquals(CompletionStatus.REMOTE_ACCESS_ERROR, failed.status());
        await(() -> qpA.state() == QueuePairState.ERROR, "qpA in ERROR, is " + qpA.state());
        await(() -> qpB.state() == QueuePairState.ERROR, "qpB in ERROR, is " + qpB.state());
        Completion flushed = pollOne(cqB);
        assertEquals(12, flushed.id());
        assertEquals(CompletionStatus.WORK_REQUEST_FLUSHED, flushed.status());
        qpA.postSend(request(WorkRequestOpcode.SEND, 14, 4));
        Completion flushedSend = pollOne(cqA);
        assertEquals(14, flushedSend.id());
        assertEquals(CompletionStatus.WORK_REQUEST_FLUSHED, flushedSend.status());
        System.out.println("device events after the access error: " + device.events());
    }

    @Test
    void shouldFailAQueuePairTheDeviceReportsAnErrorForAndWakeItsWaiter() throws Exception {
        connect();
        postReceiveB(40, SIZE);
        NativeQueuePair failing = (NativeQueuePair) qpB;
        int ticket = cqB.requestWaiterWakeup();
        CompletableFuture<Long> waiter = waitDirectly(cqB, ticket).blockedIn("poll").result();

        ((NativeDevice) device).onAsyncEvent(VerbsConstants.IBV_EVENT_QP_FATAL, failing.address(), 0);

        assertTrue(waiter.get(20, TimeUnit.SECONDS) < TimeUnit.SECONDS.toNanos(20));
        assertEquals(QueuePairState.ERROR, qpB.state());
        assertTrue(qpB.deviceError().contains("IBV_EVENT_QP_FATAL"), qpB.deviceError());
        List<Completion> seen = new ArrayList<>();
        Completion injected = new Completion(0, CompletionStatus.FATAL_ERROR, null, 0, false, 0, qpB.number());
        await(() -> {
            cqB.poll(c -> seen.add(Completion.of(c)), 8);
            return seen.contains(injected) && seen.stream().anyMatch(c -> c.id() == 40
                && c.status() == CompletionStatus.WORK_REQUEST_FLUSHED && c.queuePairNumber() == qpB.number());
        }, "the injected failure and the flushed receive, seen " + seen);
        assertEquals(QueuePairState.READY_TO_SEND, qpA.state(), "the other queue pair is not concerned");
        assertEquals(null, qpA.deviceError());
        // a second report of the same queue pair is counted but fails nothing more
        ((NativeDevice) device).onAsyncEvent(VerbsConstants.IBV_EVENT_QP_FATAL, failing.address(), 0);
        DeviceEvents events = device.events();
        assertEquals(2, events.queuePairErrors(), events::toString);
        assertEquals(1, events.queuePairsFailed(), events::toString);
        assertEquals("ACTIVE", events.portState(), events::toString);
    }

    @Test
    void shouldFailTheQueuePairsOfACompletionQueueInErrorThroughTheirSource() throws Exception {
        connect();
        cqA.requestNotification();
        AtomicLong token = new AtomicLong();
        CompletableFuture<Integer> waiter = awaitSource(token).blockedIn("epollWait").result();

        ((NativeDevice) device).onAsyncEvent(VerbsConstants.IBV_EVENT_CQ_ERR,
            ((NativeCompletionQueue) cqA).address(), 0);

        assertEquals(1, waiter.get(20, TimeUnit.SECONDS));
        assertEquals(TOKEN_A, token.get());
        Completion failure = pollOne(cqA);
        assertEquals(new Completion(0, CompletionStatus.FATAL_ERROR, null, 0, false, 0, qpA.number()), failure);
        assertEquals(QueuePairState.ERROR, qpA.state());
        assertTrue(qpA.deviceError().contains("IBV_EVENT_CQ_ERR"), qpA.deviceError());
        assertEquals(null, qpB.deviceError());
        DeviceEvents events = device.events();
        assertEquals(1, events.completionQueueErrors(), events::toString);
        assertEquals(1, events.queuePairsFailed(), events::toString);
    }

    /**
     * The reader of async events, end to end: a second rxe device on its own dummy netdev whose link goes down and
     * comes back. Creates and removes the devices, so it runs in the guest only.
     */
    @Test
    void shouldReadThePortEventsOfADeviceWhoseLinkGoesDownAndComesBack() throws Exception {
        assumeTrue(System.getenv("RDMACHANNEL_GUEST") != null, "creates an rxe device: guest only");
        String netdev = "rdmct0";
        String rxe = "rxect0";
        run("ip", "link", "add", netdev, "type", "dummy");
        try {
            run("ip", "link", "set", netdev, "up");
            run("rdma", "link", "add", rxe, "type", "rxe", "netdev", netdev);
            try (RdmaDevice events = RdmaProviders.byName("native").openDevice(rxe)) {
                await(() -> "ACTIVE".equals(events.events().portState()), "port ACTIVE: " + events.events());
                run("ip", "link", "set", netdev, "down");
                awaitSlowly(() -> events.events().portDown() == 1 && "DOWN".equals(events.events().portState()),
                    () -> "port DOWN after a port error event: " + events.events());
                run("ip", "link", "set", netdev, "up");
                awaitSlowly(() -> events.events().portUp() == 1 && "ACTIVE".equals(events.events().portState()),
                    () -> "port ACTIVE after a port active event: " + events.events());
                assertEquals(0, events.events().errors(), events.events()::toString);
                System.out.println(rxe + " after its link went down and up: " + events.events());
            } finally {
                run("rdma", "link", "delete", rxe);
            }
        } finally {
            run("ip", "link", "delete", netdev);
        }
    }

    private static void run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(20, TimeUnit.SECONDS) || process.exitValue() != 0) {
            throw new AssertionError(String.join(" ", command) + " failed: " + output);
        }
    }

    private static void awaitSlowly(BooleanSupplier condition, java.util.function.Supplier<String> what)
        throws InterruptedException {
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting for " + what.get());
            }
            Thread.sleep(10);
        }
    }

    @Test
    void shouldWakeAnAwaitingThreadWhenAnArmedQueueCompletes() throws Exception {
        connect();
        fill(memoryA, "wake up");
        postReceiveB(15, SIZE);
        cqB.requestNotification();
        AtomicLong token = new AtomicLong();
        CompletableFuture<Integer> waiter = awaitSource(token).blockedIn("epollWait").result();

        qpA.postSend(request(WorkRequestOpcode.SEND, 16, 7));

        assertEquals(1, waiter.get(20, TimeUnit.SECONDS));
        assertEquals(TOKEN_B, token.get());
        assertEquals(15, pollOne(cqB).id());
        assertEquals(16, pollOne(cqA).id());
        assertEquals(0, source.await(0, t -> { }));
    }

    @Test
    void shouldWakeDirectlyWaitingThreadsWithoutTheSource() throws Exception {
        connect();
        fill(memoryA, "direct");
        postReceiveB(30, SIZE);
        assertTrue(cqB.supportsDirectWait());
        int ticket = cqB.requestWaiterWakeup();
        CompletableFuture<Long> first = waitDirectly(cqB, ticket).blockedIn("poll").result();
        CompletableFuture<Long> second = waitDirectly(cqB, ticket).blockedIn("poll").result();

        qpA.postSend(request(WorkRequestOpcode.SEND, 31, 6));

        assertTrue(first.get(20, TimeUnit.SECONDS) < TimeUnit.SECONDS.toNanos(20));
        assertTrue(second.get(20, TimeUnit.SECONDS) < TimeUnit.SECONDS.toNanos(20));
        assertEquals(30, pollOne(cqB).id());
        assertEquals(31, pollOne(cqA).id());
        // the queue was armed for the waiters only: the source has nothing to report
        assertEquals(0, source.await(TimeUnit.MILLISECONDS.toNanos(100), t -> { }));
    }

    @Test
    void shouldDeliverOneEventToTheSourceAndADirectWaiterBothArmed() throws Exception {
        connect();
        fill(memoryA, "both");
        postReceiveB(32, SIZE);
        cqB.requestNotification();
        int ticket = cqB.requestWaiterWakeup();
        AtomicLong token = new AtomicLong();
        CompletableFuture<Integer> sourceWaiter = awaitSource(token).blockedIn("epollWait").result();
        CompletableFuture<Long> direct = waitDirectly(cqB, ticket).blockedIn("poll").result();

        qpA.postSend(request(WorkRequestOpcode.SEND, 33, 4));

        assertEquals(1, sourceWaiter.get(20, TimeUnit.SECONDS));
        assertEquals(TOKEN_B, token.get());
        assertTrue(direct.get(20, TimeUnit.SECONDS) < TimeUnit.SECONDS.toNanos(20));
        assertEquals(32, pollOne(cqB).id());
        assertEquals(33, pollOne(cqA).id());
    }

    @Test
    void shouldReturnFromADirectWaitOnWakeWaitersTimeoutAndClose() throws Exception {
        int ticket = cqA.requestWaiterWakeup();
        long start = System.nanoTime();
        cqA.awaitWakeup(ticket, TimeUnit.MILLISECONDS.toNanos(150));
        assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(140), "returned before the timeout");

        CompletableFuture<Long> woken = waitDirectly(cqA, cqA.requestWaiterWakeup()).blockedIn("poll").result();
        cqA.wakeWaiters();
        woken.get(20, TimeUnit.SECONDS);

        CompletionQueue lone = device.createCompletionQueue(8, source, 99);
        CompletableFuture<Long> closing = waitDirectly(lone, lone.requestWaiterWakeup()).blockedIn("poll").result();
        lone.close();
        closing.get(20, TimeUnit.SECONDS);

        try (CompletionQueue pollOnly = device.createCompletionQueue(8, null, 98)) {
            assertFalse(pollOnly.supportsDirectWait());
            assertThrows(UnsupportedOperationException.class, pollOnly::requestWaiterWakeup);
        }
    }

    @Test
    void shouldWakeAWaitSetFromTheQueueThatCompletedAndStillHandTheSourceItsToken() throws Exception {
        connect();
        fill(memoryA, "set");
        postReceiveB(40, SIZE);
        assertTrue(cqB.supportsWaitSet());
        try (CompletionQueue idle = device.createCompletionQueue(8, source, 97); WaitSet set = cqB.newWaitSet()) {
            assertTrue(set instanceof ChannelWaitSet, set::toString);
            assertTrue(idle.addWaiter(set));
            assertTrue(cqB.addWaiter(set));
            assertEquals(3, set.size());
            cqB.requestNotification();
            AtomicLong token = new AtomicLong();
            CompletableFuture<Integer> sourceWaiter = awaitSource(token).blockedIn("epollWait").result();
            CompletableFuture<Long> waiting = awaitSet(set, 0).blockedIn("poll").result();

            qpA.postSend(request(WorkRequestOpcode.SEND, 41, 3));

            assertTrue(waiting.get(20, TimeUnit.SECONDS) < TimeUnit.SECONDS.toNanos(20));
            assertFalse(set.changed(1, 2), "the idle queue did not fire");
            assertTrue(set.changed(2, 3), "the receiving queue fired");
            // one event, read by the set or by the source: the source gets the token it was armed for either way
            assertEquals(1, sourceWaiter.get(20, TimeUnit.SECONDS));
            assertEquals(TOKEN_B, token.get());
            set.end();
            assertEquals(40, pollOne(cqB).id());
            assertEquals(41, pollOne(cqA).id());
        }
    }

    @Test
    void shouldEndAWaitSetsWaitOnWakeTimeoutAndTheCloseOfOneOfItsQueues() throws Exception {
        try (WaitSet set = cqA.newWaitSet()) {
            set.clear();
            assertTrue(cqA.addWaiter(set));
            long start = System.nanoTime();
            set.await(start + TimeUnit.MILLISECONDS.toNanos(150));
            assertTrue(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(140), "returned before the deadline");
            assertFalse(set.changed(1, 2));

            CompletableFuture<Long> woken = awaitSet(set, 0).blockedIn("poll").result();
            set.wake();
            woken.get(20, TimeUnit.SECONDS);
            set.end();

            // a queue closing under a waiting set wakes it and does not wait for it (its thread might be the closer)
            CompletionQueue lone = device.createCompletionQueue(8, source, 96);
            set.clear();
            assertTrue(lone.addWaiter(set));
            CompletableFuture<Long> closing = awaitSet(set, 0).blockedIn("poll").result();
            lone.close();
            closing.get(20, TimeUnit.SECONDS);
            assertTrue(set.changed(1, 2), "a closed queue counts as fired");
            set.end();

            // a closed queue refuses; so does a set of another kind
            set.clear();
            assertThrows(IllegalStateException.class, () -> lone.addWaiter(set));
            assertEquals(1, set.size());
        }
        try (WaitSet words = new WordWaitSet()) {
            assertFalse(cqA.addWaiter(words));
            assertEquals(1, words.size());
        }
    }

    /** Wait on a set from a platform thread; completes with the nanoseconds it waited. */
    private static Waiter<Long> awaitSet(WaitSet set, long deadline) {
        return Waiter.start("set-waiter", () -> {
            long start = System.nanoTime();
            set.await(deadline);
            return System.nanoTime() - start;
        });
    }

    /** Wait on the source in another thread, without a timeout; completes with how many tokens it handed over. */
    private Waiter<Integer> awaitSource(AtomicLong token) {
        return Waiter.start("source-waiter", () -> source.await(-1, token::set));
    }

    /** Wait on a queue directly from a platform thread; completes with the nanoseconds it waited. */
    private static Waiter<Long> waitDirectly(CompletionQueue queue, int ticket) {
        return Waiter.start("direct-waiter", () -> {
            long start = System.nanoTime();
            queue.awaitWakeup(ticket, TimeUnit.SECONDS.toNanos(30));
            return System.nanoTime() - start;
        });
    }

    /**
     * A platform thread waiting in a call, and what the call returns.
     *
     * @param thread the waiting thread.
     * @param result completes with the call's result or failure.
     * @param <T>    the call's result type.
     */
    private record Waiter<T>(Thread thread, CompletableFuture<T> result) {

        static <T> Waiter<T> start(String name, Callable<T> call) {
            CompletableFuture<T> result = new CompletableFuture<>();
            Thread thread = Thread.ofPlatform().daemon().name(name).start(() -> {
                try {
                    result.complete(call.call());
                } catch (Exception | Error e) {
                    result.completeExceptionally(e);
                }
            });
            return new Waiter<>(thread, result);
        }

        /**
         * Wait until the thread blocks in the libc call {@code method} ({@code poll}, {@code epollWait}), so that
         * what the test does next happens to a waiting thread, not one still on its way.
         */
        Waiter<T> blockedIn(String method) throws InterruptedException {
            awaitInNative(thread, method, result);
            return this;
        }
    }

    /**
     * Wait until {@code thread} sits in the native call {@code LibC.method}: the downcall's own frames are hidden, so
     * LibC's method is the top frame shown. Fails if the call finishes first.
     */
    private static void awaitInNative(Thread thread, String method, CompletableFuture<?> finished)
        throws InterruptedException {
        awaitSlowly(() -> {
            if (finished.isDone()) {
                throw new AssertionError(thread.getName() + " returned before blocking in " + method + ": "
                    + finished);
            }
            StackTraceElement[] stack = thread.getStackTrace();
            return stack.length > 0 && stack[0].getClassName().equals(LibC.class.getName())
                && stack[0].getMethodName().equals(method);
        }, () -> thread.getName() + " to block in LibC." + method + ", at " + List.of(thread.getStackTrace()));
    }

    @Test
    void shouldReturnFromAwaitOnWakeupAndInterrupt() throws Exception {
        CompletableFuture<Integer> woken = Waiter.start("source-waiter", () -> source.await(-1, t -> { }))
            .blockedIn("epollWait").result();
        source.wakeup();
        assertEquals(0, woken.get(20, TimeUnit.SECONDS));

        AtomicBoolean keptInterrupt = new AtomicBoolean();
        Thread waiter = new Thread(() -> {
            try {
                source.await(-1, t -> { });
                keptInterrupt.set(Thread.currentThread().isInterrupted());
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        waiter.start();
        awaitInNative(waiter, "epollWait", new CompletableFuture<>());
        waiter.interrupt();
        waiter.join(20_000);
        assertFalse(waiter.isAlive());
        assertTrue(keptInterrupt.get());
        assertEquals(0, source.await(TimeUnit.MILLISECONDS.toNanos(120), t -> { }));
    }

    /**
     * rxe and siw have no XRC: the device does not claim it, and opening a domain says why with the driver's own
     * answer to {@code ibv_open_xrcd}, leaving the file alone.
     */
    @Test
    void shouldReportXrcUnavailableWithTheDriversAnswer(@TempDir Path dir) {
        assumeFalse(device.attributes().capabilities().contains(DeviceCapability.XRC), "the device has XRC");
        Path file = dir.resolve("xrcd");
        UnsupportedOperationException refused = assertThrows(UnsupportedOperationException.class,
            () -> device.openXrcDomain(file, true));
        String message = refused.getMessage();
        assertTrue(message.contains(device.name()) && message.contains("IBV_DEVICE_XRC")
            && message.contains("ibv_open_xrcd"), message);
        assertFalse(Files.exists(file), "the file was created");
        assertEquals(0, device.resources().xrcDomains());
    }

    @Test
    void shouldRefusePostsInTheWrongState() throws IOException {
        SendWorkRequest send = request(WorkRequestOpcode.SEND, 17, 4);
        IllegalStateException inReset = assertThrows(IllegalStateException.class, () -> qpA.postSend(send));
        assertEquals("postSend: queue pair " + qpA.number() + " is in state RESET; sends need READY_TO_SEND",
            inReset.getMessage());
        IllegalStateException receiveInReset = assertThrows(IllegalStateException.class, () -> postReceiveB(18, 4));
        assertEquals("postReceive: queue pair " + qpB.number() + " is in state RESET; receives need INIT or later",
            receiveInReset.getMessage());

        qpA.modify(QueuePairState.INIT, new QueuePairAttributes());
        IllegalStateException inInit = assertThrows(IllegalStateException.class, () -> qpA.postSend(send));
        assertEquals("postSend: queue pair " + qpA.number() + " is in state INIT; sends need READY_TO_SEND",
            inInit.getMessage());
        IllegalStateException badMove = assertThrows(IllegalStateException.class,
            () -> qpA.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes()));
        assertEquals("queue pair " + qpA.number() + " cannot move from INIT to READY_TO_SEND; allowed from "
            + "[READY_TO_RECEIVE, READY_TO_SEND]", badMove.getMessage());
        assertThrows(IllegalArgumentException.class, () -> qpA.postSend(send.flags(1 << 7)));
    }

    /** Connect {@code qpS} (of device B's domain) with qpA. */
    private void connectToA(QueuePair qpS) throws IOException {
        QueuePairAttributes init = new QueuePairAttributes();
        qpA.modify(QueuePairState.INIT, init);
        qpS.modify(QueuePairState.INIT, init);
        qpA.modify(QueuePairState.READY_TO_RECEIVE, rtr(qpS.number(), 0));
        qpS.modify(QueuePairState.READY_TO_RECEIVE, rtr(qpA.number(), 0));
        qpA.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes());
        qpS.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes());
    }

    @Test
    void shouldReceiveThroughASharedReceiveQueue() throws IOException {
        SharedReceiveQueue srq = domain.createSharedReceiveQueue(8, 1);
        QueuePair qpS = null;
        try {
            qpS = domain.createQueuePair(initAttributes(cqB).sharedReceiveQueue(srq));
            assertEquals(0, qpS.maxReceiveWorkRequests());
            connectToA(qpS);
            byte[] data = fill(memoryA, "through the SRQ");
            srq.postReceive(srq.createReceiveWorkRequest().id(19).sge(0, memoryB.address(), SIZE,
                memoryB.localKey()));
            QueuePair shared = qpS;
            assertThrows(IllegalStateException.class, () -> shared.postReceive(shared.createReceiveWorkRequest()));

            qpA.postSend(request(WorkRequestOpcode.SEND, 20, data.length));

            assertEquals(CompletionStatus.SUCCESS, pollOne(cqA).status());
            Completion received = pollOne(cqB);
            assertEquals(new Completion(19, CompletionStatus.SUCCESS, CompletionOpcode.RECV, data.length, false, 0,
                qpS.number()), received);
            assertArrayEquals(data, bytes(memoryB, data.length));
        } finally {
            if (qpS != null) {
                qpS.close();
            }
            srq.close();
        }
    }

    @Test
    void shouldReportTheLimitOfASharedReceiveQueueAndTheLastReceiveOfAQueuePairInError() throws Exception {
        SharedReceiveQueue srq = domain.createSharedReceiveQueue(8, 1);
        QueuePair qpS = null;
        try {
            qpS = domain.createQueuePair(initAttributes(cqB).sharedReceiveQueue(srq));
            connectToA(qpS);
            for (int i = 0; i < 3; i++) {
                srq.postReceive(srq.createReceiveWorkRequest().id(30 + i).sge(0, memoryB.address(), SIZE,
                    memoryB.localKey()));
            }
            List<SharedReceiveQueue> reached = new CopyOnWriteArrayList<>();
            srq.armLimit(2, reached::add);
            byte[] data = fill(memoryA, "below the limit");

            // 3 posted: the first taken leaves 2 (not below the limit), the second 1 (the event, once)
            qpA.postSend(request(WorkRequestOpcode.SEND, 40, data.length));
            assertEquals(CompletionStatus.SUCCESS, pollOne(cqA).status());
            assertEquals(30, pollOne(cqB).id());
            qpA.postSend(request(WorkRequestOpcode.SEND, 41, data.length));
            assertEquals(CompletionStatus.SUCCESS, pollOne(cqA).status());
            assertEquals(31, pollOne(cqB).id());
            await(() -> reached.size() == 1, "the SRQ limit event");
            assertEquals(srq, reached.get(0));

            // moved to ERROR, the queue pair takes no more shared receives and says so once: receive 32 stays
            qpS.modify(QueuePairState.ERROR, null);
            // (the opcode of a failed completion is undefined in verbs: this provider reports none)
            assertEquals(new Completion(SharedReceiveQueue.LAST_RECEIVE_ID, CompletionStatus.WORK_REQUEST_FLUSHED,
                null, 0, false, 0, qpS.number()), pollOne(cqB));
            Thread.sleep(200);
            List<Completion> more = new ArrayList<>();
            cqB.poll(c -> more.add(Completion.of(c)), 8);
            assertEquals(List.of(), more);
        } finally {
            if (qpS != null) {
                qpS.close();
            }
            srq.close();
        }
    }
}
