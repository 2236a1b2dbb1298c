package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.DeviceResources;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Protection domains, memory regions, completion queues, readiness sources and shared receive queues: creation,
 * argument checks, close rules and use after close.
 */
class ShmResourceTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldCountTheOpenObjectsByKindFromCreationToClose() throws Exception {
        final RdmaDevice device = fixture.device();
        assertEquals(new DeviceResources(0, 0, 0, 0, 0, 0), device.resources());
        final ProtectionDomain pd = device.allocateProtectionDomain();
        final ReadinessSource source = device.createReadinessSource();
        final CompletionQueue cq = device.createCompletionQueue(4, source, 0);
        final SharedReceiveQueue srq = pd.createSharedReceiveQueue(4, 1);
        final QueuePair qp = pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
            .receiveCompletionQueue(cq));
        final MemoryRegion allocated = pd.allocate(64, AccessFlags.LOCAL_WRITE);
        final Arena arena = fixture.own(Arena.ofShared());
        final MemoryRegion registered = pd.register(arena.allocate(200), 0);
        // the registration of process memory holds no shared file
        assertEquals(new DeviceResources(1, 1, 1, 1, 1, 2, 0, 0, 64), device.resources());
        registered.close();
        registered.close();
        assertEquals(new DeviceResources(1, 1, 1, 1, 1, 1, 0, 0, 64), device.resources());
        allocated.close();
        assertEquals(new DeviceResources(1, 1, 1, 1, 1, 0), device.resources());
        qp.close();
        srq.close();
        cq.close();
        source.close();
        assertEquals(new DeviceResources(1, 0, 0, 0, 0, 0), device.resources());
        pd.close();
        pd.close();
        assertEquals(new DeviceResources(0, 0, 0, 0, 0, 0), device.resources());
    }

    @Test
    void shouldRefuseToCloseAProtectionDomainWithOpenChildren() throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = device.allocateProtectionDomain();
        assertSame(device, pd.device());
        final MemoryRegion mr = pd.allocate(64, AccessFlags.LOCAL_WRITE);
        final SharedReceiveQueue srq = pd.createSharedReceiveQueue(4, 1);
        final String handle = handleOf(pd);
        final IllegalStateException ex = assertThrows(IllegalStateException.class, pd::close);
        assertEquals("protection domain " + handle + " still has 2 open memory regions, queue pairs or shared "
            + "receive queues: close them first", ex.getMessage());
        srq.close();
        mr.close();
        pd.close();
        pd.close();
        assertEquals("protection domain " + handle + " is closed",
            assertThrows(IllegalStateException.class, () -> pd.allocate(64, 0)).getMessage());
        assertEquals("protection domain " + handle + " is closed",
            assertThrows(IllegalStateException.class, () -> pd.createSharedReceiveQueue(1, 1)).getMessage());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(4, null, 0));
        assertEquals("protection domain " + handle + " is closed",
            assertThrows(IllegalStateException.class, () -> pd.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(cq).receiveCompletionQueue(cq))).getMessage());
    }

    private static String handleOf(final ProtectionDomain pd) {
        return Integer.toString(((ShmProtectionDomain) pd).handle());
    }

    @Test
    void shouldAllocateZeroedPageAlignedMemoryOfTheAskedLength() throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        final int access = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ;
        final MemoryRegion mr = fixture.own(pd.allocate(100, access));
        final MemoryRegion other = fixture.own(pd.allocate(5000, 0));
        assertEquals(100, mr.length());
        assertEquals(100, mr.segment().byteSize());
        assertEquals(mr.address(), mr.segment().address());
        assertEquals(0, mr.address() % 4096);
        assertEquals(access, mr.accessFlags());
        assertSame(pd, mr.protectionDomain());
        assertNotEquals(0, mr.localKey());
        assertNotEquals(0, mr.remoteKey());
        assertNotEquals(mr.localKey(), other.localKey());
        assertEquals(5000, other.length());
        assertEquals(0, other.accessFlags());
        for (long i = 0; i < other.length(); i++) {
            assertEquals(0, other.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
        }
        for (long i = 0; i < mr.length(); i++) {
            assertEquals(0, mr.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i);
        }
        assertThrows(IndexOutOfBoundsException.class, () -> mr.segment().get(ValueLayout.JAVA_BYTE, 100));
    }

    @Test
    void shouldRejectBadAllocations() throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        assertEquals("length=0 is outside [1, 1099511627776]",
            assertThrows(IllegalArgumentException.class, () -> pd.allocate(0, 0)).getMessage());
        assertEquals("length=1099511627777 is outside [1, 1099511627776]",
            assertThrows(IllegalArgumentException.class, () -> pd.allocate((1L << 40) + 1, 0)).getMessage());
        assertEquals("unknown access flags: accessFlags=0x10",
            assertThrows(IllegalArgumentException.class, () -> pd.allocate(64, 0x10)).getMessage());
        assertEquals("remote write and remote atomic need LOCAL_WRITE: accessFlags=REMOTE_WRITE",
            assertThrows(IllegalArgumentException.class, () -> pd.allocate(64, AccessFlags.REMOTE_WRITE))
                .getMessage());
        // nothing leaked: the domain closes
        pd.close();
    }

    @Test
    void shouldRegisterNativeMemoryForLocalAccess() throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        final Arena arena = fixture.own(Arena.ofShared());
        final MemorySegment memory = arena.allocate(256, 8);
        final MemoryRegion mr = fixture.own(pd.register(memory, AccessFlags.LOCAL_WRITE));
        assertEquals(memory.address(), mr.address());
        assertEquals(256, mr.length());
        assertEquals(AccessFlags.LOCAL_WRITE, mr.accessFlags());
        assertNotEquals(0, mr.localKey());
        memory.set(ValueLayout.JAVA_INT, 0, 42);
        assertEquals(42, mr.segment().get(ValueLayout.JAVA_INT, 0));
    }

    @Test
    void shouldRefuseToRegisterHeapMemory() throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> pd.register(MemorySegment.ofArray(new byte[64]), AccessFlags.LOCAL_WRITE));
        assertEquals("only native memory can be registered; this segment is on the heap", ex.getMessage());
    }

    @ParameterizedTest
    @ValueSource(ints = {AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE, AccessFlags.REMOTE_READ,
        AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_ATOMIC})
    void shouldRefuseRemoteAccessToRegisteredMemory(final int access) throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        final Arena arena = fixture.own(Arena.ofShared());
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> pd.register(arena.allocate(64), access));
        assertEquals("the shm provider gives remote access only to memory from ProtectionDomain.allocate(..): "
            + "accessFlags=" + AccessFlags.toString(access), ex.getMessage());
    }

    @Test
    void shouldMakeAClosedRegionUnusable() throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        final MemoryRegion mr = pd.allocate(64, AccessFlags.LOCAL_WRITE);
        final MemorySegment segment = mr.segment();
        mr.close();
        mr.close();
        final IllegalStateException ex = assertThrows(IllegalStateException.class,
            () -> segment.get(ValueLayout.JAVA_BYTE, 0));
        assertEquals("Already closed", ex.getMessage());
        pd.close();
    }

    @Test
    void shouldCreateCompletionQueuesInTheDeviceRange() throws Exception {
        final RdmaDevice device = fixture.device();
        final ReadinessSource source = fixture.own(device.createReadinessSource());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(7, source, 99));
        assertEquals(7, cq.capacity());
        assertSame(source, cq.readinessSource());
        assertEquals(99, cq.token());
        final CompletionQueue pollOnly = fixture.own(device.createCompletionQueue(1 << 20, null, 0));
        assertNull(pollOnly.readinessSource());
        assertEquals(0, pollOnly.poll(c -> { }, 1));
        assertEquals("entries=0 is outside [1, 1048576]", assertThrows(IllegalArgumentException.class,
            () -> device.createCompletionQueue(0, null, 0)).getMessage());
        assertEquals("entries=1048577 is outside [1, 1048576]", assertThrows(IllegalArgumentException.class,
            () -> device.createCompletionQueue((1 << 20) + 1, null, 0)).getMessage());
        assertEquals("limit must be at least 1: limit=0", assertThrows(IllegalArgumentException.class,
            () -> cq.poll(c -> { }, 0)).getMessage());
        final String id = Integer.toString(((ShmCompletionQueue) pollOnly).id());
        assertEquals("completion queue " + id + " has no readiness source to notify",
            assertThrows(IllegalStateException.class, pollOnly::requestNotification).getMessage());
        assertEquals("completion queue " + id + " has no readiness source to notify",
            assertThrows(IllegalStateException.class, pollOnly::requestSolicitedNotification).getMessage());
    }

    @Test
    void shouldRefuseAReadinessSourceOfAnotherDevice() throws Exception {
        final RdmaDevice a = fixture.device();
        final RdmaDevice b = fixture.device();
        final ReadinessSource source = fixture.own(a.createReadinessSource());
        assertEquals("the readiness source belongs to another device", assertThrows(IllegalArgumentException.class,
            () -> b.createCompletionQueue(4, source, 0)).getMessage());
    }

    @Test
    void shouldRefuseToCloseACompletionQueueUsedByAQueuePair() throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue sendCq = fixture.own(device.createCompletionQueue(4, null, 0));
        final CompletionQueue recvCq = fixture.own(device.createCompletionQueue(4, null, 0));
        final QueuePair qp = pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(sendCq)
            .receiveCompletionQueue(recvCq));
        final String id = Integer.toString(((ShmCompletionQueue) sendCq).id());
        assertEquals("completion queue " + id + " is still used by 1 queue pairs: close them first",
            assertThrows(IllegalStateException.class, sendCq::close).getMessage());
        qp.close();
        sendCq.close();
        sendCq.close();
        assertEquals("completion queue " + id + " is closed",
            assertThrows(IllegalStateException.class, () -> sendCq.poll(c -> { }, 1)).getMessage());
        assertTrue(sendCq.toString().contains("closed=true"), sendCq.toString());
        assertEquals("completion queue " + id + " is closed",
            assertThrows(IllegalStateException.class, () -> pd.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(sendCq).receiveCompletionQueue(recvCq))).getMessage());
    }

    @Test
    void shouldCountAQueuePairUsingOneCompletionQueueBothWaysOnce() throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(4, null, 0));
        fixture.own(pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
            .receiveCompletionQueue(cq)));
        final String id = Integer.toString(((ShmCompletionQueue) cq).id());
        assertEquals("completion queue " + id + " is still used by 1 queue pairs: close them first",
            assertThrows(IllegalStateException.class, cq::close).getMessage());
    }

    @Test
    void shouldCloseAReadinessSource() throws Exception {
        final RdmaDevice device = fixture.device();
        final ReadinessSource source = device.createReadinessSource();
        source.close();
        source.close();
        source.wakeup();
        assertEquals("readiness source is closed",
            assertThrows(IllegalStateException.class, () -> source.await(0, token -> { })).getMessage());
        device.close();
    }

    @Test
    void shouldCreateSharedReceiveQueuesInTheDeviceRange() throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        final SharedReceiveQueue srq = fixture.own(pd.createSharedReceiveQueue(8, 2));
        assertEquals(8, srq.maxWorkRequests());
        assertEquals(2, srq.createReceiveWorkRequest().maxSge());
        // deeper than a queue pair's queues: a shared queue serves many of them
        assertEquals(1 << 20, fixture.device().attributes().maxSharedReceiveQueueWorkRequests());
        assertEquals("maxWorkRequests=0 is outside [1, 1048576]", assertThrows(IllegalArgumentException.class,
            () -> pd.createSharedReceiveQueue(0, 1)).getMessage());
        assertEquals("maxWorkRequests=1048577 is outside [1, 1048576]", assertThrows(IllegalArgumentException.class,
            () -> pd.createSharedReceiveQueue((1 << 20) + 1, 1)).getMessage());
        assertEquals("maxSge=0 is outside [1, 16]", assertThrows(IllegalArgumentException.class,
            () -> pd.createSharedReceiveQueue(1, 0)).getMessage());
        assertEquals("maxSge=17 is outside [1, 16]", assertThrows(IllegalArgumentException.class,
            () -> pd.createSharedReceiveQueue(1, 17)).getMessage());
    }

    @Test
    void shouldDetectUseOfASharedReceiveQueueAfterClose() throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        final SharedReceiveQueue srq = pd.createSharedReceiveQueue(8, 1);
        final String id = Integer.toString(((ShmSharedReceiveQueue) srq).id());
        srq.close();
        srq.close();
        assertEquals("shared receive queue " + id + " is closed",
            assertThrows(IllegalStateException.class, srq::createReceiveWorkRequest).getMessage());
        assertTrue(srq.toString().contains("closed=true"));
    }

    /**
     * A closed queue pair's send queue (a request copy per slot, tens of kilobytes for a stream's queue pair) goes to
     * the next queue pair of the same shape on the device, instead of being allocated again for every connection;
     * the slots it served carry nothing over: the next queue pair's messages arrive as posted.
     */
    @Test
    void shouldGiveAClosedQueuePairsSendQueueToTheNextOfTheSameShape() throws Exception {
        final ShmFixture.Pair pair = fixture.pair();
        final ShmDevice device = (ShmDevice) pair.a.device;
        final int kept = device.sendSlotPool().idle();
        pair.b.postReceive(1, 0, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 2, SendFlags.SIGNALED, 0, 8);
        assertEquals(CompletionStatus.SUCCESS, pair.a.awaitOne().status());
        assertEquals(1, pair.b.awaitOne().id());
        pair.a.qp.close();
        assertEquals(kept + 1, device.sendSlotPool().idle(), "the closed queue pair's send queue was not kept");
        final ShmFixture.Side next = fixture.side("C", pair.a.device, new ShmFixture.Config());
        assertEquals(kept, device.sendSlotPool().idle(), "the next queue pair of that shape made a send queue anew");
        final ShmFixture.Side peer = fixture.side("D", pair.b.device, new ShmFixture.Config());
        next.connectTo(peer);
        peer.connectTo(next);
        peer.postReceive(7, 0, 64);
        next.postSend(WorkRequestOpcode.SEND, 8, SendFlags.SIGNALED, 0, 5);
        assertEquals(new ShmFixture.Completion(8, CompletionStatus.SUCCESS, CompletionOpcode.SEND, 5, false, 0,
            next.qp.number()), next.awaitOne());
        assertEquals(new ShmFixture.Completion(7, CompletionStatus.SUCCESS, CompletionOpcode.RECV, 5, false, 0,
            peer.qp.number()), peer.awaitOne());
    }
}
