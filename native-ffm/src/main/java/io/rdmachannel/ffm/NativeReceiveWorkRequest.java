package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.RECV_WR_NUM_SGE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.RECV_WR_SG_LIST;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.RECV_WR_SIZE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.RECV_WR_WR_ID;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_ADDR;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_LENGTH;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_LKEY;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A receive request written straight into a pre-built {@code struct ibv_recv_wr} with its {@code ibv_sge} array and
 * a {@code bad_wr} cell, in native memory owned by its queue pair or shared receive queue.
 */
final class NativeReceiveWorkRequest implements ReceiveWorkRequest {
    private final Object owner;
    private final int maxSge;
    private final MemorySegment memory;
    private final MemorySegment wrPointer;
    private final MemorySegment badWrPointer;
    private int sgeCount;

    NativeReceiveWorkRequest(Object owner, int maxSge, Arena arena) {
        this.owner = owner;
        this.maxSge = maxSge;
        long badWr = RECV_WR_SIZE + SGE_SIZE * maxSge;
        this.memory = arena.allocate(badWr + ADDRESS.byteSize(), 8);
        this.wrPointer = MemorySegment.ofAddress(memory.address());
        this.badWrPointer = MemorySegment.ofAddress(memory.address() + badWr);
        reset();
    }

    Object owner() {
        return owner;
    }

    MemorySegment wrPointer() {
        return wrPointer;
    }

    MemorySegment badWrPointer() {
        return badWrPointer;
    }

    @Override
    public ReceiveWorkRequest reset() {
        memory.fill((byte) 0);
        memory.set(JAVA_LONG, RECV_WR_SG_LIST, memory.address() + RECV_WR_SIZE);
        sgeCount = 0;
        return this;
    }

    @Override
    public ReceiveWorkRequest id(long id) {
        memory.set(JAVA_LONG, RECV_WR_WR_ID, id);
        return this;
    }

    @Override
    public ReceiveWorkRequest sgeCount(int count) {
        if (count < 0 || count > maxSge) {
            throw new IllegalArgumentException("sgeCount=" + count + " is outside [0, " + maxSge + "]");
        }
        sgeCount = count;
        memory.set(JAVA_INT, RECV_WR_NUM_SGE, count);
        return this;
    }

    @Override
    public ReceiveWorkRequest sge(int index, long address, int length, int localKey) {
        if (index < 0 || index >= maxSge) {
            throw new IndexOutOfBoundsException("sge index " + index + " is outside [0, " + maxSge + ")");
        }
        long entry = RECV_WR_SIZE + index * SGE_SIZE;
        memory.set(JAVA_LONG, entry + SGE_ADDR, address);
        memory.set(JAVA_INT, entry + SGE_LENGTH, length);
        memory.set(JAVA_INT, entry + SGE_LKEY, localKey);
        if (index >= sgeCount) {
            sgeCount(index + 1);
        }
        return this;
    }

    @Override
    public long id() {
        return memory.get(JAVA_LONG, RECV_WR_WR_ID);
    }

    @Override
    public int sgeCount() {
        return sgeCount;
    }

    @Override
    public int maxSge() {
        return maxSge;
    }

    @Override
    public long sgeAddress(int index) {
        return memory.get(JAVA_LONG, RECV_WR_SIZE + index * SGE_SIZE + SGE_ADDR);
    }

    @Override
    public int sgeLength(int index) {
        return memory.get(JAVA_INT, RECV_WR_SIZE + index * SGE_SIZE + SGE_LENGTH);
    }

    @Override
    public int sgeLocalKey(int index) {
        return memory.get(JAVA_INT, RECV_WR_SIZE + index * SGE_SIZE + SGE_LKEY);
    }

    /** Check the entries before a post: lengths are unsigned in C, so a negative one is refused here. */
    void checkEntries(int maxReceiveSge) {
        if (sgeCount > maxReceiveSge) {
            throw new IllegalArgumentException("sgeCount=" + sgeCount + " exceeds maxReceiveSge=" + maxReceiveSge);
        }
        for (int i = 0; i < sgeCount; i++) {
            if (sgeLength(i) < 0) {
                throw new IllegalArgumentException("sge " + i + " has a negative length: length=" + sgeLength(i));
            }
        }
    }

    @Override
    public String toString() {
        return "NativeReceiveWorkRequest{id=" + id() + ", sgeCount=" + sgeCount + '}';
    }
}
