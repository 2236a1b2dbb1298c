package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Proxy;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The pool of ended connections' memory on one protection domain (shm): what it keeps, hands out again with what
 * peers wrote zeroed, refuses to keep, bounds and lets go when idle or closed; and the rule by which a connection's
 * release gives its memory back (only once its queue pair says no peer access can still reach it).
 */
class ConnectionMemoryPoolTest {
    private static final ConnectionMemory.Shape SHAPE = new ConnectionMemory.Shape(3 * 4096, 8192, 256, 0);
    private static final ConnectionMemory.Shape OTHER = new ConnectionMemory.Shape(3 * 4096, 16384, 256, 0);
    private static final long IDLE_MILLIS = 50;

    private RdmaDevice device;
    private ProtectionDomain domain;
    private final List<Runnable> scheduled = new ArrayList<>();
    private final List<Long> delays = new ArrayList<>();
    private boolean timerOpen = true;

    @BeforeEach
    void open() throws IOException {
        device = RdmaProviders.byName("shm").openDevice(null);
        domain = device.allocateProtectionDomain();
    }

    @AfterEach
    void close() {
        domain.close();
        device.close();
    }

    private ConnectionMemoryPool pool(final int capacity) {
        return new ConnectionMemoryPool(domain, capacity, IDLE_MILLIS, (task, delayNanos) -> {
            if (!timerOpen) {
                return false;
            }
            scheduled.add(task);
            delays.add(delayNanos);
            return true;
        });
    }

    private long openRegions() {
        return device.resources().memoryRegions();
    }

    @Test
    void shouldHandBackTheMemoryOfAnEndedConnectionWithWhatPeersWroteZeroed() throws IOException {
        final ConnectionMemoryPool pool = pool(4);
        final ConnectionMemory first = pool.acquire(SHAPE);
        scribble(first);
        final long regions = openRegions();

        pool.release(first, true);
        assertEquals(1, pool.idleCount());
        assertEquals(regions, openRegions(), "a kept set stays registered");
        final ConnectionMemory second = pool.acquire(SHAPE);

        assertSame(first, second, "the idle set of the same shape should be reused");
        assertEquals(1, pool.reusedCount());
        assertEquals(0, pool.idleCount());
        assertZero(second.receiveRegion.segment(), "receive ring");
        assertZero(second.targetRegion.segment(), "target SGL");
        second.close();
        pool.close();
    }

    @Test
    void shouldCloseMemoryAPeerMayStillReachInsteadOfKeepingIt() throws IOException {
        final ConnectionMemoryPool pool = pool(4);
        final ConnectionMemory memory = pool.acquire(SHAPE);
        final long regions = openRegions();

        pool.release(memory, false);

        assertEquals(0, pool.idleCount());
        assertEquals(regions - 3, openRegions(), "the three regions should be deregistered");
        assertFalse(memory.sendMemory.scope().isAlive(), "the send memory should be freed");
        final ConnectionMemory next = pool.acquire(SHAPE);
        assertNotSame(memory, next);
        next.close();
        pool.close();
    }

    @Test
    void shouldReuseOnlyMemoryOfTheSameShape() throws IOException {
        final ConnectionMemoryPool pool = pool(4);
        final ConnectionMemory memory = pool.acquire(SHAPE);
        pool.release(memory, true);

        final ConnectionMemory other = pool.acquire(OTHER);

        assertNotSame(memory, other);
        assertEquals(16384, other.receiveRegion.length());
        assertEquals(1, pool.idleCount());
        assertEquals(0, pool.reusedCount());
        other.close();
        pool.close();
    }

    @Test
    void shouldKeepAtMostItsCapacityAndReleaseTheOldestBeyond() throws IOException {
        final ConnectionMemoryPool pool = pool(2);
        final ConnectionMemory a = pool.acquire(SHAPE);
        final ConnectionMemory b = pool.acquire(SHAPE);
        final ConnectionMemory c = pool.acquire(SHAPE);

        pool.release(a, true);
        pool.release(b, true);
        pool.release(c, true);

        assertEquals(2, pool.idleCount());
        assertFalse(a.sendMemory.scope().isAlive(), "the oldest idle set should be released");
        assertSame(c, pool.acquire(SHAPE), "the most recently released set first");
        assertSame(b, pool.acquire(SHAPE));
        b.close();
        c.close();
        pool.close();
    }

    @Test
    void shouldKeepNothingWithCapacityZero() throws IOException {
        final ConnectionMemoryPool pool = pool(0);
        final ConnectionMemory memory = pool.acquire(SHAPE);

        pool.release(memory, true);

        assertEquals(0, pool.idleCount());
        assertFalse(memory.sendMemory.scope().isAlive());
        assertTrue(scheduled.isEmpty(), "nothing to sweep");
        pool.close();
    }

    @Test
    void shouldReleaseSetsIdleForTheIdleTimeOnItsSweep() throws Exception {
        final ConnectionMemoryPool pool = pool(4);
        final ConnectionMemory old = pool.acquire(SHAPE);
        final ConnectionMemory recent = pool.acquire(SHAPE);
        pool.release(old, true);
        assertEquals(1, scheduled.size(), "the first set kept should schedule a sweep");
        assertEquals(IDLE_MILLIS * 1_000_000L, delays.get(0));
        Thread.sleep(IDLE_MILLIS * 2);
        pool.release(recent, true);
        assertEquals(1, scheduled.size(), "one sweep is pending at a time");

        scheduled.removeFirst().run();

        assertEquals(1, pool.idleCount(), "only the set idle for the idle time should go");
        assertFalse(old.sendMemory.scope().isAlive());
        assertTrue(recent.sendMemory.scope().isAlive());
        assertEquals(1, scheduled.size(), "a set is left: the next sweep is scheduled");
        assertTrue(delays.get(1) <= IDLE_MILLIS * 1_000_000L, "the next sweep when the recent set expires");
        Thread.sleep(IDLE_MILLIS * 2);

        scheduled.removeFirst().run();

        assertEquals(0, pool.idleCount());
        assertFalse(recent.sendMemory.scope().isAlive());
        assertTrue(scheduled.isEmpty(), "nothing left to sweep");
        pool.close();
    }

    @Test
    void shouldReleaseEverythingWhenClosedAndCloseWhatComesBackLater() throws IOException {
        final ConnectionMemoryPool pool = pool(4);
        final ConnectionMemory idle = pool.acquire(SHAPE);
        final ConnectionMemory late = pool.acquire(SHAPE);
        pool.release(idle, true);
        final long regions = openRegions();

        pool.close();
        pool.release(late, true);

        assertEquals(0, pool.idleCount());
        assertFalse(idle.sendMemory.scope().isAlive());
        assertFalse(late.sendMemory.scope().isAlive());
        assertEquals(regions - 6, openRegions());
    }

    @Test
    void shouldCloseWhatComesBackOnceTheTimerIsGone() throws IOException {
        final ConnectionMemoryPool pool = pool(4);
        final ConnectionMemory memory = pool.acquire(SHAPE);
        timerOpen = false;

        pool.release(memory, true);

        assertEquals(0, pool.idleCount(), "a pool that cannot sweep keeps nothing");
        assertFalse(memory.sendMemory.scope().isAlive());
    }

    @Test
    void shouldGiveAConnectionsMemoryBackOnlyWhenItsQueuePairIsQuiescent() throws IOException {
        final StreamTransport transport = StreamTransports.open(RdmaProviders.byName("shm"));
        try {
            final DeviceContext context = ((RsocketTransport) transport).context(device);
            final ConnectionMemoryPool pool = context.memoryPool();
            final ConnectionResources resources = new ConnectionResources(new StreamOptions(),
                StreamConfiguration.fromSystemProperties());

            resources.context = context;
            resources.memory = pool.acquire(SHAPE);
            resources.queuePair = queuePair(false);
            final ConnectionMemory lingering = resources.memory;
            resources.release(null);
            assertEquals(0, pool.idleCount(), "memory a peer access may still reach was kept");
            assertFalse(lingering.sendMemory.scope().isAlive());

            resources.memory = pool.acquire(SHAPE);
            resources.queuePair = queuePair(true);
            final ConnectionMemory ended = resources.memory;
            resources.release(null);
            assertEquals(1, pool.idleCount());
            assertSame(ended, pool.acquire(SHAPE));

            // never bound to a queue pair: the peer never learned where it is
            resources.memory = ended;
            resources.release(null);
            assertEquals(1, pool.idleCount());
        } finally {
            StreamTransports.close(transport);
        }
    }

    /**
     * A closed queue pair that says whether a peer access may still be under way.
     */
    private static QueuePair queuePair(final boolean quiescent) {
        return (QueuePair) Proxy.newProxyInstance(QueuePair.class.getClassLoader(), new Class<?>[] {QueuePair.class},
            (proxy, method, args) -> switch (method.getName()) {
                case "peerAccessEnded" -> quiescent;
                case "close" -> null;
                case "toString" -> "QueuePair{quiescent=" + quiescent + '}';
                default -> throw new UnsupportedOperationException(method.getName());
            });
    }

    private static void scribble(final ConnectionMemory memory) {
        memory.sendMemory.fill((byte) 0x5A);
        memory.receiveRegion.segment().fill((byte) 0x5A);
        memory.targetRegion.segment().fill((byte) 0x5A);
    }

    private static void assertZero(final MemorySegment segment, final String what) {
        final long mismatch = segment.mismatch(MemorySegment.ofArray(new byte[(int) segment.byteSize()]));
        assertEquals(-1, mismatch, what + " is not zero at offset " + mismatch);
    }
}
