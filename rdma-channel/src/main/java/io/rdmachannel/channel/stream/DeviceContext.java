package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.internal.BufferRegistry;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.XrcDomain;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntConsumer;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the stream engine keeps per device: one protection domain for its connections, one readiness source their
 * completion queues signal, and a platform poller thread that waits on it and tells the connections. Blocked
 * application threads (platform or virtual) park in Java and are woken from here, so none of them ever blocks in a
 * native call. A readiness source that can dispatch on the signalling thread (the shared-memory provider) needs no
 * poller: the connections are told directly, one thread hop less for a parked reader.
 */
final class DeviceContext implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceContext.class);

    private final RdmaDevice device;
    private final ProtectionDomain protectionDomain;
    private final ReadinessSource readinessSource;
    private final MemoryRegion processMemory;
    private final ConnectionMemoryPool memoryPool;
    private final Thread poller;
    private final ReadinessSource.ReadyHandler dispatch = this::dispatch;
    private volatile RsocketConnection[] connections = new RsocketConnection[64];
    private int[] freeTokens = new int[0];
    private int freeCount;
    private int nextToken;
    private volatile boolean closed;
    /** Registrations of {@link BufferRegistry} allocations on this protection domain, by allocation id. */
    private volatile MemoryRegion[] registeredBuffers = new MemoryRegion[0];
    private final IntConsumer releaseListener = this::forgetRegisteredBuffer;
    /** Receives posted by connections with receive queues of their own (not SRQ mode); for the management view. */
    private final AtomicLong ownPostedReceives = new AtomicLong();
    /** The shared receive queue of SRQ mode, made for the first connection in that mode. */
    private volatile SharedReceivePool sharedReceivePool;
    private XrcDomain xrcDomain;
    private long[] xrcDomainIdentity;

    DeviceContext(final RdmaDevice device, final int memoryPoolSize, final long memoryPoolIdleMillis,
        final ConnectionMemoryPool.Scheduler timer) throws IOException {
        this.device = device;
        this.protectionDomain = device.allocateProtectionDomain();
        try {
            this.readinessSource = device.createReadinessSource();
        } catch (final IOException | RuntimeException ex) {
            protectionDomain.close();
            throw ex;
        }
        try {
            // local read access to all of the process: a send source, never reachable by a peer
            this.processMemory = device.attributes().has(DeviceCapability.LOCAL_ACCESS_TO_ANY_MEMORY)
                ? protectionDomain.register(MemorySegment.NULL.reinterpret(Long.MAX_VALUE), 0) : null;
        } catch (final IOException | RuntimeException ex) {
            readinessSource.close();
            protectionDomain.close();
            throw ex;
        }
        this.memoryPool = new ConnectionMemoryPool(protectionDomain, memoryPoolSize, memoryPoolIdleMillis, timer);
        this.poller = readinessSource.dispatchDirectly(dispatch) ? null
            : Thread.ofPlatform().daemon().name("rdmachannel-poller-" + device.name()).start(this::run);
        BufferRegistry.onRelease(releaseListener);
    }

    /**
     * The registration on this device of the {@link io.rdmachannel.channel.RegisteredBuffers} allocation holding
     * {@code [address, address + length)}, registering it the first time; null if the bytes are not in one, or the
     * registration failed (the caller copies then). Allocates nothing once registered.
     */
    MemoryRegion registeredBuffer(final long address, final int length) {
        final BufferRegistry.Allocation allocation = BufferRegistry.find(address, length);
        if (allocation == null) {
            return null;
        }
        final MemoryRegion[] current = registeredBuffers;
        final int id = allocation.id();
        if (id < current.length && current[id] != null && current[id].address() == allocation.address()) {
            return current[id];
        }
        return registerBuffer(allocation);
    }

    private synchronized MemoryRegion registerBuffer(final BufferRegistry.Allocation allocation) {
        MemoryRegion[] current = registeredBuffers;
        final int id = allocation.id();
        if (id < current.length && current[id] != null && current[id].address() == allocation.address()) {
            return current[id];
        }
        if (closed || BufferRegistry.find(allocation.address(), allocation.length()) != allocation) {
            return null;
        }
        final MemoryRegion region;
        try {
            // a send source needs only local access
            region = protectionDomain.register(allocation.segment(), 0);
        } catch (final IOException | RuntimeException ex) {
            LOG.warn("registering a buffer of {} bytes with device {} failed; writes from it are copied",
                allocation.length(), device.name(), ex);
            return null;
        }
        if (id >= current.length) {
            current = Arrays.copyOf(current, Math.max(id + 1, current.length * 2));
        } else {
            current = current.clone();
        }
        current[id] = region;
        registeredBuffers = current;
        return region;
    }

    /**
     * An allocation is being released (the registry's lock is held, its memory not freed yet): close our
     * registration of it.
     */
    private synchronized void forgetRegisteredBuffer(final int id) {
        final MemoryRegion[] current = registeredBuffers;
        if (id < current.length && current[id] != null) {
            final MemoryRegion[] copy = current.clone();
            final MemoryRegion region = copy[id];
            copy[id] = null;
            registeredBuffers = copy;
            region.close();
        }
    }

    /**
     * A registration of all of the process's memory for local access, so a send may take its bytes straight from
     * any direct buffer; null unless the device has {@link DeviceCapability#LOCAL_ACCESS_TO_ANY_MEMORY}.
     */
    MemoryRegion processMemory() {
        return processMemory;
    }

    RdmaDevice device() {
        return device;
    }

    /**
     * The memory of ended connections, kept for the next ones.
     */
    ConnectionMemoryPool memoryPool() {
        return memoryPool;
    }

    /**
     * The shared receive queue of SRQ mode, created with up to {@code size} receives on first use.
     *
     * @throws IOException if the device cannot create it.
     */
    synchronized SharedReceivePool sharedReceivePool(final int size, final boolean messageMode) throws IOException {
        if (closed) {
            throw new IOException("the engine's context of device " + device.name() + " is closed");
        }
        if (sharedReceivePool == null) {
            sharedReceivePool = SharedReceivePool.create(protectionDomain, size,
                device.attributes().maxSharedReceiveQueueWorkRequests(), messageMode);
        }
        return sharedReceivePool;
    }

    /**
     * A connection with a receive queue of its own posted (positive) or dropped with its queue pair (negative)
     * {@code count} receives.
     */
    void ownReceivesPosted(final long count) {
        ownPostedReceives.addAndGet(count);
    }

    long ownPostedReceives() {
        return ownPostedReceives.get();
    }

    /**
     * The shared receive queue if SRQ mode was used on this device; for the management view.
     */
    SharedReceivePool sharedReceivePoolIfAny() {
        return sharedReceivePool;
    }

    ProtectionDomain protectionDomain() {
        return protectionDomain;
    }

    /**
     * The identity this side gives its XRC domain in a reply (docs/xrc-stream-mode.md): for now this context's own,
     * random and never all zero; the peer keys nothing by it until initiators are shared.
     */
    synchronized long[] xrcDomainIdentity() {
        if (xrcDomainIdentity == null) {
            final SecureRandom random = new SecureRandom();
            long low;
            do {
                low = random.nextLong();
            } while (low == 0);
            xrcDomainIdentity = new long[] {low, random.nextLong()};
        }
        return xrcDomainIdentity.clone();
    }

    /**
     * The XRC domain of the XRC mode, opened on first use through a file of this user's in the temporary folder,
     * named after the device: every process of the user on the host opens the same domain.
     *
     * @throws IOException if the device cannot open it.
     */
    synchronized XrcDomain xrcDomain() throws IOException {
        if (closed) {
            throw new IOException("the engine's context of device " + device.name() + " is closed");
        }
        if (xrcDomain == null) {
            final Path file = Path.of(System.getProperty("java.io.tmpdir"), "rdmachannel-xrcd-"
                + System.getProperty("user.name") + "-" + device.name().replaceAll("[^A-Za-z0-9._-]", "_"));
            xrcDomain = device.openXrcDomain(file, true);
        }
        return xrcDomain;
    }

    ReadinessSource readinessSource() {
        return readinessSource;
    }

    /**
     * Register a connection; its completion queue is created with the returned token.
     */
    synchronized int register(final RsocketConnection connection) {
        final int token;
        if (freeCount > 0) {
            token = freeTokens[--freeCount];
        } else {
            token = nextToken++;
            if (token >= connections.length) {
                connections = Arrays.copyOf(connections, connections.length * 2);
            }
        }
        connections[token] = connection;
        return token;
    }

    /**
     * The connections registered now; for the management view.
     */
    synchronized int connectionCount() {
        return nextToken - freeCount;
    }

    /**
     * The registered buffers registered with this device now; for the management view.
     */
    synchronized int registeredBufferCount() {
        int count = 0;
        for (final MemoryRegion region : registeredBuffers) {
            if (region != null) {
                count++;
            }
        }
        return count;
    }

    synchronized void unregister(final int token, final RsocketConnection connection) {
        if (token >= 0 && token < connections.length && connections[token] == connection) {
            connections[token] = null;
            if (freeCount == freeTokens.length) {
                freeTokens = Arrays.copyOf(freeTokens, Math.max(16, freeTokens.length * 2));
            }
            freeTokens[freeCount++] = token;
        }
    }

    private void dispatch(final long token) {
        final RsocketConnection[] current = connections;
        if (token >= 0 && token < current.length) {
            final RsocketConnection connection = current[(int) token];
            if (connection != null) {
                connection.onCompletionEvent();
            }
        }
    }

    private void run() {
        while (!closed) {
            try {
                readinessSource.await(-1, dispatch);
            } catch (final IOException | RuntimeException ex) {
                if (!closed) {
                    LOG.error("poller of device {} failed; blocked stream calls will not be woken", device.name(), ex);
                }
                return;
            }
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
        }
        if (poller != null) {
            readinessSource.wakeup();
            try {
                poller.join(5000);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
        BufferRegistry.removeReleaseListener(releaseListener);
        synchronized (this) {
            for (final MemoryRegion region : registeredBuffers) {
                if (region != null) {
                    region.close();
                }
            }
            registeredBuffers = new MemoryRegion[0];
        }
        final XrcDomain domain = xrcDomain;
        if (domain != null) {
            try {
                domain.close();
            } catch (final RuntimeException ex) {
                LOG.warn("closing the XRC domain of device {} failed", device.name(), ex);
            }
        }
        final SharedReceivePool pool = sharedReceivePool;
        if (pool != null) {
            try {
                pool.close();
            } catch (final RuntimeException ex) {
                LOG.warn("destroying the shared receive queue of device {} failed", device.name(), ex);
            }
        }
        try {
            memoryPool.close();
        } catch (final RuntimeException ex) {
            LOG.warn("releasing the idle connection memory of device {} failed", device.name(), ex);
        }
        if (processMemory != null) {
            processMemory.close();
        }
        readinessSource.close();
        protectionDomain.close();
    }
}
