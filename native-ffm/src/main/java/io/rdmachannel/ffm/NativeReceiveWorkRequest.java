package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.RECV_WR_NUM_SGE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.RECV_WR_SG_LIST;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.RECV_WR_SIZE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.RECV_WR_WR_ID;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
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
    private final MemorySegment memory;
    private final SgeArray sges;
    private final MemorySegment wrPointer;
    private final MemorySegment badWrPointer;

    NativeReceiveWorkRequest(Object owner, int maxSge, Arena arena) {
        this.owner = owner;
        long badWr = RECV_WR_SIZE + SGE_SIZE * maxSge;
        this.memory = arena.allocate(badWr + ADDRESS.byteSize(), 8);
        this.sges = new SgeArray(memory, RECV_WR_SIZE, RECV_WR_NUM_SGE, maxSge);
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
        sges.clear();
        return this;
    }

    @Override
    public ReceiveWorkRequest id(long id) {
        memory.set(JAVA_LONG, RECV_WR_WR_ID, id);
        return this;
    }

    @Override
    public ReceiveWorkRequest sgeCount(int count) {
        sges.count(count);
        return this;
    }

    @Override
    public ReceiveWorkRequest sge(int index, long address, int length, int localKey) {
        sges.set(index, address, length, localKey);
        return this;
    }

    @Override
    public long id() {
        return memory.get(JAVA_LONG, RECV_WR_WR_ID);
    }

    @Override
    public int sgeCount() {
        return sges.count();
    }

    @Override
    public int maxSge() {
        return sges.capacity();
    }

    @Override
    public long sgeAddress(int index) {
        return sges.address(index);
    }

    @Override
    public int sgeLength(int index) {
        return sges.length(index);
    }

    @Override
    public int sgeLocalKey(int index) {
        return sges.localKey(index);
    }

    /** Check the entries before a post: lengths are unsigned in C, so a negative one is refused here. */
    void checkEntries(int maxReceiveSge) {
        if (sges.count() > maxReceiveSge) {
            throw new IllegalArgumentException("sgeCount=" + sges.count() + " exceeds maxReceiveSge=" + maxReceiveSge);
        }
        for (int i = 0; i < sges.count(); i++) {
            if (sgeLength(i) < 0) {
                throw new IllegalArgumentException("sge " + i + " has a negative length: length=" + sgeLength(i));
            }
        }
    }

    @Override
    public String toString() {
        return "NativeReceiveWorkRequest{id=" + id() + ", sgeCount=" + sges.count() + '}';
    }
}
