package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.DeviceResources;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairEvent;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcSharedReceiveQueue;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

@Timeout(60)
class ShmXrcDomainTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @TempDir
    Path temp;

    private XrcDomain open(final RdmaDevice device, final boolean create) throws IOException {
        return fixture.own(device.openXrcDomain(temp.resolve("domain"), create));
    }

    private static List<QueuePairEvent> events(final XrcTargetQueuePair target) {
        final List<QueuePairEvent> events = new ArrayList<>();
        target.pollEvents((number, event) -> {
            assertEquals(target.number(), number);
            events.add(event);
        }, 16);
        return events;
    }

    @Test
    void shouldShareOneDomainBetweenDevicesOpeningTheSameFile() throws Exception {
        final XrcDomain first = open(fixture.device(), true);
        assertTrue(Files.exists(temp.resolve("domain")));
        final XrcDomain second = open(fixture.device(), false);
        final XrcTargetQueuePair created = fixture.own(first.createTargetQueuePair());
        final XrcTargetQueuePair opened = fixture.own(second.openTargetQueuePair(created.number()));
        assertEquals(created.number(), opened.number());
        assertSame(second, opened.xrcDomain());
        assertEquals(2, created.references());
        assertEquals(2, opened.references());
    }

    @Test
    void shouldFindTheDomainThroughAnotherNameOfTheSameFile() throws Exception {
        final XrcDomain first = open(fixture.device(), true);
        final Path link = Files.createSymbolicLink(temp.resolve("link"), temp.resolve("domain"));
        final XrcDomain second = fixture.own(fixture.device().openXrcDomain(link, false));
        final XrcTargetQueuePair created = fixture.own(first.createTargetQueuePair());
        fixture.own(second.openTargetQueuePair(created.number()));
        assertEquals(2, created.references());
    }

    @Test
    void shouldRefuseToOpenWithoutCreateWhereNoDomainExists() throws Exception {
        final RdmaDevice device = fixture.device();
        final Path missing = temp.resolve("missing");
        assertThrows(NoSuchFileException.class, () -> device.openXrcDomain(missing, false));
        final Path plain = Files.createFile(temp.resolve("plain"));
        final IOException ex = assertThrows(IOException.class, () -> device.openXrcDomain(plain, false));
        assertEquals("no XRC domain is associated with " + plain + ": open it with create=true first",
            ex.getMessage());
        assertEquals(new DeviceResources(0, 0, 0, 0, 0, 0), device.resources());
    }

    @Test
    void shouldCountReferencesAndDestroyTheTargetQueuePairWithTheLastOne() throws Exception {
        final XrcDomain first = open(fixture.device(), true);
        final XrcDomain second = open(fixture.device(), false);
        final XrcTargetQueuePair created = first.createTargetQueuePair();
        final XrcTargetQueuePair openedTwice = second.openTargetQueuePair(created.number());
        final XrcTargetQueuePair openedAgain = second.openTargetQueuePair(created.number());
        final XrcTargetQueuePair openedByCreator = first.openTargetQueuePair(created.number());
        assertEquals(4, created.references());
        created.close();
        assertEquals(3, openedTwice.references());
        openedTwice.close();
        openedTwice.close();
        assertEquals(2, openedAgain.references());
        openedByCreator.close();
        assertEquals(1, openedAgain.references());
        openedAgain.close();
        final IOException ex = assertThrows(IOException.class, () -> first.openTargetQueuePair(created.number()));
        assertEquals("XRC domain " + first.file() + " holds no target queue pair " + created.number()
            + " (never created, or destroyed when its last user closed it)", ex.getMessage());
        assertEquals(1, ((ShmXrcDomain) first).registry().targetCounts()[1]);
        assertThrows(IllegalStateException.class, created::references);
    }

    @Test
    void shouldGiveEachTargetQueuePairItsOwnNumber() throws Exception {
        final XrcDomain domain = open(fixture.device(), true);
        final XrcTargetQueuePair one = fixture.own(domain.createTargetQueuePair());
        final XrcTargetQueuePair two = fixture.own(domain.createTargetQueuePair());
        assertNotEquals(one.number(), two.number());
        assertTrue(one.number() > 0 && one.number() <= 0xFFFFFF);
        assertEquals(1, one.references());
        assertEquals(1, two.references());
        assertThrows(IOException.class, () -> domain.openTargetQueuePair(0));
        assertThrows(IOException.class, () -> domain.openTargetQueuePair(-1));
    }

    /**
     * The registry holds {@link XrcDomainDescriptor#TARGETS} target queue pairs (enough for the stream's XRC mode at
     * 10,000 connections on one host, a target per connection and side), each found by its number; a full table
     * refuses, and a destroyed queue pair's number is not given out again at once, so a stale number finds nothing.
     */
    @Test
    void shouldHoldAFullTableOfTargetQueuePairsEachFoundByItsNumberAndNotReuseANumberAtOnce() throws Exception {
        final XrcDomain domain = open(fixture.device(), true);
        final List<XrcTargetQueuePair> targets = new ArrayList<>(XrcDomainDescriptor.TARGETS);
        try {
            final Set<Integer> numbers = new HashSet<>();
            for (int i = 0; i < XrcDomainDescriptor.TARGETS; i++) {
                final XrcTargetQueuePair target = domain.createTargetQueuePair();
                targets.add(target);
                assertTrue(numbers.add(target.number()), () -> "number " + target.number() + " given twice");
            }
            final IllegalStateException full = assertThrows(IllegalStateException.class,
                domain::createTargetQueuePair);
            assertTrue(full.getMessage().endsWith("holds 32768 target queue pairs, the most it can"),
                full::getMessage);
            for (final int index : new int[] {0, 1, XrcDomainDescriptor.TARGETS / 2, XrcDomainDescriptor.TARGETS - 1}) {
                try (XrcTargetQueuePair opened = domain.openTargetQueuePair(targets.get(index).number())) {
                    assertEquals(2, opened.references(), "found by its number");
                }
            }
            final XrcTargetQueuePair gone = targets.remove(XrcDomainDescriptor.TARGETS / 2);
            final int goneNumber = gone.number();
            gone.close();
            final XrcTargetQueuePair next = domain.createTargetQueuePair();
            targets.add(next);
            assertNotEquals(goneNumber, next.number(), "a destroyed number comes back only after a round");
            assertThrows(IOException.class, () -> domain.openTargetQueuePair(goneNumber));
            try (XrcTargetQueuePair opened = domain.openTargetQueuePair(next.number())) {
                assertEquals(2, opened.references());
            }
        } finally {
            for (final XrcTargetQueuePair target : targets) {
                target.close();
            }
        }
    }

    @Test
    void shouldRefuseToCloseTheDomainWhileItsObjectsAreOpen() throws Exception {
        final RdmaDevice device = fixture.device();
        final XrcDomain domain = device.openXrcDomain(temp.resolve("domain"), true);
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        final XrcTargetQueuePair target = domain.createTargetQueuePair();
        final XrcSharedReceiveQueue srq = domain.createSharedReceiveQueue(pd, cq, 8, 1);
        IllegalStateException ex = assertThrows(IllegalStateException.class, domain::close);
        assertEquals("XRC domain " + domain.file() + " still has 1 target queue pairs [" + target.number()
            + "] and 1 shared receive queues [" + srq.number() + "] open through this handle: close them first",
            ex.getMessage());
        target.close();
        ex = assertThrows(IllegalStateException.class, domain::close);
        assertEquals("XRC domain " + domain.file() + " still has 0 target queue pairs [] and 1 shared receive "
            + "queues [" + srq.number() + "] open through this handle: close them first", ex.getMessage());
        assertThrows(IllegalStateException.class, device::close);
        srq.close();
        domain.close();
        domain.close();
        assertThrows(IllegalStateException.class, domain::createTargetQueuePair);
    }

    @Test
    void shouldKeepTheDomainUntilItsLastUserClosesIt() throws Exception {
        final XrcDomain first = fixture.device().openXrcDomain(temp.resolve("domain"), true);
        final XrcDomain second = fixture.device().openXrcDomain(temp.resolve("domain"), true);
        // target queue pairs come and go while the domain stays
        first.createTargetQueuePair().close();
        final XrcTargetQueuePair target = second.createTargetQueuePair();
        first.close();
        assertTrue(((ShmXrcDomain) second).registryExists());
        assertEquals(1, target.references());
        target.close();
        second.close();
        assertFalse(((ShmXrcDomain) second).registryExists());
        final IOException ex = assertThrows(IOException.class,
            () -> fixture.device().openXrcDomain(temp.resolve("domain"), false));
        assertTrue(ex.getMessage().startsWith("no XRC domain is associated with "), ex.getMessage());
        // a new domain on the same file starts afresh
        final XrcDomain again = open(fixture.device(), true);
        assertThrows(IOException.class, () -> again.openTargetQueuePair(target.number()));
    }

    @Test
    void shouldStartAfreshOverARegistryItsLastUserCouldNotUnlink() throws Exception {
        final ShmDevice device = (ShmDevice) fixture.device();
        final Path file = Files.createFile(temp.resolve("domain"));
        final Map<String, Object> identity = Files.readAttributes(file, "unix:dev,ino");
        final Path registry = device.configuration().directory().resolve(XrcDomainDescriptor.fileName(
            (Long) identity.get("dev"), (Long) identity.get("ino")));
        final ByteBuffer deleted = ByteBuffer.allocate((int) XrcDomainDescriptor.LENGTH).order(ByteOrder.nativeOrder())
            .putInt(XrcDomainDescriptor.MAGIC_OFFSET, XrcDomainDescriptor.MAGIC)
            .putInt(XrcDomainDescriptor.STATE_OFFSET, XrcDomainDescriptor.STATE_DELETED);
        Files.write(registry, deleted.array());
        final XrcDomain domain = open(device, true);
        assertEquals(1, fixture.own(domain.createTargetQueuePair()).references());
    }

    @Test
    void shouldShareTheStateOfATargetQueuePairBetweenHandles() throws Exception {
        final XrcDomain first = open(fixture.device(), true);
        final XrcDomain second = open(fixture.device(), false);
        final XrcTargetQueuePair created = fixture.own(first.createTargetQueuePair());
        final XrcTargetQueuePair opened = fixture.own(second.openTargetQueuePair(created.number()));
        assertEquals(QueuePairState.RESET, opened.state());
        created.modify(QueuePairState.INIT, new QueuePairAttributes());
        assertEquals(QueuePairState.INIT, opened.state());
        assertThrows(IllegalArgumentException.class, () -> opened.modify(QueuePairState.INIT, null));
        final IllegalArgumentException noInitiator = assertThrows(IllegalArgumentException.class,
            () -> opened.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes()));
        assertTrue(noInitiator.getMessage().startsWith("moving to READY_TO_RECEIVE needs the remote GID and queue "
            + "pair number of the XRC initiator: "), noInitiator.getMessage());
        assertEquals(QueuePairState.INIT, created.state());
        opened.modify(QueuePairState.ERROR, null);
        assertEquals(QueuePairState.ERROR, created.state());
        final IllegalStateException ex = assertThrows(IllegalStateException.class,
            () -> created.modify(QueuePairState.INIT, new QueuePairAttributes()));
        assertEquals("XRC target queue pair " + created.number() + " cannot move from ERROR to INIT; allowed from "
            + "[RESET, INIT]", ex.getMessage());
        created.modify(QueuePairState.RESET, null);
        assertEquals(QueuePairState.RESET, opened.state());
    }

    @Test
    void shouldDeliverEachEventToEveryHandleOnce() throws Exception {
        final XrcDomain first = open(fixture.device(), true);
        final XrcDomain second = open(fixture.device(), false);
        final XrcTargetQueuePair created = fixture.own(first.createTargetQueuePair());
        final XrcTargetQueuePair opened = fixture.own(second.openTargetQueuePair(created.number()));
        final XrcTargetQueuePair openedAgain = fixture.own(second.openTargetQueuePair(created.number()));
        assertEquals(List.of(), events(created));
        opened.modify(QueuePairState.ERROR, null);
        // entering ERROR again reports nothing new
        created.modify(QueuePairState.ERROR, null);
        for (final XrcTargetQueuePair handle : List.of(created, opened, openedAgain)) {
            assertEquals(List.of(QueuePairEvent.LAST_WORK_REQUEST_REACHED), events(handle));
            assertEquals(List.of(), events(handle));
            assertEquals(0, handle.lostEvents());
        }
        // a handle opened later does not see what happened before it
        final XrcTargetQueuePair late = fixture.own(first.openTargetQueuePair(created.number()));
        assertEquals(List.of(), events(late));
        assertThrows(IllegalArgumentException.class, () -> late.pollEvents((number, event) -> { }, 0));
    }

    @Test
    void shouldCountEventsAHandleMissed() throws Exception {
        final XrcDomain domain = open(fixture.device(), true);
        final XrcTargetQueuePair target = fixture.own(domain.createTargetQueuePair());
        for (int i = 0; i < XrcDomainDescriptor.EVENT_RING + 3; i++) {
            target.modify(QueuePairState.ERROR, null);
            target.modify(QueuePairState.RESET, null);
        }
        assertEquals(XrcDomainDescriptor.EVENT_RING, events(target).size());
        assertEquals(3, target.lostEvents());
        final List<QueuePairEvent> two = new ArrayList<>();
        target.modify(QueuePairState.ERROR, null);
        assertEquals(1, target.pollEvents((number, event) -> two.add(event), 1));
    }

    @Test
    void shouldHaveNoQueuesOfItsOwn() throws Exception {
        final XrcDomain domain = open(fixture.device(), true);
        final XrcTargetQueuePair target = fixture.own(domain.createTargetQueuePair());
        assertEquals(QueuePairType.XRC_RECV, target.type());
        assertNull(target.protectionDomain());
        assertEquals(0, target.maxSendWorkRequests());
        assertEquals(0, target.maxReceiveWorkRequests());
        assertEquals(0, target.maxInlineData());
        IllegalStateException ex = assertThrows(IllegalStateException.class, target::createReceiveWorkRequest);
        assertEquals("XRC target queue pair " + target.number() + " has no receive queue: post receives to the XRC "
            + "shared receive queues of its domain", ex.getMessage());
        assertThrows(IllegalStateException.class, () -> target.postReceive(null));
        ex = assertThrows(IllegalStateException.class, target::createSendWorkRequest);
        assertEquals("XRC target queue pair " + target.number() + " has no send queue", ex.getMessage());
        assertThrows(IllegalStateException.class, () -> target.postSend(null));
    }

    @Test
    void shouldRunCloseActionsOnce() throws Exception {
        final XrcDomain domain = open(fixture.device(), true);
        final XrcTargetQueuePair target = domain.createTargetQueuePair();
        final int[] runs = new int[1];
        target.whenClosed(() -> runs[0]++);
        target.close();
        target.close();
        assertEquals(1, runs[0]);
        assertEquals(QueuePairState.ERROR, target.state());
        assertThrows(IllegalStateException.class, () -> target.modify(QueuePairState.RESET, null));
    }

    @Test
    void shouldNumberSharedReceiveQueuesAndCountEverything() throws Exception {
        final RdmaDevice device = fixture.device();
        final XrcDomain domain = open(device, true);
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        final XrcSharedReceiveQueue one = domain.createSharedReceiveQueue(pd, cq, 8, 1);
        final XrcSharedReceiveQueue two = domain.createSharedReceiveQueue(pd, cq, 4, 1);
        final XrcTargetQueuePair target = domain.createTargetQueuePair();
        final XrcTargetQueuePair opened = domain.openTargetQueuePair(target.number());
        assertNotEquals(one.number(), two.number());
        assertSame(cq, one.completionQueue());
        assertSame(domain, one.xrcDomain());
        assertEquals(8, one.maxWorkRequests());
        one.postReceive(one.createReceiveWorkRequest());
        assertEquals(new DeviceResources(1, 1, 0, 0, 2, 0, 1, 2), device.resources());
        // the completion queue and the protection domain serve the queues: they cannot go first
        assertThrows(IllegalStateException.class, cq::close);
        assertThrows(IllegalStateException.class, pd::close);
        final RdmaDevice other = fixture.device();
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> domain.createSharedReceiveQueue(fixture.own(other.allocateProtectionDomain()), cq, 8, 1));
        assertEquals("the protection domain belongs to another device", ex.getMessage());
        assertThrows(IllegalArgumentException.class, () -> domain.createSharedReceiveQueue(pd, cq, 0, 1));
        assertEquals(2, device.resources().sharedReceiveQueues());
        assertFalse(one.peerAccessEnded(), "open: initiators may reach its memory");
        one.close();
        assertTrue(one.peerAccessEnded(), "closed with no initiator inside: its memory may be reused");
        two.close();
        target.close();
        opened.close();
        assertEquals(new DeviceResources(1, 1, 0, 0, 0, 0, 1, 0), device.resources());
        domain.close();
        assertEquals(new DeviceResources(1, 1, 0, 0, 0, 0, 0, 0), device.resources());
    }

    /**
     * A registry whose file lock another user keeps (a stopped process) refuses the call after the lock timeout
     * instead of blocking it for good, and serves it again once the lock is free.
     */
    @Test
    void shouldRefuseACallWhenAnotherUserKeepsTheRegistryLockedAndServeItOnceFree() throws Exception {
        final XrcDomain domain = open(fixture.device(), true);
        final Path registry = ((ShmXrcDomain) domain).registry().path();
        final long defaultTimeout = XrcRegistry.lockTimeoutNanos;
        XrcRegistry.lockTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(200);
        try (FileChannel holder = FileChannel.open(registry, StandardOpenOption.WRITE)) {
            final FileLock held = holder.lock();
            final long start = System.nanoTime();
            final IllegalStateException ex = assertThrows(IllegalStateException.class, domain::createTargetQueuePair);
            final long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertEquals("XRC domain registry " + registry + " was locked by another user for 200 ms (a stopped "
                + "process?): the call is refused", ex.getMessage());
            assertTrue(waitedMillis >= 190 && waitedMillis < 5_000, "waited " + waitedMillis + " ms");
            held.release();
            final XrcTargetQueuePair target = fixture.own(domain.createTargetQueuePair());
            assertEquals(1, target.references());
        } finally {
            XrcRegistry.lockTimeoutNanos = defaultTimeout;
        }
    }
}
