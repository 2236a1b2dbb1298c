package io.rdmachannel.channel.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.IntConsumer;

import org.agrona.BufferUtil;

/**
 * The registry behind {@link io.rdmachannel.channel.RegisteredBuffers}: the live allocations, looked up by address
 * without a lock or an allocation, and listeners told when one is released so cached registrations are closed.
 */
public final class BufferRegistry {
    /** Registrations are aligned to pages, as hardware prefers. */
    private static final long ALIGNMENT = 4096;

    private static final Object LOCK = new Object();
    /** Live allocations sorted by address, replaced whole on every change so lookups need no lock. */
    private static volatile Allocation[] allocations = new Allocation[0];
    private static final CopyOnWriteArrayList<IntConsumer> RELEASE_LISTENERS = new CopyOnWriteArrayList<>();
    private static int[] freeIds = new int[0];
    private static int freeIdCount;
    private static int nextId;

    private BufferRegistry() {
    }

    /**
     * One allocation: its memory and the id under which connections cache its registrations.
     *
     * @param id      small, unique among live allocations (reused after release).
     * @param address the first byte.
     * @param length  the length in bytes.
     * @param arena   owns the memory.
     */
    public record Allocation(int id, long address, long length, Arena arena) {
        /**
         * The allocation's memory as a segment.
         *
         * @return the segment; not usable after the release.
         */
        public MemorySegment segment() {
            return MemorySegment.ofAddress(address).reinterpret(length);
        }
    }

    /**
     * Allocate a zeroed, page-aligned direct buffer and record it.
     *
     * @param capacity the capacity in bytes, at least 1.
     * @return the buffer: big-endian like every new ByteBuffer, position 0, limit {@code capacity}.
     * @throws IllegalArgumentException if {@code capacity} is below 1.
     */
    public static ByteBuffer allocate(final int capacity) {
        if (capacity < 1) {
            throw new IllegalArgumentException("capacity must be at least 1: capacity=" + capacity);
        }
        final Arena arena = Arena.ofShared();
        final MemorySegment memory = arena.allocate(capacity, ALIGNMENT);
        synchronized (LOCK) {
            final int id = freeIdCount > 0 ? freeIds[--freeIdCount] : nextId++;
            final Allocation allocation = new Allocation(id, memory.address(), capacity, arena);
            final Allocation[] current = allocations;
            final Allocation[] larger = Arrays.copyOf(current, current.length + 1);
            int i = current.length;
            while (i > 0 && Long.compareUnsigned(larger[i - 1].address(), allocation.address()) > 0) {
                larger[i] = larger[i - 1];
                i--;
            }
            larger[i] = allocation;
            allocations = larger;
        }
        return memory.asByteBuffer();
    }

    /**
     * Deregister and free a buffer from {@link #allocate(int)}: every connection's registration of it is closed, then
     * its memory is freed.
     *
     * @param buffer the buffer (or a view of it: the whole allocation it lies in is released).
     * @throws IllegalArgumentException if the buffer is not a live registered buffer.
     */
    public static void release(final ByteBuffer buffer) {
        Objects.requireNonNull(buffer, "buffer");
        final Allocation allocation = buffer.isDirect() ? find(BufferUtil.address(buffer), 0) : null;
        if (allocation == null) {
            throw new IllegalArgumentException("not a live buffer of RegisteredBuffers.allocate: " + buffer);
        }
        synchronized (LOCK) {
            final Allocation[] current = allocations;
            final Allocation[] smaller = new Allocation[current.length - 1];
            int j = 0;
            for (final Allocation each : current) {
                if (each != allocation) {
                    smaller[j++] = each;
                }
            }
            allocations = smaller;
            for (final IntConsumer listener : RELEASE_LISTENERS) {
                listener.accept(allocation.id());
            }
            if (freeIdCount == freeIds.length) {
                freeIds = Arrays.copyOf(freeIds, Math.max(16, freeIds.length * 2));
            }
            freeIds[freeIdCount++] = allocation.id();
        }
        allocation.arena().close();
    }

    /**
     * Whether the bytes {@code [position, limit)} of a buffer lie in a live registered buffer.
     *
     * @param buffer any buffer.
     * @return true if writes from it go without the copy.
     */
    public static boolean isRegistered(final ByteBuffer buffer) {
        return buffer.isDirect()
            && find(BufferUtil.address(buffer) + buffer.position(), buffer.remaining()) != null;
    }

    /**
     * The live allocation holding {@code [address, address + length)}, or null. Allocates nothing.
     *
     * @param address the first byte.
     * @param length  the number of bytes, 0 or more.
     * @return the allocation or null.
     */
    public static Allocation find(final long address, final long length) {
        final Allocation[] current = allocations;
        int low = 0;
        int high = current.length - 1;
        while (low <= high) {
            final int middle = (low + high) >>> 1;
            final Allocation candidate = current[middle];
            if (Long.compareUnsigned(candidate.address(), address) > 0) {
                high = middle - 1;
            } else if (Long.compareUnsigned(address - candidate.address(), candidate.length()) >= 0) {
                low = middle + 1;
            } else {
                return Long.compareUnsigned(address - candidate.address() + length, candidate.length()) <= 0
                    ? candidate : null;
            }
        }
        return null;
    }

    /**
     * Be told the id of every allocation released from now on, under the registry's lock and before its memory is
     * freed, so cached registrations of it can be closed.
     *
     * @param listener receives the released allocation's id.
     */
    public static void onRelease(final IntConsumer listener) {
        RELEASE_LISTENERS.add(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Stop telling {@code listener}.
     *
     * @param listener a listener given to {@link #onRelease(IntConsumer)}.
     */
    public static void removeReleaseListener(final IntConsumer listener) {
        RELEASE_LISTENERS.remove(listener);
    }
}
