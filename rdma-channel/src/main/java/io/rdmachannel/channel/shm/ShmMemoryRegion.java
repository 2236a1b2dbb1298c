package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * A memory region of the shared-memory provider: an allocated region owns a shared file, a registered one only
 * refers to the caller's memory.
 */
final class ShmMemoryRegion implements MemoryRegion {
    private final ShmProtectionDomain domain;
    private final int key;
    private final int accessFlags;
    private final MemorySegment segment;
    private final SharedFile file;
    private final Arena view;
    private volatile boolean closed;

    ShmMemoryRegion(final ShmProtectionDomain domain, final int key, final int accessFlags,
        final MemorySegment segment, final SharedFile file, final Arena view) {
        this.domain = domain;
        this.key = key;
        this.accessFlags = accessFlags;
        this.segment = segment;
        this.file = file;
        this.view = view;
    }

    @Override
    public long address() {
        return segment.address();
    }

    @Override
    public long length() {
        return segment.byteSize();
    }

    @Override
    public int localKey() {
        return key;
    }

    @Override
    public int remoteKey() {
        return key;
    }

    @Override
    public int accessFlags() {
        return accessFlags;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public ProtectionDomain protectionDomain() {
        return domain;
    }

    ShmProtectionDomain shmDomain() {
        return domain;
    }

    /**
     * Whether peers can reach this memory (it lives in a shared file).
     */
    boolean isShared() {
        return file != null;
    }

    /**
     * The pooled file of an allocated region, 0 for registered memory.
     */
    int fileId() {
        return file == null ? 0 : file.id();
    }

    boolean isClosed() {
        return closed;
    }

    /**
     * The offset of {@code [address, address + length)} in the segment, or -1 if the range is outside.
     */
    long offsetOf(final long address, final long length) {
        final long offset = address - segment.address();
        return offset >= 0 && length >= 0 && offset <= segment.byteSize() && length <= segment.byteSize() - offset
            ? offset : -1;
    }

    @Override
    public void close() {
        close(ShmDevice.DRAIN_TIMEOUT_NANOS);
    }

    /**
     * Close without waiting for a peer access under way (one whose process died never ends): if one is, the memory
     * is not reused, as after a close that gave up waiting.
     */
    @Override
    public void abandon() {
        close(0);
    }

    private void close(final long drainTimeoutNanos) {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        final boolean drained = domain.shmDevice().deregister(this, drainTimeoutNanos);
        if (view != null) {
            view.close();
        }
        if (file != null) {
            if (drained) {
                domain.shmDevice().filePool().release(file);
            } else {
                // a peer access never ended (its process may have died in it): this memory is never reused
                file.close();
            }
        }
        domain.memoryRegionClosed(file == null ? 0 : length());
    }

    @Override
    public String toString() {
        return "ShmMemoryRegion{key=0x" + Integer.toHexString(key) + ", address=0x" + Long.toHexString(address())
            + ", length=" + length() + ", access=" + AccessFlags.toString(accessFlags) + ", shared=" + isShared()
            + ", closed=" + closed + '}';
    }
}
