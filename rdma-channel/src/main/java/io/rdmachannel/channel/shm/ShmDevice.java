package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.DeviceAttributes;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.DeviceResources;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.XrcDomain;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

import org.agrona.collections.Int2ObjectHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A device of the shared-memory provider: one node of the host-local fabric, with a folder of shared files named by
 * its random GID, a socket peers connect their links to, and an agent thread that serves them.
 */
final class ShmDevice implements RdmaDevice {
    private static final Logger LOG = LoggerFactory.getLogger(ShmDevice.class);
    private static final SecureRandom RANDOM = new SecureRandom();
    /**
     * The deepest shared receive queue: its file is sparse until receives are posted, but its owner keeps 24 bytes
     * of heap per receive it can hold.
     */
    static final int MAX_SHARED_RECEIVE_QUEUE_WORK_REQUESTS = 1 << 20;
    /** How long a close waits for peer accesses to memory it would reuse; a peer copies a message at most. */
    static final long DRAIN_TIMEOUT_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final ShmProvider provider;
    private final ShmConfiguration configuration;
    private final DeviceAttributes attributes;
    private final byte[] gid;
    private final String gidHex;
    private final Path folder;
    private final FileChannel lock;
    private final SharedFile memoryRegionTable;
    private final AtomicReferenceArray<ShmMemoryRegion> localRegions;
    private final byte[] regionTags;
    private final ShmAgent agent;
    private final Map<Integer, ShmQueuePair> queuePairs = new ConcurrentHashMap<>();
    /**
     * By id, for signals that name a queue (from a link, or a queue pair of this device): a primitive map under its
     * own monitor, so a lookup allocates no boxed key (ids grow past the small-integer cache).
     */
    private final Int2ObjectHashMap<ShmCompletionQueue> completionQueues = new Int2ObjectHashMap<>();
    private final Map<Integer, ShmSharedReceiveQueue> sharedReceiveQueues = new ConcurrentHashMap<>();
    private final Map<String, PeerNode> peers = new ConcurrentHashMap<>();
    /** Names of closed objects, removed by the agent rather than by the closing thread ({@link #forgetName}). */
    private final Queue<ForgottenName> forgottenNames = new ConcurrentLinkedQueue<>();
    private final ShmFilePool filePool;
    private final SendSlotPool sendSlotPool = new SendSlotPool();
    private final long idleNanos;
    private final AtomicInteger nextQueuePairIdentity = new AtomicInteger(1);
    private final AtomicInteger nextObjectId = new AtomicInteger(1);
    private final AtomicInteger openChildren = new AtomicInteger();
    private final ResourceCounter resources = new ResourceCounter();
    private int nextRegionIndex;
    private volatile boolean closed;

    private ShmDevice(final ShmProvider provider, final ShmConfiguration configuration, final byte[] gid,
        final Path folder, final FileChannel lock, final SharedFile memoryRegionTable) throws IOException {
        this.provider = provider;
        this.configuration = configuration;
        this.gid = gid;
        this.gidHex = HexFormat.of().formatHex(gid);
        this.folder = folder;
        this.lock = lock;
        this.memoryRegionTable = memoryRegionTable;
        this.localRegions = new AtomicReferenceArray<>(configuration.maxMemoryRegions());
        this.regionTags = new byte[configuration.maxMemoryRegions()];
        this.attributes = new DeviceAttributes(
            ShmProvider.DEVICE_NAME,
            configuration.maxQueuePairWorkRequests(),
            configuration.maxCompletionQueueEntries(),
            configuration.maxSge(),
            configuration.maxInlineData(),
            MAX_SHARED_RECEIVE_QUEUE_WORK_REQUESTS,
            1L << 40,
            1L << 30,
            4096,
            configuration.transport() == ShmConfiguration.Transport.IWARP
                ? EnumSet.of(DeviceCapability.SHARED_RECEIVE_QUEUE, DeviceCapability.SYNCHRONOUS_TRANSFER,
                    DeviceCapability.LOCAL_ACCESS_TO_ANY_MEMORY)
                : EnumSet.of(DeviceCapability.SHARED_RECEIVE_QUEUE, DeviceCapability.RDMA_WRITE_WITH_IMMEDIATE,
                    DeviceCapability.SYNCHRONOUS_TRANSFER, DeviceCapability.LOCAL_ACCESS_TO_ANY_MEMORY,
                    DeviceCapability.XRC));
        this.filePool = new ShmFilePool(folder, configuration, this::wakeAgent);
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(configuration.poolIdleMillis());
        this.agent = new ShmAgent(this, folder.resolve(ShmAgent.SOCKET_FILE));
    }

    static ShmDevice open(final ShmProvider provider, final ShmConfiguration configuration) throws IOException {
        ShmDirectory.ensurePrivate(configuration.directory());
        ShmDirectory.reclaimDead(configuration.directory());
        XrcRegistry.reclaimUnused(configuration.directory());
        final byte[] gid = new byte[16];
        RANDOM.nextBytes(gid);
        gid[0] = (byte) 0xfe;
        gid[1] = (byte) 0x80;
        final Path folder = configuration.directory().resolve(HexFormat.of().formatHex(gid));
        final FileChannel lock = ShmDirectory.createAndLock(folder);
        SharedFile table = null;
        try {
            table = SharedFile.create(folder.resolve("mrtable"),
                MemoryRegionTableDescriptor.tableLength(configuration.maxMemoryRegions()));
            final ShmDevice device = new ShmDevice(provider, configuration, gid, folder, lock, table);
            device.agent.start();
            LOG.debug("opened shm device {} in {}", device.gidHex, folder);
            return device;
        } catch (final IOException | RuntimeException ex) {
            if (table != null) {
                table.close();
            }
            ShmDirectory.unlockAndDelete(folder, lock);
            throw ex;
        }
    }

    @Override
    public String name() {
        return ShmProvider.DEVICE_NAME;
    }

    @Override
    public RdmaProvider provider() {
        return provider;
    }

    @Override
    public DeviceAttributes attributes() {
        return attributes;
    }

    @Override
    public byte[] queryGid(final int portNumber, final int index) {
        ensureOpen();
        if (portNumber != 1 || index != 0) {
            throw new IllegalArgumentException("the shm device has one port with one GID: portNumber=" + portNumber
                + ", index=" + index);
        }
        return gid.clone();
    }

    @Override
    public ProtectionDomain allocateProtectionDomain() {
        ensureOpen();
        openChildren.incrementAndGet();
        resources.opened(ResourceCounter.Kind.PROTECTION_DOMAIN);
        return new ShmProtectionDomain(this, nextObjectId.getAndIncrement());
    }

    @Override
    public ReadinessSource createReadinessSource() {
        ensureOpen();
        openChildren.incrementAndGet();
        resources.opened(ResourceCounter.Kind.READINESS_SOURCE);
        return new ShmReadinessSource(this);
    }

    @Override
    public CompletionQueue createCompletionQueue(final int entries, final ReadinessSource readinessSource,
        final long token) throws IOException {
        ensureOpen();
        if (entries < 1 || entries > attributes.maxCompletionQueueEntries()) {
            throw new IllegalArgumentException("entries=" + entries + " is outside [1, "
                + attributes.maxCompletionQueueEntries() + "]");
        }
        ShmReadinessSource source = null;
        if (readinessSource != null) {
            if (!(readinessSource instanceof ShmReadinessSource shmSource) || shmSource.device() != this) {
                throw new IllegalArgumentException("the readiness source belongs to another device");
            }
            source = shmSource;
        }
        final int id = nextObjectId.getAndIncrement();
        final ShmCompletionQueue queue = new ShmCompletionQueue(this, id, entries, source, token);
        if (source != null) {
            source.attach();
        }
        synchronized (completionQueues) {
            completionQueues.put(id, queue);
        }
        openChildren.incrementAndGet();
        resources.opened(ResourceCounter.Kind.COMPLETION_QUEUE);
        return queue;
    }

    @Override
    public XrcDomain openXrcDomain(final Path file, final boolean create) throws IOException {
        ensureOpen();
        final ShmXrcDomain domain = ShmXrcDomain.open(this, file, create);
        openChildren.incrementAndGet();
        resources.opened(ResourceCounter.Kind.XRC_DOMAIN);
        return domain;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        if (openChildren.get() != 0) {
            throw new IllegalStateException("shm device " + gidHex + " still has " + openChildren.get()
                + " open protection domains, completion queues, readiness sources or XRC domains: close them first");
        }
        closed = true;
        agent.close();
        synchronized (peers) {
            peers.values().forEach(PeerNode::close);
            peers.clear();
        }
        filePool.close();
        memoryRegionTable.close();
        try {
            ShmDirectory.unlockAndDelete(folder, lock);
        } catch (final IOException ex) {
            LOG.debug("cannot delete shm device folder {}", folder, ex);
        }
        LOG.debug("closed shm device {}", gidHex);
    }

    // ----- package-private services for the objects of this device -----

    ShmConfiguration configuration() {
        return configuration;
    }

    byte[] gid() {
        return gid;
    }

    String gidHex() {
        return gidHex;
    }

    Path folder() {
        return folder;
    }

    Path peerFolder(final String peerGidHex) {
        return configuration.directory().resolve(peerGidHex);
    }

    private void wakeAgent() {
        agent.nudge();
    }

    /**
     * A closed queue pair's name in the device's folder (a symbolic link to its block's pooled file): removed by the
     * agent soon, off the closing thread's path. Until then a peer that looks the number up finds the block's
     * identity revoked or another queue pair's, and is told the queue pair is gone, as after the removal.
     *
     * @param name the link's name in the folder.
     * @param target the file it names: a link that names another by the time the agent comes is left alone.
     */
    void forgetName(final String name, final String target) {
        forgottenNames.add(new ForgottenName(name, target));
        agent.nudge();
    }

    /**
     * Remove the links {@link #forgetName} queued that still name the same file (agent thread).
     */
    void removeForgottenNames() {
        ForgottenName forgotten;
        while ((forgotten = forgottenNames.poll()) != null) {
            final Path link = folder.resolve(forgotten.name());
            try {
                if (Files.readSymbolicLink(link).toString().equals(forgotten.target())) {
                    Files.delete(link);
                }
            } catch (final NoSuchFileException gone) {
                // the folder is being deleted, or the link was replaced and removed meanwhile
            } catch (final IOException ex) {
                LOG.debug("cannot remove the link {} of a closed queue pair", link, ex);
            }
        }
    }

    private record ForgottenName(String name, String target) {
    }

    ShmAgent agent() {
        return agent;
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("shm device " + gidHex + " is closed");
        }
    }

    void childClosed(final ResourceCounter.Kind kind) {
        openChildren.decrementAndGet();
        resources.closed(kind);
    }

    ResourceCounter resourceCounter() {
        return resources;
    }

    @Override
    public DeviceResources resources() {
        return resources.snapshot();
    }

    int nextObjectId() {
        return nextObjectId.getAndIncrement();
    }

    /**
     * A fresh identity for a queue pair: never 0, unique for 2^32 queue pairs; its low 24 bits are the queue pair's
     * number, never 0 either.
     */
    int nextQueuePairIdentity() {
        while (true) {
            final int identity = nextQueuePairIdentity.getAndIncrement();
            if ((identity & 0xFFFFFF) != 0) {
                return identity;
            }
        }
    }

    ShmFilePool filePool() {
        return filePool;
    }

    SendSlotPool sendSlotPool() {
        return sendSlotPool;
    }

    void addQueuePair(final ShmQueuePair queuePair) {
        queuePairs.put(queuePair.number(), queuePair);
    }

    void removeQueuePair(final ShmQueuePair queuePair) {
        queuePairs.remove(queuePair.number(), queuePair);
    }

    ShmQueuePair queuePair(final int number) {
        return queuePairs.get(number);
    }

    ShmCompletionQueue completionQueue(final int id) {
        synchronized (completionQueues) {
            return completionQueues.get(id);
        }
    }

    void removeCompletionQueue(final ShmCompletionQueue queue) {
        synchronized (completionQueues) {
            completionQueues.remove(queue.id(), queue);
        }
    }

    void addSharedReceiveQueue(final ShmSharedReceiveQueue queue) {
        sharedReceiveQueues.put(queue.id(), queue);
    }

    ShmSharedReceiveQueue sharedReceiveQueue(final int id) {
        return sharedReceiveQueues.get(id);
    }

    void removeSharedReceiveQueue(final ShmSharedReceiveQueue queue) {
        sharedReceiveQueues.remove(queue.id(), queue);
    }

    /**
     * The mappings of a peer device's files, shared by all queue pairs connected to it.
     */
    PeerNode peer(final String peerGidHex) throws IOException {
        synchronized (peers) {
            final PeerNode existing = peers.get(peerGidHex);
            if (existing != null) {
                if (existing.isPeerAlive()) {
                    existing.retain();
                    return existing;
                }
                // a device of that GID was closed (and its folder may have been made anew): forget its mappings
                peers.remove(peerGidHex);
                existing.markRemoved();
                if (existing.isUnused()) {
                    existing.close();
                }
            }
            final PeerNode peer = PeerNode.open(this, peerGidHex, peerFolder(peerGidHex));
            peers.put(peerGidHex, peer);
            return peer;
        }
    }

    /**
     * A connection to the peer ended. Its mappings stay for the next connection; the sweep unmaps them once the
     * peer went unused for the idle time or is gone.
     */
    void release(final PeerNode peer) {
        synchronized (peers) {
            if (peer.release() && peer.isRemoved()) {
                peer.close();
            }
        }
    }

    /**
     * Unmap what went unused for the idle time: pooled files, mappings of peer files no access used, peers without
     * connections or whose device is gone (agent thread).
     */
    void sweep() {
        filePool.trim();
        final List<PeerNode> unused = new ArrayList<>();
        final long now = System.nanoTime();
        synchronized (peers) {
            for (final PeerNode peer : peers.values()) {
                if (peer.isUnused() && (now - peer.lastReleasedNanos() > idleNanos || !peer.isPeerAlive())) {
                    unused.add(peer);
                }
            }
            unused.forEach(peer -> peers.remove(peer.gidHex(), peer));
        }
        unused.forEach(PeerNode::close);
        for (final PeerNode peer : peers.values()) {
            peer.sweep(idleNanos);
        }
    }

    /**
     * Whether anything is pooled or cached that a sweep may have to unmap, or a name to remove.
     */
    boolean needsSweep() {
        return filePool.idleFiles() > 0 || !peers.isEmpty() || !forgottenNames.isEmpty();
    }

    int cachedPeers() {
        return peers.size();
    }

    // ----- memory-region table -----

    synchronized ShmMemoryRegion register(final ShmProtectionDomain domain, final MemorySegment segment,
        final SharedFile file, final Arena view, final int accessFlags) {
        final int capacity = localRegions.length();
        for (int i = 0; i < capacity; i++) {
            final int index = (nextRegionIndex + i) % capacity;
            if (localRegions.get(index) == null) {
                nextRegionIndex = index + 1;
                final int tag = (regionTags[index] & 0xFF) % 255 + 1;
                regionTags[index] = (byte) tag;
                final int key = MemoryRegionTableDescriptor.key(index, tag);
                final ShmMemoryRegion region = new ShmMemoryRegion(domain, key, accessFlags, segment, file, view);
                localRegions.set(index, region);
                final MemorySegment table = memoryRegionTable.segment();
                final long entry = MemoryRegionTableDescriptor.entryOffset(index);
                table.set(Atomics.INT, entry + MemoryRegionTableDescriptor.ACCESS_OFFSET,
                    file == null ? accessFlags & ~AccessFlags.REMOTE : accessFlags);
                table.set(Atomics.INT, entry + MemoryRegionTableDescriptor.PD_OFFSET, domain.handle());
                table.set(Atomics.LONG, entry + MemoryRegionTableDescriptor.ADDRESS_OFFSET, segment.address());
                table.set(Atomics.LONG, entry + MemoryRegionTableDescriptor.LENGTH_OFFSET, segment.byteSize());
                table.set(Atomics.INT, entry + MemoryRegionTableDescriptor.FILE_ID_OFFSET,
                    file == null ? 0 : file.id());
                return region;
            }
        }
        throw new IllegalStateException("the shm device has " + capacity + " memory regions registered, the most "
            + ShmConfiguration.MAX_MEMORY_REGIONS_PROP_NAME + " allows");
    }

    /**
     * Make an allocated region reachable by peers under its key.
     */
    void publish(final ShmMemoryRegion region) {
        final int index = MemoryRegionTableDescriptor.index(region.localKey(), localRegions.length());
        AccessGuard.publish(memoryRegionTable.segment(),
            MemoryRegionTableDescriptor.entryOffset(index) + MemoryRegionTableDescriptor.GUARD_OFFSET,
            region.localKey());
    }

    /**
     * Take the region out of the table: its key stops resolving, and once the peer accesses under way have drained
     * its memory may be reused. They are waited for at most {@code drainTimeoutNanos}.
     *
     * @return true if no peer access is under way any more, false if one did not end in time (its memory must not be
     *     reused).
     */
    boolean deregister(final ShmMemoryRegion region, final long drainTimeoutNanos) {
        final int index = MemoryRegionTableDescriptor.index(region.localKey(), localRegions.length());
        final long guard = MemoryRegionTableDescriptor.entryOffset(index) + MemoryRegionTableDescriptor.GUARD_OFFSET;
        synchronized (this) {
            if (index < 0 || localRegions.get(index) != region) {
                return true;
            }
            AccessGuard.revoke(memoryRegionTable.segment(), guard);
        }
        // the entry stays taken until the accesses drained: a new region there would publish its key over them
        final boolean drained = AccessGuard.awaitDrained(memoryRegionTable.segment(), guard, drainTimeoutNanos);
        if (drained) {
            synchronized (this) {
                localRegions.set(index, null);
            }
        }
        return drained;
    }

    /**
     * The local region with this lkey, or null.
     */
    ShmMemoryRegion localRegion(final int key) {
        final int index = MemoryRegionTableDescriptor.index(key, localRegions.length());
        if (index < 0) {
            return null;
        }
        final ShmMemoryRegion region = localRegions.get(index);
        return region != null && region.localKey() == key && !region.isClosed() ? region : null;
    }

    @Override
    public String toString() {
        return "ShmDevice{gid=" + gidHex + ", folder=" + folder + ", queuePairs=" + queuePairs.size() + '}';
    }
}
