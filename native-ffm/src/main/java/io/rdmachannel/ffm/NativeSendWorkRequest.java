package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_IMM_DATA;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_NUM_SGE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_OPCODE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_RDMA_REMOTE_ADDR;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_RDMA_RKEY;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_SEND_FLAGS;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_SG_LIST;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_SIZE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_WR_ID;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_XRC_REMOTE_SRQN;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SGE_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A send request written straight into a pre-built {@code struct ibv_send_wr} with its {@code ibv_sge} array and a
 * {@code bad_wr} cell, in native memory owned by the queue pair: a post passes the pointers, nothing is copied or
 * allocated. The opcode and flag codes are the ibverbs values; the immediate is stored big-endian.
 */
final class NativeSendWorkRequest implements SendWorkRequest {
    private static final ValueLayout.OfInt BIG_ENDIAN_INT = JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);

    private final Object owner;
    private final MemorySegment memory;
    private final SgeArray sges;
    private final MemorySegment wrPointer;
    private final MemorySegment badWrPointer;
    private WorkRequestOpcode opcode;

    NativeSendWorkRequest(Object owner, int maxSge, Arena arena) {
        this.owner = owner;
        long badWr = SEND_WR_SIZE + SGE_SIZE * maxSge;
        this.memory = arena.allocate(badWr + ADDRESS.byteSize(), 8);
        this.sges = new SgeArray(memory, SEND_WR_SIZE, SEND_WR_NUM_SGE, maxSge);
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
    public SendWorkRequest reset() {
        memory.fill((byte) 0);
        memory.set(JAVA_LONG, SEND_WR_SG_LIST, memory.address() + SEND_WR_SIZE);
        opcode(WorkRequestOpcode.SEND);
        sges.clear();
        return this;
    }

    @Override
    public SendWorkRequest id(long id) {
        memory.set(JAVA_LONG, SEND_WR_WR_ID, id);
        return this;
    }

    @Override
    public SendWorkRequest opcode(WorkRequestOpcode opcode) {
        this.opcode = opcode;
        memory.set(JAVA_INT, SEND_WR_OPCODE, opcode.code());
        return this;
    }

    @Override
    public SendWorkRequest flags(int flags) {
        memory.set(JAVA_INT, SEND_WR_SEND_FLAGS, flags);
        return this;
    }

    @Override
    public SendWorkRequest immediate(int immediate) {
        memory.set(BIG_ENDIAN_INT, SEND_WR_IMM_DATA, immediate);
        return this;
    }

    @Override
    public SendWorkRequest remote(long address, int remoteKey) {
        memory.set(JAVA_LONG, SEND_WR_RDMA_REMOTE_ADDR, address);
        memory.set(JAVA_INT, SEND_WR_RDMA_RKEY, remoteKey);
        return this;
    }

    @Override
    public SendWorkRequest remoteSharedReceiveQueue(int number) {
        // qp_type.xrc.remote_srqn: read by the driver for XRC_SEND queue pairs only
        memory.set(JAVA_INT, SEND_WR_XRC_REMOTE_SRQN, number);
        return this;
    }

    @Override
    public SendWorkRequest sgeCount(int count) {
        sges.count(count);
        return this;
    }

    @Override
    public SendWorkRequest sge(int index, long address, int length, int localKey) {
        sges.set(index, address, length, localKey);
        return this;
    }

    @Override
    public long id() {
        return memory.get(JAVA_LONG, SEND_WR_WR_ID);
    }

    @Override
    public WorkRequestOpcode opcode() {
        return opcode;
    }

    @Override
    public int flags() {
        return memory.get(JAVA_INT, SEND_WR_SEND_FLAGS);
    }

    @Override
    public int immediate() {
        return memory.get(BIG_ENDIAN_INT, SEND_WR_IMM_DATA);
    }

    @Override
    public long remoteAddress() {
        return memory.get(JAVA_LONG, SEND_WR_RDMA_REMOTE_ADDR);
    }

    @Override
    public int remoteKey() {
        return memory.get(JAVA_INT, SEND_WR_RDMA_RKEY);
    }

    @Override
    public int remoteSharedReceiveQueue() {
        return memory.get(JAVA_INT, SEND_WR_XRC_REMOTE_SRQN);
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

    @Override
    public String toString() {
        return "NativeSendWorkRequest{id=" + id() + ", opcode=" + opcode + ", flags=0x" + Integer.toHexString(flags())
            + ", sgeCount=" + sges.count() + ", remote=0x" + Long.toHexString(remoteAddress()) + "/0x"
            + Integer.toHexString(remoteKey()) + '}';
    }
}
