package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_ADDR;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_LENGTH;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_LKEY;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_SIZE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.MemorySegment;

/**
 * The {@code ibv_sge} array of a pre-built work request, and the request's {@code num_sge} field: shared by the send
 * and receive work requests, which differ only in where these live.
 */
final class SgeArray {
    private final MemorySegment memory;
    private final long base;
    private final long countOffset;
    private final int capacity;
    private int count;

    /**
     * @param memory the work request's memory.
     * @param base where the SGE array starts in it.
     * @param countOffset where the request's {@code num_sge} is.
     * @param capacity the most entries.
     */
    SgeArray(MemorySegment memory, long base, long countOffset, int capacity) {
        this.memory = memory;
        this.base = base;
        this.countOffset = countOffset;
        this.capacity = capacity;
    }

    /** Forget the entries in use (the owner zeroed the memory). */
    void clear() {
        count = 0;
    }

    int capacity() {
        return capacity;
    }

    int count() {
        return count;
    }

    void count(int newCount) {
        if (newCount < 0 || newCount > capacity) {
            throw new IllegalArgumentException("sgeCount=" + newCount + " is outside [0, " + capacity + "]");
        }
        count = newCount;
        memory.set(JAVA_INT, countOffset, newCount);
    }

    /** Write one entry; raises the count to include it. */
    void set(int index, long address, int length, int localKey) {
        if (index < 0 || index >= capacity) {
            throw new IndexOutOfBoundsException("sge index " + index + " is outside [0, " + capacity + ")");
        }
        long entry = base + index * SGE_SIZE;
        memory.set(JAVA_LONG, entry + SGE_ADDR, address);
        memory.set(JAVA_INT, entry + SGE_LENGTH, length);
        memory.set(JAVA_INT, entry + SGE_LKEY, localKey);
        if (index >= count) {
            count(index + 1);
        }
    }

    long address(int index) {
        return memory.get(JAVA_LONG, base + index * SGE_SIZE + SGE_ADDR);
    }

    int length(int index) {
        return memory.get(JAVA_INT, base + index * SGE_SIZE + SGE_LENGTH);
    }

    int localKey(int index) {
        return memory.get(JAVA_INT, base + index * SGE_SIZE + SGE_LKEY);
    }
}
