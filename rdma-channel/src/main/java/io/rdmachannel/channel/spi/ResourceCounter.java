package io.rdmachannel.channel.spi;

import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The open objects of one device, by kind, for providers: an object counts from its creation to its close. Counting
 * happens when objects are created and closed, never on the data path.
 */
public final class ResourceCounter {
    /**
     * The kinds of verbs objects counted.
     */
    public enum Kind {
        /** A protection domain. */
        PROTECTION_DOMAIN,
        /** A completion queue. */
        COMPLETION_QUEUE,
        /** A readiness source. */
        READINESS_SOURCE,
        /** A queue pair. */
        QUEUE_PAIR,
        /** A shared receive queue. */
        SHARED_RECEIVE_QUEUE,
        /** A memory region. */
        MEMORY_REGION,
        /** A handle of an XRC domain. */
        XRC_DOMAIN,
        /** A handle of an XRC target queue pair. */
        XRC_TARGET_QUEUE_PAIR
    }

    private final AtomicIntegerArray open = new AtomicIntegerArray(Kind.values().length);
    private final AtomicLong memoryRegionBytes = new AtomicLong();

    /**
     * A counter with nothing open.
     */
    public ResourceCounter() {
        // every count starts at 0
    }

    /**
     * Count an object that was created.
     *
     * @param kind what it is.
     */
    public void opened(final Kind kind) {
        open.incrementAndGet(kind.ordinal());
    }

    /**
     * Count a memory region that was allocated or registered: one more {@link Kind#MEMORY_REGION}, and the bytes the
     * device holds for it ({@link DeviceResources#memoryRegionBytes()}).
     *
     * @param length the bytes held for the region.
     */
    public void openedMemoryRegion(final long length) {
        opened(Kind.MEMORY_REGION);
        memoryRegionBytes.addAndGet(length);
    }

    /**
     * Stop counting a memory region that was closed.
     *
     * @param length the bytes given to {@link #openedMemoryRegion(long)} for it.
     */
    public void closedMemoryRegion(final long length) {
        closed(Kind.MEMORY_REGION);
        memoryRegionBytes.addAndGet(-length);
    }

    /**
     * Stop counting an object that was closed.
     *
     * @param kind what it is.
     */
    public void closed(final Kind kind) {
        open.decrementAndGet(kind.ordinal());
    }

    /**
     * The counts now.
     *
     * @return a snapshot; the counts of different kinds are read one after the other.
     */
    public DeviceResources snapshot() {
        return new DeviceResources(count(Kind.PROTECTION_DOMAIN), count(Kind.COMPLETION_QUEUE),
            count(Kind.READINESS_SOURCE), count(Kind.QUEUE_PAIR), count(Kind.SHARED_RECEIVE_QUEUE),
            count(Kind.MEMORY_REGION), count(Kind.XRC_DOMAIN), count(Kind.XRC_TARGET_QUEUE_PAIR),
            memoryRegionBytes.get());
    }

    private int count(final Kind kind) {
        return open.get(kind.ordinal());
    }
}
