package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.SharedReceiveQueue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A protection domain of the shared-memory provider. Memory it allocates lives in a shared file that peers map;
 * memory it registers for the caller is for local access only.
 */
final class ShmProtectionDomain implements ProtectionDomain {
    private final ShmDevice device;
    private final int handle;
    private final AtomicInteger openChildren = new AtomicInteger();
    private volatile boolean closed;

    ShmProtectionDomain(final ShmDevice device, final int handle) {
        this.device = device;
        this.handle = handle;
    }

    int handle() {
        return handle;
    }

    ShmDevice shmDevice() {
        return device;
    }

    @Override
    public RdmaDevice device() {
        return device;
    }

    @Override
    public MemoryRegion allocate(final long length, final int accessFlags) throws IOException {
        ensureOpen();
        AccessFlags.check(accessFlags);
        if (length < 1 || length > device.attributes().maxMemoryRegionSize()) {
            throw new IllegalArgumentException("length=" + length + " is outside [1, "
                + device.attributes().maxMemoryRegionSize() + "]");
        }
        final SharedFile file = device.filePool().acquire(length);
        // the caller's view has its own scope: closing the region makes it unusable although the file lives on
        final Arena view = Arena.ofShared();
        try {
            final MemorySegment segment = file.segment().asSlice(0, length).reinterpret(view, null);
            final ShmMemoryRegion region = device.register(this, segment, file, view, accessFlags);
            device.publish(region);
            openChildren.incrementAndGet();
            device.resourceCounter().openedMemoryRegion(length);
            return region;
        } catch (final RuntimeException ex) {
            view.close();
            device.filePool().release(file);
            throw ex;
        }
    }

    @Override
    public MemoryRegion register(final MemorySegment segment, final int accessFlags) {
        ensureOpen();
        AccessFlags.check(accessFlags);
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native memory can be registered; this segment is on the heap");
        }
        if ((accessFlags & AccessFlags.REMOTE) != 0) {
            throw new IllegalArgumentException("the shm provider gives remote access only to memory from "
                + "ProtectionDomain.allocate(..): accessFlags=" + AccessFlags.toString(accessFlags));
        }
        final ShmMemoryRegion region = device.register(this, segment, null, null, accessFlags);
        openChildren.incrementAndGet();
        // process memory registered for local access: nothing is held for it (a stream registers all of it at once)
        device.resourceCounter().openedMemoryRegion(0);
        return region;
    }

    @Override
    public QueuePair createQueuePair(final QueuePairInitAttributes attributes) throws IOException {
        ensureOpen();
        attributes.check(device.attributes());
        final ShmQueuePair queuePair = ShmQueuePair.create(this, attributes);
        openChildren.incrementAndGet();
        device.resourceCounter().opened(ResourceCounter.Kind.QUEUE_PAIR);
        return queuePair;
    }

    @Override
    public SharedReceiveQueue createSharedReceiveQueue(final int maxWorkRequests, final int maxSge)
        throws IOException {
        ensureOpen();
        if (maxWorkRequests < 1 || maxWorkRequests > device.attributes().maxSharedReceiveQueueWorkRequests()) {
            throw new IllegalArgumentException("maxWorkRequests=" + maxWorkRequests + " is outside [1, "
                + device.attributes().maxSharedReceiveQueueWorkRequests() + "]");
        }
        if (maxSge < 1 || maxSge > device.attributes().maxSge()) {
            throw new IllegalArgumentException("maxSge=" + maxSge + " is outside [1, "
                + device.attributes().maxSge() + "]");
        }
        final ShmSharedReceiveQueue queue = ShmSharedReceiveQueue.create(this, maxWorkRequests, maxSge);
        openChildren.incrementAndGet();
        device.resourceCounter().opened(ResourceCounter.Kind.SHARED_RECEIVE_QUEUE);
        return queue;
    }

    void childClosed(final ResourceCounter.Kind kind) {
        openChildren.decrementAndGet();
        device.resourceCounter().closed(kind);
    }

    void memoryRegionClosed(final long length) {
        openChildren.decrementAndGet();
        device.resourceCounter().closedMemoryRegion(length);
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("protection domain " + handle + " is closed");
        }
        device.ensureOpen();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (openChildren.get() != 0) {
            throw new IllegalStateException("protection domain " + handle + " still has " + openChildren.get()
                + " open memory regions, queue pairs or shared receive queues: close them first");
        }
        closed = true;
        device.childClosed(ResourceCounter.Kind.PROTECTION_DOMAIN);
    }

    @Override
    public String toString() {
        return "ShmProtectionDomain{handle=" + handle + ", closed=" + closed + '}';
    }
}
