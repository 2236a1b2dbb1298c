package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.util.Objects;

/**
 * A send work request of the shared-memory provider: plain fields and arrays allocated once.
 */
final class ShmSendWorkRequest implements SendWorkRequest {
    final ShmQueuePair owner;
    long id;
    WorkRequestOpcode opcode = WorkRequestOpcode.SEND;
    int flags;
    int immediate;
    long remoteAddress;
    int remoteKey;
    int remoteSharedReceiveQueue;
    int sgeCount;
    final long[] sgeAddresses;
    final int[] sgeLengths;
    final int[] sgeLocalKeys;

    ShmSendWorkRequest(final ShmQueuePair owner, final int maxSge) {
        this.owner = owner;
        this.sgeAddresses = new long[maxSge];
        this.sgeLengths = new int[maxSge];
        this.sgeLocalKeys = new int[maxSge];
    }

    /**
     * Copy every field of another request of the same capacity (used to queue a request).
     */
    void copyFrom(final ShmSendWorkRequest other) {
        id = other.id;
        opcode = other.opcode;
        flags = other.flags;
        immediate = other.immediate;
        remoteAddress = other.remoteAddress;
        remoteKey = other.remoteKey;
        remoteSharedReceiveQueue = other.remoteSharedReceiveQueue;
        sgeCount = other.sgeCount;
        System.arraycopy(other.sgeAddresses, 0, sgeAddresses, 0, sgeCount);
        System.arraycopy(other.sgeLengths, 0, sgeLengths, 0, sgeCount);
        System.arraycopy(other.sgeLocalKeys, 0, sgeLocalKeys, 0, sgeCount);
    }

    @Override
    public SendWorkRequest reset() {
        id = 0;
        opcode = WorkRequestOpcode.SEND;
        flags = 0;
        immediate = 0;
        remoteAddress = 0;
        remoteKey = 0;
        remoteSharedReceiveQueue = 0;
        sgeCount = 0;
        return this;
    }

    @Override
    public SendWorkRequest id(final long id) {
        this.id = id;
        return this;
    }

    @Override
    public SendWorkRequest opcode(final WorkRequestOpcode opcode) {
        this.opcode = Objects.requireNonNull(opcode, "opcode");
        return this;
    }

    @Override
    public SendWorkRequest flags(final int flags) {
        this.flags = flags;
        return this;
    }

    @Override
    public SendWorkRequest immediate(final int immediate) {
        this.immediate = immediate;
        return this;
    }

    @Override
    public SendWorkRequest remote(final long address, final int remoteKey) {
        this.remoteAddress = address;
        this.remoteKey = remoteKey;
        return this;
    }

    @Override
    public SendWorkRequest remoteSharedReceiveQueue(final int number) {
        this.remoteSharedReceiveQueue = number;
        return this;
    }

    @Override
    public SendWorkRequest sgeCount(final int count) {
        if (count < 0 || count > sgeAddresses.length) {
            throw new IllegalArgumentException("sgeCount=" + count + " is outside [0, " + sgeAddresses.length + "]");
        }
        this.sgeCount = count;
        return this;
    }

    @Override
    public SendWorkRequest sge(final int index, final long address, final int length, final int localKey) {
        Objects.checkIndex(index, sgeAddresses.length);
        sgeAddresses[index] = address;
        sgeLengths[index] = length;
        sgeLocalKeys[index] = localKey;
        if (index >= sgeCount) {
            sgeCount = index + 1;
        }
        return this;
    }

    @Override
    public long id() {
        return id;
    }

    @Override
    public WorkRequestOpcode opcode() {
        return opcode;
    }

    @Override
    public int flags() {
        return flags;
    }

    @Override
    public int immediate() {
        return immediate;
    }

    @Override
    public long remoteAddress() {
        return remoteAddress;
    }

    @Override
    public int remoteKey() {
        return remoteKey;
    }

    @Override
    public int remoteSharedReceiveQueue() {
        return remoteSharedReceiveQueue;
    }

    @Override
    public int sgeCount() {
        return sgeCount;
    }

    @Override
    public int maxSge() {
        return sgeAddresses.length;
    }

    @Override
    public long sgeAddress(final int index) {
        return sgeAddresses[Objects.checkIndex(index, sgeCount)];
    }

    @Override
    public int sgeLength(final int index) {
        return sgeLengths[Objects.checkIndex(index, sgeCount)];
    }

    @Override
    public int sgeLocalKey(final int index) {
        return sgeLocalKeys[Objects.checkIndex(index, sgeCount)];
    }

    @Override
    public String toString() {
        return "SendWorkRequest{id=" + id + ", opcode=" + opcode + ", flags=" + flags + ", sgeCount=" + sgeCount
            + ", remoteAddress=0x" + Long.toHexString(remoteAddress) + ", remoteKey=0x"
            + Integer.toHexString(remoteKey) + '}';
    }
}
