package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReferenceArray;

import org.agrona.collections.Int2ObjectHashMap;

/**
 * The mappings of one peer device's shared files: its memory-region table, and its pooled files this process has
 * reached (queue-pair blocks, completion-queue words, shared receive queues, region memory), by file id. The peer
 * reuses its files for new objects, so the mappings outlive connections: they stay while connections to the peer come
 * and go, and are unmapped once unused for the idle time ({@link #sweep}), or with the whole node when it had no
 * connection for that long or the peer device is gone.
 *
 * <p>Every value read from the peer's table is validated before use, and every access to region memory happens
 * inside an access its table entry's {@link AccessGuard} admitted for the key: a peer can never make us touch memory
 * outside a region it registered with the access asked for, nor a region that was deregistered and reused.
 */
final class PeerNode implements AutoCloseable {
    /** Resolution succeeded. */
    static final int OK = 0;
    /** The key, protection domain, access or bounds did not match a region. */
    static final int ACCESS_ERROR = 1;
    /** Most mappings of region files kept per peer; beyond, unused ones are dropped early. */
    static final int MAX_CACHED_FILES = 1024;

    private final String gidHex;
    private final Path folder;
    private final SharedFile table;
    private final int capacity;
    private final AtomicReferenceArray<Mapping> mappings;
    /** Guarded by this; primitive keys, so a lookup allocates no boxed id (file ids grow past the integer cache). */
    private final Int2ObjectHashMap<CachedFile> files = new Int2ObjectHashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    // guarded by this
    private final List<SharedFile> retired = new ArrayList<>();
    private boolean closed;
    // guarded by the device's peer map
    private int references = 1;
    private long lastReleasedNanos;
    private boolean removed;

    /**
     * A mapping of one peer file. Pinned while a connection uses it as its block, completion-queue word or shared
     * receive queue; a region file is kept while accesses touch it.
     */
    static final class CachedFile {
        final int id;
        final SharedFile file;
        // guarded by the node
        int pins;
        volatile boolean touched = true;

        CachedFile(final int id, final SharedFile file) {
            this.id = id;
            this.file = file;
        }

        MemorySegment segment() {
            return file.segment();
        }
    }

    private record Mapping(int key, int fileId, CachedFile cached) {
    }

    /**
     * Where a resolved remote range lives: reused per queue pair, so resolving allocates nothing. After a successful
     * {@link #resolve}, the caller copies and then calls {@link #done}.
     */
    static final class Cursor {
        MemorySegment segment;
        long offset;
        long guard = -1;
    }

    private PeerNode(final String gidHex, final Path folder, final SharedFile table) {
        this.gidHex = gidHex;
        this.folder = folder;
        this.table = table;
        this.capacity = (int) Math.min(Integer.MAX_VALUE,
            table.segment().byteSize() / MemoryRegionTableDescriptor.ENTRY_LENGTH);
        this.mappings = new AtomicReferenceArray<>(capacity);
    }

    static PeerNode open(final ShmDevice device, final String gidHex, final Path folder) throws IOException {
        try {
            return new PeerNode(gidHex, folder, SharedFile.open(folder.resolve("mrtable")));
        } catch (final NoSuchFileException ex) {
            throw new IOException("no shm device with GID " + gidHex + " is open on this host (looked in " + folder
                + ")", ex);
        }
    }

    String gidHex() {
        return gidHex;
    }

    Path folder() {
        return folder;
    }

    // ----- references, under the device's peer map -----

    void retain() {
        references++;
    }

    /**
     * @return true when the last reference was released.
     */
    boolean release() {
        if (--references == 0) {
            lastReleasedNanos = System.nanoTime();
            return true;
        }
        return false;
    }

    boolean isUnused() {
        return references == 0;
    }

    long lastReleasedNanos() {
        return lastReleasedNanos;
    }

    /**
     * The device dropped this node from its map: it closes when its last connection ends.
     */
    void markRemoved() {
        removed = true;
    }

    boolean isRemoved() {
        return removed;
    }

    /**
     * Whether the peer device still exists: a closed device deletes its folder and table.
     */
    boolean isPeerAlive() {
        return Files.exists(folder.resolve("mrtable"));
    }

    // ----- files -----

    /**
     * Map the peer's pooled file {@code f-<id>}, or take the mapping this node has, and pin it until {@link #unpin}.
     *
     * @throws NoSuchFileException if the file does not exist.
     */
    CachedFile pin(final int fileId) throws IOException {
        synchronized (this) {
            final CachedFile cached = cachedFile(fileId);
            cached.pins++;
            return cached;
        }
    }

    void unpin(final CachedFile cached) {
        synchronized (this) {
            cached.pins--;
            cached.touched = true;
        }
    }

    /**
     * {@link #pin}, a missing file reported as the object it held being gone.
     *
     * @param missing the message: what is gone.
     */
    CachedFile pin(final int fileId, final String missing) throws IOException {
        try {
            return pin(fileId);
        } catch (final NoSuchFileException ex) {
            throw new IOException(missing, ex);
        }
    }

    /**
     * Unpin each file that is not null.
     */
    void unpinAll(final CachedFile... cached) {
        for (final CachedFile file : cached) {
            if (file != null) {
                unpin(file);
            }
        }
    }

    // guarded by this
    private CachedFile cachedFile(final int fileId) throws IOException {
        if (closed) {
            throw new IOException("the mappings of shm device " + gidHex + " are closed");
        }
        final CachedFile existing = files.get(fileId);
        if (existing != null) {
            existing.touched = true;
            return existing;
        }
        if (files.size() >= MAX_CACHED_FILES) {
            evictUntouched(false);
        }
        final SharedFile file = SharedFile.open(folder.resolve(SharedFile.pooledName(fileId)));
        final CachedFile cached = new CachedFile(fileId, file);
        files.put(fileId, cached);
        return cached;
    }

    /**
     * Resolve {@code length} bytes at {@code address} of the region {@code key}, and on success enter an access to
     * it that {@link #done} ends.
     *
     * @param requiredAccess access flags the region must have.
     * @param protectionDomain the handle of the protection domain the region must belong to.
     * @param cursor receives the segment and offset on success.
     * @return {@link #OK} or {@link #ACCESS_ERROR}.
     */
    int resolve(final int key, final long address, final long length, final int requiredAccess,
        final int protectionDomain, final Cursor cursor) {
        final int index = MemoryRegionTableDescriptor.index(key, capacity);
        if (index < 0 || length < 0) {
            return ACCESS_ERROR;
        }
        final MemorySegment entries = table.segment();
        final long entry = MemoryRegionTableDescriptor.entryOffset(index);
        final long guard = entry + MemoryRegionTableDescriptor.GUARD_OFFSET;
        inFlight.getAndIncrement();
        final boolean entered;
        try {
            entered = AccessGuard.enter(entries, guard, key);
        } catch (final InternalError fault) {
            // the peer truncated its table under our mapping: the caller fails the connection
            inFlight.getAndDecrement();
            throw fault;
        }
        if (!entered) {
            inFlight.getAndDecrement();
            return ACCESS_ERROR;
        }
        final int result;
        try {
            result = resolveEntered(entries, entry, index, key, address, length, requiredAccess, protectionDomain,
                cursor);
        } catch (final InternalError fault) {
            leaveAfterFault(entries, guard);
            throw fault;
        }
        if (result == OK) {
            cursor.guard = guard;
        } else {
            leave(entries, guard);
        }
        return result;
    }

    /**
     * The entry's checks and the mapping, inside the access {@link #resolve} entered; the caller leaves it.
     */
    private int resolveEntered(final MemorySegment entries, final long entry, final int index, final int key,
        final long address, final long length, final int requiredAccess, final int protectionDomain,
        final Cursor cursor) {
        final int access = entries.get(Atomics.INT, entry + MemoryRegionTableDescriptor.ACCESS_OFFSET);
        final int domain = entries.get(Atomics.INT, entry + MemoryRegionTableDescriptor.PD_OFFSET);
        final long base = entries.get(Atomics.LONG, entry + MemoryRegionTableDescriptor.ADDRESS_OFFSET);
        final long regionLength = entries.get(Atomics.LONG, entry + MemoryRegionTableDescriptor.LENGTH_OFFSET);
        final int fileId = entries.get(Atomics.INT, entry + MemoryRegionTableDescriptor.FILE_ID_OFFSET);
        final long offset = address - base;
        if (domain != protectionDomain || (access & requiredAccess) != requiredAccess || offset < 0
            || regionLength < 0 || offset > regionLength || length > regionLength - offset) {
            return ACCESS_ERROR;
        }
        final MemorySegment file = mapping(index, key, fileId);
        if (file == null || offset + length > file.byteSize()) {
            return ACCESS_ERROR;
        }
        cursor.segment = file;
        cursor.offset = offset;
        return OK;
    }

    /**
     * End the access a successful {@link #resolve} entered.
     */
    void done(final Cursor cursor) {
        if (cursor.guard >= 0) {
            final long guard = cursor.guard;
            cursor.guard = -1;
            cursor.segment = null;
            leave(table.segment(), guard);
        }
    }

    private void leave(final MemorySegment entries, final long guard) {
        try {
            AccessGuard.exit(entries, guard);
        } finally {
            inFlight.getAndDecrement();
        }
    }

    /**
     * Leave after the table faulted: the count in process memory stays exact; the guard word is the peer's.
     */
    private void leaveAfterFault(final MemorySegment entries, final long guard) {
        try {
            leave(entries, guard);
        } catch (final InternalError again) {
            // the table is still truncated; the caller reports the first fault
        }
    }

    private MemorySegment mapping(final int index, final int key, final int fileId) {
        final Mapping current = mappings.get(index);
        if (current != null && current.key() == key && current.fileId() == fileId) {
            final CachedFile cached = current.cached();
            if (!cached.touched) {
                cached.touched = true;
            }
            return cached.segment();
        }
        synchronized (this) {
            try {
                final CachedFile cached = cachedFile(fileId);
                mappings.set(index, new Mapping(key, fileId, cached));
                return cached.segment();
            } catch (final IOException ex) {
                return null;
            }
        }
    }

    /**
     * Unmap the files no access touched since the last sweep (agent thread).
     */
    void sweep(final long idleNanos) {
        final List<SharedFile> closable;
        synchronized (this) {
            if (closed) {
                return;
            }
            evictUntouched(true);
            if (retired.isEmpty() || inFlight.get() != 0) {
                return;
            }
            // every access that could still hold a retired mapping started before it was dropped: none is left
            closable = new ArrayList<>(retired);
            retired.clear();
        }
        closable.forEach(PeerNode::closeQuietly);
    }

    // guarded by this
    private void evictUntouched(final boolean clearTouched) {
        final List<CachedFile> evicted = new ArrayList<>();
        for (final CachedFile cached : files.values()) {
            if (cached.pins > 0) {
                continue;
            }
            if (cached.touched) {
                if (clearTouched) {
                    cached.touched = false;
                }
                continue;
            }
            evicted.add(cached);
        }
        if (evicted.isEmpty()) {
            return;
        }
        for (final CachedFile cached : evicted) {
            files.remove(cached.id, cached);
            retired.add(cached.file);
        }
        final Set<CachedFile> gone = Collections.newSetFromMap(new IdentityHashMap<>());
        gone.addAll(evicted);
        for (int i = 0; i < capacity; i++) {
            final Mapping mapping = mappings.get(i);
            if (mapping != null && gone.contains(mapping.cached())) {
                mappings.compareAndSet(i, mapping, null);
            }
        }
    }

    synchronized int cachedFiles() {
        return files.size() + retired.size();
    }

    /**
     * Unmap everything; only once no connection uses this node.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (int i = 0; i < capacity; i++) {
            mappings.set(i, null);
        }
        for (final CachedFile cached : files.values()) {
            closeQuietly(cached.file);
        }
        files.clear();
        retired.forEach(PeerNode::closeQuietly);
        retired.clear();
        closeQuietly(table);
    }

    private static void closeQuietly(final SharedFile file) {
        try {
            file.close();
        } catch (final RuntimeException ignore) {
            // a racing reader of a shared arena keeps it open; the mapping goes with the process
        }
    }

    @Override
    public String toString() {
        return "PeerNode{gid=" + gidHex + ", references=" + references + ", files=" + files.size() + '}';
    }
}
