package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.ReceiveWorkRequest;

import java.util.Objects;

/**
 * A receive work request of the shared-memory provider: plain fields and arrays allocated once.
 */
final class ShmReceiveWorkRequest implements ReceiveWorkRequest {
    final Object owner;
    long id;
    int sgeCount;
    final long[] sgeAddresses;
    final int[] sgeLengths;
    final int[] sgeLocalKeys;

    ShmReceiveWorkRequest(final Object owner, final int maxSge) {
        this.owner = owner;
        this.sgeAddresses = new long[maxSge];
        this.sgeLengths = new int[maxSge];
        this.sgeLocalKeys = new int[maxSge];
    }

    @Override
    public ReceiveWorkRequest reset() {
        id = 0;
        sgeCount = 0;
        return this;
    }

    @Override
    public ReceiveWorkRequest id(final long id) {
        this.id = id;
        return this;
    }

    @Override
    public ReceiveWorkRequest sgeCount(final int count) {
        if (count < 0 || count > sgeAddresses.length) {
            throw new IllegalArgumentException("sgeCount=" + count + " is outside [0, " + sgeAddresses.length + "]");
        }
        this.sgeCount = count;
        return this;
    }

    @Override
    public ReceiveWorkRequest sge(final int index, final long address, final int length, final int localKey) {
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
        return "ReceiveWorkRequest{id=" + id + ", sgeCount=" + sgeCount + '}';
    }
}
