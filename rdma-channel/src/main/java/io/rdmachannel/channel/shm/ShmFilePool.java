package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Iterator;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A device's pool of its own shared files: queue-pair blocks, completion-queue words, shared receive queues and the
 * memory of allocated regions. Creating, sizing, mapping, unmapping (a handshake with every thread of the JVM) and
 * deleting a file costs far more than a connection's whole data exchange, so a file whose object is closed comes back
 * here, zeroed, and the next object of its size class takes it.
 *
 * <p>Reuse never lets a peer of the old object reach the new one: every object carries an identity the peer must
 * present on each access ({@link AccessGuard}), and a file returns here only once its identity was revoked and the
 * accesses under way drained. Files are named {@code f-<id>} for life, so a peer keeps its mapping across reuse.
 *
 * <p>Bounds: at most {@link ShmConfiguration#POOL_MAX_IDLE_BYTES_PROP_NAME} bytes idle; a file idle for
 * {@link ShmConfiguration#POOL_IDLE_MILLIS_PROP_NAME} is unmapped and deleted by the agent's sweep; files larger than
 * {@link #MAX_POOLED_LENGTH} are never pooled.
 */
final class ShmFilePool {
    /** Files above this length are created and deleted per object, as their zeroing would cost more than a file. */
    static final long MAX_POOLED_LENGTH = 4L << 20;
    private static final Logger LOG = LoggerFactory.getLogger(ShmFilePool.class);

    private final Path folder;
    private final Runnable onFirstIdle;
    private final long maxIdleBytes;
    private final long idleNanos;
    private final AtomicInteger nextId = new AtomicInteger(1);
    // guarded by this
    private final Map<Long, ArrayDeque<Idle>> idle = new TreeMap<>();
    private long idleBytes;
    private int idleFiles;
    private boolean closed;

    private record Idle(SharedFile file, long sinceNanos) {
    }

    /**
     * A pool of files in {@code folder}.
     *
     * @param onFirstIdle run (outside the pool's lock) when a released file is the only idle one: the sweeper, which
     *                    may be waiting without a deadline while nothing is idle, must learn that something is.
     */
    ShmFilePool(final Path folder, final ShmConfiguration configuration, final Runnable onFirstIdle) {
        this.folder = folder;
        this.onFirstIdle = onFirstIdle;
        this.maxIdleBytes = configuration.poolMaxIdleBytes();
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(configuration.poolIdleMillis());
    }

    /**
     * The size class of a length: a power of two of at least a page, or page-aligned above {@link #MAX_POOLED_LENGTH}.
     */
    static long sizeClass(final long length) {
        final long pages = SharedFile.alignToPage(Math.max(length, 1));
        if (pages > MAX_POOLED_LENGTH) {
            return pages;
        }
        return Long.highestOneBit(pages) == pages ? pages : Long.highestOneBit(pages) << 1;
    }

    /**
     * A zero-filled file of at least {@code length} bytes, marked dirty up to {@code length}.
     */
    SharedFile acquire(final long length) throws IOException {
        final long size = sizeClass(length);
        SharedFile file = null;
        synchronized (this) {
            final ArrayDeque<Idle> free = idle.get(size);
            if (free != null && !free.isEmpty()) {
                // the most recently returned: its pages are the likeliest to be warm
                file = free.pollLast().file();
                idleBytes -= size;
                idleFiles--;
            }
        }
        if (file == null) {
            file = SharedFile.createPooled(folder, nextId.getAndIncrement(), size);
        }
        file.markDirty(length);
        return file;
    }

    /**
     * Take back a file no peer can reach any more (its identity revoked and drained): zero it and keep it, or
     * delete it when the pool is full or closed.
     */
    void release(final SharedFile file) {
        final long size = file.segment().byteSize();
        if (size > MAX_POOLED_LENGTH || maxIdleBytes == 0) {
            file.close();
            return;
        }
        file.zero();
        final boolean kept;
        final boolean first;
        synchronized (this) {
            kept = !closed && idleBytes + size <= maxIdleBytes;
            first = kept && idleFiles == 0;
            if (kept) {
                idle.computeIfAbsent(size, ignore -> new ArrayDeque<>()).addLast(new Idle(file, System.nanoTime()));
                idleBytes += size;
                idleFiles++;
            }
        }
        if (!kept) {
            file.close();
        } else if (first) {
            onFirstIdle.run();
        }
    }

    /**
     * Unmap and delete files idle for longer than the idle time.
     *
     * @return how many were deleted.
     */
    int trim() {
        final long now = System.nanoTime();
        final ArrayDeque<SharedFile> expired = new ArrayDeque<>();
        synchronized (this) {
            for (final ArrayDeque<Idle> free : idle.values()) {
                for (final Iterator<Idle> it = free.iterator(); it.hasNext(); ) {
                    final Idle entry = it.next();
                    if (now - entry.sinceNanos() < idleNanos) {
                        break;
                    }
                    it.remove();
                    idleBytes -= entry.file().segment().byteSize();
                    idleFiles--;
                    expired.add(entry.file());
                }
            }
        }
        expired.forEach(SharedFile::close);
        if (!expired.isEmpty()) {
            LOG.debug("shm file pool of {} deleted {} idle files", folder, expired.size());
        }
        return expired.size();
    }

    synchronized int idleFiles() {
        return idleFiles;
    }

    synchronized long idleBytes() {
        return idleBytes;
    }

    /**
     * Delete every idle file; files released later are deleted at once.
     */
    void close() {
        final ArrayDeque<SharedFile> all = new ArrayDeque<>();
        synchronized (this) {
            closed = true;
            idle.values().forEach(free -> free.forEach(entry -> all.add(entry.file())));
            idle.clear();
            idleBytes = 0;
            idleFiles = 0;
        }
        all.forEach(SharedFile::close);
    }
}
