package io.rdmachannel.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.ffm.layout.IbvResourceLayouts;
import io.rdmachannel.ffm.verbs.IbvCalls;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An {@code ibv_pd}. Owns the regions, queue pairs and shared receive queues created from it; they must be closed
 * before it.
 */
final class NativeProtectionDomain implements ProtectionDomain {
    private final NativeDevice device;
    private final MemorySegment pd;
    private final int handle;
    private final AtomicInteger openChildren = new AtomicInteger();
    private volatile boolean closed;

    NativeProtectionDomain(NativeDevice device, MemorySegment pd) {
        this.device = device;
        this.pd = pd.reinterpret(IbvResourceLayouts.IBV_PD.size());
        this.handle = this.pd.get(JAVA_INT, IbvResourceLayouts.IBV_PD.offset("handle"));
    }

    @Override
    public RdmaDevice device() {
        return device;
    }

    NativeDevice nativeDevice() {
        return device;
    }

    MemorySegment pd() {
        return pd;
    }

    @Override
    public MemoryRegion allocate(long length, int accessFlags) throws IOException {
        ensureOpen();
        checkLength(length);
        AccessFlags.check(accessFlags);
        MemoryRegion region = NativeMemoryRegion.allocate(this, length, accessFlags);
        openChildren.incrementAndGet();
        device.resourceCounter().openedMemoryRegion(length);
        return region;
    }

    @Override
    public MemoryRegion register(MemorySegment segment, int accessFlags) throws IOException {
        ensureOpen();
        if (!segment.isNative()) {
            throw new IllegalArgumentException("only native memory can be registered; this segment is on the heap");
        }
        checkLength(segment.byteSize());
        AccessFlags.check(accessFlags);
        MemoryRegion region = NativeMemoryRegion.register(this, segment, accessFlags);
        openChildren.incrementAndGet();
        device.resourceCounter().openedMemoryRegion(segment.byteSize());
        return region;
    }

    private void checkLength(long length) {
        long max = device.attributes().maxMemoryRegionSize();
        if (length < 1 || Long.compareUnsigned(length, max) > 0) {
            throw new IllegalArgumentException("length=" + length + " is outside [1, " + Long.toUnsignedString(max)
                + "]");
        }
    }

    @Override
    public QueuePair createQueuePair(QueuePairInitAttributes attributes) throws IOException {
        ensureOpen();
        if (attributes.type() != QueuePairType.RC) {
            throw new UnsupportedOperationException("the native provider offers RC queue pairs only: type="
                + attributes.type());
        }
        attributes.check(device.attributes());
        QueuePair queuePair = NativeQueuePair.create(this, attributes);
        openChildren.incrementAndGet();
        device.resourceCounter().opened(ResourceCounter.Kind.QUEUE_PAIR);
        return queuePair;
    }

    /**
     * An RC queue pair created and destroyed another way, such as on an {@code rdma_cm_id}.
     */
    NativeQueuePair createQueuePair(QueuePairInitAttributes attributes, NativeQueuePair.Creator creator,
        NativeQueuePair.Destroyer destroyer, QueuePairState initialState) throws IOException {
        ensureOpen();
        if (attributes.type() != QueuePairType.RC) {
            throw new UnsupportedOperationException("the native provider offers RC queue pairs only: type="
                + attributes.type());
        }
        attributes.check(device.attributes());
        NativeQueuePair queuePair = NativeQueuePair.create(this, attributes, creator, destroyer, initialState);
        openChildren.incrementAndGet();
        device.resourceCounter().opened(ResourceCounter.Kind.QUEUE_PAIR);
        return queuePair;
    }

    @Override
    public SharedReceiveQueue createSharedReceiveQueue(int maxWorkRequests, int maxSge) throws IOException {
        ensureOpen();
        if (!device.attributes().has(DeviceCapability.SHARED_RECEIVE_QUEUE)) {
            throw new UnsupportedOperationException("device " + device.name() + " has no shared receive queues");
        }
        int maxDepth = device.attributes().maxSharedReceiveQueueWorkRequests();
        if (maxWorkRequests < 1 || maxWorkRequests > maxDepth) {
            throw new IllegalArgumentException("maxWorkRequests=" + maxWorkRequests + " is outside [1, " + maxDepth
                + "]");
        }
        if (maxSge < 1 || maxSge > device.maxSharedReceiveQueueSge()) {
            throw new IllegalArgumentException("maxSge=" + maxSge + " is outside [1, "
                + device.maxSharedReceiveQueueSge() + "]");
        }
        NativeSharedReceiveQueue queue = NativeSharedReceiveQueue.create(this, maxWorkRequests, maxSge);
        device.track(queue);
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
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (openChildren.get() != 0) {
            throw new IllegalStateException("protection domain " + handle + " still has " + openChildren.get()
                + " open memory regions, queue pairs or shared receive queues: close them first");
        }
        try {
            IbvCalls.deallocPd(pd);
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot free protection domain " + handle + ": " + e.getMessage(), e);
        }
        closed = true;
        device.childClosed(ResourceCounter.Kind.PROTECTION_DOMAIN);
    }

    @Override
    public String toString() {
        return "NativeProtectionDomain{handle=" + handle + ", device=" + device.name() + ", closed=" + closed + '}';
    }
}
