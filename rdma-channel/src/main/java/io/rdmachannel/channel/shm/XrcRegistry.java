package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.shm.XrcDomainDescriptor.MAX_NUMBER;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.OPENERS;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.OPENER_GID_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.OPENER_HANDLES_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.SRQS;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.SRQ_BLOCK_FILE_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.SRQ_BLOCK_IDENTITY_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.SRQ_NUMBER_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.SRQ_OPENER_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.TARGETS;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.TARGET_EVENT_SEQUENCE_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.TARGET_NUMBER_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.TARGET_REMOTE_GID_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.TARGET_REMOTE_QPN_OFFSET;
import static io.rdmachannel.channel.shm.XrcDomainDescriptor.TARGET_STATE_OFFSET;

import io.rdmachannel.channel.spi.QueuePairEvent;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntToLongFunction;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This process's access to one XRC domain registry ({@link XrcDomainDescriptor}): the file mapped once per process,
 * however many devices of the process have the domain open, and every change made under an exclusive lock of the
 * whole file. The file lock orders the processes; a lock of this process orders its threads, which the file lock
 * cannot (a JVM refuses a second lock of the same file, and closing any descriptor of the file would drop the lock,
 * so the one channel is closed only once no thread of this process uses it).
 *
 * <p>Openers are devices, named by their GID. Before each change of the table of target queue pairs the registry
 * drops the openers whose device is no longer alive ({@link ShmDirectory#isDeviceAlive}: its process died or closed
 * it without releasing its references) with all their references, and destroys the target queue pairs left without
 * references. The last opener to leave marks the file deleted and unlinks it; a process that opened the file before
 * and waited for its lock sees the mark and starts over with a new file.
 */
final class XrcRegistry {
    private static final Logger LOG = LoggerFactory.getLogger(XrcRegistry.class);
    /** Registries this process has mapped, by path; guarded by itself. */
    private static final Map<Path, XrcRegistry> OPEN = new HashMap<>();
    /** The longest wait for the file's lock held by another process; tests shorten it. */
    static volatile long lockTimeoutNanos = TimeUnit.SECONDS.toNanos(10);
    /** {@link #join}: the file was deleted by its last opener. */
    static final int DELETED = -1;
    /** {@link #join}: the file holds no domain. */
    static final int NO_DOMAIN = -2;

    private final Path path;
    private final FileChannel channel;
    /** The inode the path named right after the channel was opened, or -1. */
    private final long inode;
    private final Arena arena = Arena.ofShared();
    private final ReentrantLock lock = new ReentrantLock();
    // guarded by OPEN
    private int users;
    // guarded by lock
    private MemorySegment segment;

    private XrcRegistry(final Path path, final FileChannel channel, final long inode) {
        this.path = path;
        this.channel = channel;
        this.inode = inode;
    }

    private static long inodeOf(final Path path) {
        try {
            return (Long) Files.getAttribute(path, "unix:ino", LinkOption.NOFOLLOW_LINKS);
        } catch (final IOException | RuntimeException ex) {
            return -1;
        }
    }

    /**
     * This process's registry at {@code path}, opened if needed; {@link #release()} ends the use.
     *
     * @throws NoSuchFileException if there is no such file and {@code create} is false.
     */
    static XrcRegistry acquire(final Path path, final boolean create) throws IOException {
        synchronized (OPEN) {
            final XrcRegistry existing = OPEN.get(path);
            if (existing != null) {
                existing.users++;
                return existing;
            }
            final FileChannel channel;
            if (create) {
                channel = FileChannel.open(path, Set.of(StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE), PosixFilePermissions.asFileAttribute(
                        PosixFilePermissions.fromString("rw-------")));
            } else {
                channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
            }
            final XrcRegistry registry = new XrcRegistry(path, channel, inodeOf(path));
            registry.users = 1;
            OPEN.put(path, registry);
            return registry;
        }
    }

    /**
     * End a use begun by {@link #acquire}; the last use unmaps the file and closes its descriptor.
     */
    void release() {
        synchronized (OPEN) {
            if (--users > 0) {
                return;
            }
            OPEN.remove(path, this);
            // closed under OPEN: a registry opened meanwhile for the same file could lose its lock to this close
            lock.lock();
            try {
                segment = null;
                arena.close();
                channel.close();
            } catch (final IOException ex) {
                LOG.debug("cannot close XRC domain registry {}", path, ex);
            } finally {
                lock.unlock();
            }
        }
    }

    /**
     * Stop handing this registry to new users: its file was deleted, the next {@link #acquire} opens the new one.
     */
    private void retire() {
        synchronized (OPEN) {
            OPEN.remove(path, this);
        }
    }

    Path path() {
        return path;
    }

    // ----- locking -----

    /**
     * Run {@code action} holding the registry: this process's lock, then the file's, waited for at most
     * {@link #lockTimeoutNanos}: a holder that dies frees it (the kernel drops its lock), but one that is stopped
     * ({@code SIGSTOP}, a debugger) would otherwise block every XRC call of every other process on the domain.
     *
     * @throws IllegalStateException if the file cannot be locked, or another process held it for the whole wait.
     */
    private <T> T locked(final Supplier<T> action) {
        lock.lock();
        try {
            final FileLock fileLock = lockFile();
            try {
                return action.get();
            } finally {
                fileLock.release();
            }
        } catch (final IOException ex) {
            throw new IllegalStateException("cannot lock XRC domain registry " + path + ": " + ex, ex);
        } finally {
            lock.unlock();
        }
    }

    private FileLock lockFile() throws IOException {
        final long timeout = lockTimeoutNanos;
        final long start = System.nanoTime();
        long pauseMicros = 50;
        while (true) {
            try {
                final FileLock fileLock = channel.tryLock();
                if (fileLock != null) {
                    return fileLock;
                }
            } catch (final OverlappingFileLockException heldInThisJvm) {
                // a registry of a deleted file with the same name, still used here: held like by another process
            }
            if (System.nanoTime() - start >= timeout) {
                throw new IllegalStateException("XRC domain registry " + path + " was locked by another user for "
                    + TimeUnit.NANOSECONDS.toMillis(timeout) + " ms (a stopped process?): the call is refused");
            }
            LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(pauseMicros));
            if (Thread.interrupted()) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for the lock of XRC domain registry "
                    + path);
            }
            pauseMicros = Math.min(pauseMicros * 2, 10_000);
        }
    }

    /**
     * Map the file if it is a formatted, live registry, formatting a new one if {@code create}. Under the lock.
     *
     * @return the state found: {@link XrcDomainDescriptor#STATE_LIVE}, or UNFORMATTED or DELETED if it is no domain.
     */
    private int mapLocked(final boolean create) {
        try {
            if (segment == null) {
                if (channel.size() < XrcDomainDescriptor.LENGTH) {
                    if (!create) {
                        return XrcDomainDescriptor.STATE_UNFORMATTED;
                    }
                    channel.write(ByteBuffer.allocate(1), XrcDomainDescriptor.LENGTH - 1);
                }
                segment = channel.map(FileChannel.MapMode.READ_WRITE, 0, XrcDomainDescriptor.LENGTH, arena);
            }
        } catch (final IOException ex) {
            throw new IllegalStateException("cannot map XRC domain registry " + path + ": " + ex, ex);
        }
        final int state = segment.get(Atomics.INT, XrcDomainDescriptor.STATE_OFFSET);
        if (state == XrcDomainDescriptor.STATE_UNFORMATTED && create) {
            segment.set(Atomics.INT, XrcDomainDescriptor.MAGIC_OFFSET, XrcDomainDescriptor.MAGIC);
            segment.set(Atomics.INT, XrcDomainDescriptor.NEXT_TARGET_NUMBER_OFFSET, 1);
            segment.set(Atomics.INT, XrcDomainDescriptor.NEXT_SRQ_NUMBER_OFFSET, 1);
            Atomics.setIntVolatile(segment, XrcDomainDescriptor.STATE_OFFSET, XrcDomainDescriptor.STATE_LIVE);
            return XrcDomainDescriptor.STATE_LIVE;
        }
        if (state == XrcDomainDescriptor.STATE_LIVE
            && segment.get(Atomics.INT, XrcDomainDescriptor.MAGIC_OFFSET) != XrcDomainDescriptor.MAGIC) {
            throw new IllegalStateException("XRC domain registry " + path + " is corrupt: bad magic");
        }
        return state;
    }

    // ----- openers -----

    /**
     * Join the domain as the device {@code gid}: one more domain handle of it.
     *
     * @return the opener index; {@link #DELETED} if its last opener deleted the file (the registry is retired: try
     *     again); {@link #NO_DOMAIN} if the file holds no domain and {@code create} is false.
     * @throws IllegalStateException if {@link XrcDomainDescriptor#OPENERS} devices have the domain open already.
     */
    int join(final byte[] gid, final boolean create) {
        final int opener = locked(() -> {
            final int state = mapLocked(create);
            if (state == XrcDomainDescriptor.STATE_DELETED && inode >= 0 && inodeOf(path) == inode) {
                // its last opener could not unlink it: do it, or every later opener would find it deleted again
                unlinkLocked();
            }
            if (state != XrcDomainDescriptor.STATE_LIVE) {
                return state == XrcDomainDescriptor.STATE_DELETED ? DELETED : NO_DOMAIN;
            }
            reapLocked();
            int free = -1;
            for (int i = 0; i < OPENERS; i++) {
                final long entry = XrcDomainDescriptor.openerOffset(i);
                final int handles = segment.get(Atomics.INT, entry + OPENER_HANDLES_OFFSET);
                if (handles == 0) {
                    free = free < 0 ? i : free;
                } else if (Arrays.equals(gidAt(i), gid)) {
                    segment.set(Atomics.INT, entry + OPENER_HANDLES_OFFSET, handles + 1);
                    return i;
                }
            }
            if (free < 0) {
                throw new IllegalStateException("XRC domain registry " + path + " has " + OPENERS
                    + " devices open, the most it holds");
            }
            final long entry = XrcDomainDescriptor.openerOffset(free);
            MemorySegment.copy(MemorySegment.ofArray(gid), 0, segment, entry + OPENER_GID_OFFSET, gid.length);
            segment.set(Atomics.INT, entry + OPENER_HANDLES_OFFSET, 1);
            return free;
        });
        if (opener == DELETED) {
            retire();
        }
        return opener;
    }

    /**
     * One domain handle of the opener closed. The opener's last handle leaves the domain; the domain's last opener
     * deletes the file.
     *
     * @return true if the file was deleted.
     */
    boolean leave(final int opener) {
        final boolean deleted = locked(() -> {
            final long entry = XrcDomainDescriptor.openerOffset(opener);
            final int handles = segment.get(Atomics.INT, entry + OPENER_HANDLES_OFFSET);
            if (handles > 1) {
                segment.set(Atomics.INT, entry + OPENER_HANDLES_OFFSET, handles - 1);
                return false;
            }
            dropOpenerLocked(opener);
            destroyUnreferencedTargetsLocked();
            reapLocked();
            for (int i = 0; i < OPENERS; i++) {
                if (openerHandles(i) != 0) {
                    return false;
                }
            }
            Atomics.setIntVolatile(segment, XrcDomainDescriptor.STATE_OFFSET, XrcDomainDescriptor.STATE_DELETED);
            unlinkLocked();
            return true;
        });
        if (deleted) {
            retire();
        }
        return deleted;
    }

    private void unlinkLocked() {
        try {
            Files.deleteIfExists(path);
        } catch (final IOException ex) {
            LOG.debug("cannot delete XRC domain registry {}", path, ex);
        }
    }

    private int openerHandles(final int opener) {
        return segment.get(Atomics.INT, XrcDomainDescriptor.openerOffset(opener) + OPENER_HANDLES_OFFSET);
    }

    private byte[] gidAt(final int opener) {
        final byte[] gid = new byte[16];
        MemorySegment.copy(segment, XrcDomainDescriptor.openerOffset(opener) + OPENER_GID_OFFSET,
            MemorySegment.ofArray(gid), 0, gid.length);
        return gid;
    }

    /**
     * Drop the openers whose device is gone with their references and queues, then destroy the target queue pairs
     * that no opener references any more.
     */
    private void reapLocked() {
        boolean dropped = false;
        final Path base = path.getParent();
        for (int i = 0; i < OPENERS; i++) {
            if (openerHandles(i) != 0) {
                final String gidHex = HexFormat.of().formatHex(gidAt(i));
                if (!ShmDirectory.isDeviceAlive(base.resolve(gidHex))) {
                    LOG.debug("XRC domain {}: device {} is gone, its references are dropped", path, gidHex);
                    dropOpenerLocked(i);
                    dropped = true;
                }
            }
        }
        if (dropped) {
            destroyUnreferencedTargetsLocked();
        }
    }

    /**
     * Destroy the target queue pairs no opener references any more: after openers were dropped (a queue pair's own
     * last close destroys it at once).
     */
    private void destroyUnreferencedTargetsLocked() {
        for (int t = 0; t < TARGETS; t++) {
            if (targetNumber(t) != 0 && referencesLocked(t) == 0) {
                destroyTargetLocked(t);
            }
        }
    }

    private void dropOpenerLocked(final int opener) {
        final long entry = XrcDomainDescriptor.openerOffset(opener);
        segment.asSlice(entry, XrcDomainDescriptor.OPENER_ENTRY_LENGTH).fill((byte) 0);
        for (int t = 0; t < TARGETS; t++) {
            // written only where set: the registry is a sparse file, and a write of a hole would make it memory
            final long reference = XrcDomainDescriptor.referenceOffset(t, opener);
            if (segment.get(Atomics.INT, reference) != 0) {
                segment.set(Atomics.INT, reference, 0);
            }
        }
        for (int q = 0; q < SRQS; q++) {
            final long srq = XrcDomainDescriptor.srqOffset(q);
            if (segment.get(Atomics.INT, srq + SRQ_NUMBER_OFFSET) != 0
                && segment.get(Atomics.INT, srq + SRQ_OPENER_OFFSET) == opener) {
                segment.asSlice(srq, XrcDomainDescriptor.SRQ_ENTRY_LENGTH).fill((byte) 0);
            }
        }
    }

    // ----- target queue pairs -----

    private int targetNumber(final int target) {
        return Atomics.getIntVolatile(segment, XrcDomainDescriptor.targetOffset(target) + TARGET_NUMBER_OFFSET);
    }

    private int referencesLocked(final int target) {
        int total = 0;
        for (int i = 0; i < OPENERS; i++) {
            total += segment.get(Atomics.INT, XrcDomainDescriptor.referenceOffset(target, i));
        }
        return total;
    }

    private void destroyTargetLocked(final int target) {
        final long entry = XrcDomainDescriptor.targetOffset(target);
        LOG.debug("XRC domain {}: target queue pair {} has no references left and is destroyed", path,
            segment.get(Atomics.INT, entry + TARGET_NUMBER_OFFSET));
        Atomics.setIntVolatile(segment, entry + TARGET_NUMBER_OFFSET, 0);
        segment.asSlice(entry, XrcDomainDescriptor.TARGET_ENTRY_LENGTH).fill((byte) 0);
        segment.set(Atomics.LONG, XrcDomainDescriptor.TARGETS_DESTROYED_OFFSET,
            segment.get(Atomics.LONG, XrcDomainDescriptor.TARGETS_DESTROYED_OFFSET) + 1);
    }

    /**
     * Create a target queue pair in RESET with one reference of the opener.
     *
     * @return {@code {index, number}}.
     * @throws IllegalStateException if the table is full.
     */
    int[] createTarget(final int opener) {
        return locked(() -> {
            reapLocked();
            final int number = allocateNumber(XrcDomainDescriptor.NEXT_TARGET_NUMBER_OFFSET, TARGETS,
                XrcRegistry::targetNumberOffset);
            if (number > 0) {
                final int t = XrcDomainDescriptor.targetIndex(number);
                final long entry = XrcDomainDescriptor.targetOffset(t);
                segment.set(Atomics.INT, entry + TARGET_STATE_OFFSET, QueuePairState.RESET.code());
                segment.set(Atomics.LONG, entry + TARGET_EVENT_SEQUENCE_OFFSET, 0);
                segment.set(Atomics.INT, XrcDomainDescriptor.referenceOffset(t, opener), 1);
                segment.set(Atomics.LONG, XrcDomainDescriptor.TARGETS_CREATED_OFFSET,
                    segment.get(Atomics.LONG, XrcDomainDescriptor.TARGETS_CREATED_OFFSET) + 1);
                Atomics.setIntVolatile(segment, entry + TARGET_NUMBER_OFFSET, number);
                return new int[] {t, number};
            }
            throw new IllegalStateException("XRC domain registry " + path + " holds " + TARGETS
                + " target queue pairs, the most it can");
        });
    }

    /**
     * Take one more reference of the opener to the target queue pair {@code number}.
     *
     * @return {@code {index, event sequence}}, or null if the domain has no such queue pair.
     */
    long[] openTarget(final int opener, final int number) {
        return locked(() -> {
            reapLocked();
            final int target = findTarget(number);
            if (target < 0) {
                return null;
            }
            final long reference = XrcDomainDescriptor.referenceOffset(target, opener);
            segment.set(Atomics.INT, reference, segment.get(Atomics.INT, reference) + 1);
            return new long[] {target, eventSequence(target)};
        });
    }

    private int findTarget(final int number) {
        if (number <= 0 || number > MAX_NUMBER) {
            return -1;
        }
        final int t = XrcDomainDescriptor.targetIndex(number);
        return targetNumber(t) == number ? t : -1;
    }

    /** Where the entry of the target queue pair {@code number} keeps its number. */
    private static long targetNumberOffset(final int number) {
        return XrcDomainDescriptor.targetOffset(XrcDomainDescriptor.targetIndex(number)) + TARGET_NUMBER_OFFSET;
    }

    /**
     * Drop one reference of the opener; the last reference destroys the queue pair.
     *
     * @return true if the queue pair was destroyed.
     */
    boolean closeTarget(final int opener, final int target, final int number) {
        return locked(() -> {
            if (targetNumber(target) != number) {
                return false;
            }
            final long reference = XrcDomainDescriptor.referenceOffset(target, opener);
            final int held = segment.get(Atomics.INT, reference);
            if (held > 0) {
                segment.set(Atomics.INT, reference, held - 1);
            }
            reapLocked();
            if (targetNumber(target) == number && referencesLocked(target) == 0) {
                destroyTargetLocked(target);
            }
            return targetNumber(target) != number;
        });
    }

    /**
     * The references of every live opener to the queue pair, after dropping those of dead openers.
     */
    int references(final int target, final int number) {
        return locked(() -> {
            reapLocked();
            return targetNumber(target) == number ? referencesLocked(target) : 0;
        });
    }

    /**
     * The queue pair's state code, or -1 if it no longer exists.
     */
    int state(final int target, final int number) {
        return locked(() -> targetNumber(target) == number
            ? segment.get(Atomics.INT, XrcDomainDescriptor.targetOffset(target) + TARGET_STATE_OFFSET) : -1);
    }

    /**
     * Move the queue pair to {@code state} if it is in one of {@code allowed}, and report {@code event} (if not null)
     * to every handle if the state changed.
     *
     * @return the state it was in.
     * @throws IllegalStateException if it no longer exists or the move is not allowed from its state.
     */
    QueuePairState transition(final int target, final int number, final QueuePairState state,
        final EnumSet<QueuePairState> allowed, final QueuePairEvent event) {
        return locked(() -> {
            if (targetNumber(target) != number) {
                throw new IllegalStateException("XRC target queue pair " + number + " no longer exists");
            }
            final long entry = XrcDomainDescriptor.targetOffset(target);
            final QueuePairState current = QueuePairState.fromCode(
                segment.get(Atomics.INT, entry + TARGET_STATE_OFFSET));
            if (!allowed.contains(current)) {
                throw new IllegalStateException("XRC target queue pair " + number + " cannot move from " + current
                    + " to " + state + "; allowed from " + allowed);
            }
            if (state == QueuePairState.RESET || state == QueuePairState.INIT) {
                // a target that starts over is connected to no initiator: the one before fails its next request
                segment.asSlice(entry + TARGET_REMOTE_GID_OFFSET, 16).fill((byte) 0);
                Atomics.setIntVolatile(segment, entry + TARGET_REMOTE_QPN_OFFSET, 0);
            }
            segment.set(Atomics.INT, entry + TARGET_STATE_OFFSET, state.code());
            if (event != null && current != state) {
                final long sequence = eventSequence(target);
                segment.set(Atomics.INT, XrcDomainDescriptor.eventOffset(target, sequence), event.code());
                segment.set(Atomics.LONG, entry + TARGET_EVENT_SEQUENCE_OFFSET, sequence + 1);
            }
            return current;
        });
    }

    /**
     * Connect the queue pair to an XRC initiator and move it from INIT to READY_TO_RECEIVE.
     *
     * @throws IllegalStateException if it no longer exists or is not in INIT.
     */
    void connectTarget(final int target, final int number, final byte[] remoteGid, final int remoteQueuePair,
        final int minRnrTimer) {
        locked(() -> {
            if (targetNumber(target) != number) {
                throw new IllegalStateException("XRC target queue pair " + number + " no longer exists");
            }
            final long entry = XrcDomainDescriptor.targetOffset(target);
            final QueuePairState current = QueuePairState.fromCode(
                segment.get(Atomics.INT, entry + TARGET_STATE_OFFSET));
            if (current != QueuePairState.INIT) {
                throw new IllegalStateException("XRC target queue pair " + number + " cannot move from " + current
                    + " to READY_TO_RECEIVE; allowed from [INIT]");
            }
            MemorySegment.copy(MemorySegment.ofArray(remoteGid), 0, segment, entry + TARGET_REMOTE_GID_OFFSET, 16);
            segment.set(Atomics.INT, entry + XrcDomainDescriptor.TARGET_MIN_RNR_TIMER_OFFSET, minRnrTimer & 31);
            Atomics.setIntVolatile(segment, entry + TARGET_REMOTE_QPN_OFFSET, remoteQueuePair);
            Atomics.setIntVolatile(segment, entry + TARGET_STATE_OFFSET, QueuePairState.READY_TO_RECEIVE.code());
            return null;
        });
    }

    /**
     * Set the remote access a target queue pair allows its initiator (at INIT).
     */
    void setTargetAccess(final int target, final int number, final int accessFlags) {
        locked(() -> {
            if (targetNumber(target) == number) {
                segment.set(Atomics.INT, XrcDomainDescriptor.targetOffset(target)
                    + XrcDomainDescriptor.TARGET_ACCESS_OFFSET, accessFlags);
            }
            return null;
        });
    }

    /**
     * The index of the target queue pair {@code number}, or -1 if the domain has none.
     */
    int targetIndex(final int number) {
        return locked(() -> {
            // an initiator's process may never have joined the domain: map it here
            if (mapLocked(false) != XrcDomainDescriptor.STATE_LIVE) {
                return -1;
            }
            reapLocked();
            return findTarget(number);
        });
    }

    /**
     * The mapping of the registry for reads without the lock (an initiator's checks on every request); valid until
     * this process's use of the registry ends ({@link #release()}).
     *
     * @throws IllegalStateException if the file holds no live domain.
     */
    MemorySegment mappedForReading() {
        return locked(() -> {
            if (mapLocked(false) != XrcDomainDescriptor.STATE_LIVE) {
                throw new IllegalStateException("XRC domain registry " + path + " holds no live domain");
            }
            return segment;
        });
    }

    private long eventSequence(final int target) {
        return segment.get(Atomics.LONG, XrcDomainDescriptor.targetOffset(target) + TARGET_EVENT_SEQUENCE_OFFSET);
    }

    /**
     * Hand events from {@code cursor[0]} on to the handler and advance the cursor; {@code cursor[1]} counts events
     * lost to the ring's wrap.
     */
    int pollEvents(final int target, final int number, final long[] cursor,
        final XrcTargetQueuePair.EventHandler handler, final int limit) {
        final int[] codes = locked(() -> {
            if (targetNumber(target) != number) {
                return new int[0];
            }
            final long sequence = eventSequence(target);
            if (sequence - cursor[0] > XrcDomainDescriptor.EVENT_RING) {
                cursor[1] += sequence - cursor[0] - XrcDomainDescriptor.EVENT_RING;
                cursor[0] = sequence - XrcDomainDescriptor.EVENT_RING;
            }
            final int count = (int) Math.min(limit, sequence - cursor[0]);
            final int[] taken = new int[count];
            for (int i = 0; i < count; i++) {
                taken[i] = segment.get(Atomics.INT, XrcDomainDescriptor.eventOffset(target, cursor[0] + i));
            }
            cursor[0] += count;
            return taken;
        });
        for (final int code : codes) {
            handler.onEvent(number, QueuePairEvent.fromCode(code));
        }
        return codes.length;
    }

    // ----- shared receive queues -----

    /**
     * Register a new shared receive queue of the opener.
     *
     * @return its number.
     * @throws IllegalStateException if the table is full.
     */
    int createSharedReceiveQueue(final int opener, final int blockFile, final int blockIdentity) {
        return locked(() -> {
            reapLocked();
            final int number = allocateNumber(XrcDomainDescriptor.NEXT_SRQ_NUMBER_OFFSET, SRQS,
                XrcRegistry::srqNumberOffset);
            if (number > 0) {
                final long entry = XrcDomainDescriptor.srqOffset(XrcDomainDescriptor.srqIndex(number));
                segment.set(Atomics.INT, entry + SRQ_OPENER_OFFSET, opener);
                segment.set(Atomics.INT, entry + SRQ_BLOCK_FILE_OFFSET, blockFile);
                segment.set(Atomics.INT, entry + SRQ_BLOCK_IDENTITY_OFFSET, blockIdentity);
                segment.set(Atomics.INT, entry + SRQ_NUMBER_OFFSET, number);
                return number;
            }
            throw new IllegalStateException("XRC domain registry " + path + " holds " + SRQS
                + " shared receive queues, the most it can");
        });
    }

    void destroySharedReceiveQueue(final int number) {
        locked(() -> {
            final int entry = findSharedReceiveQueue(number);
            if (entry >= 0) {
                segment.asSlice(XrcDomainDescriptor.srqOffset(entry), XrcDomainDescriptor.SRQ_ENTRY_LENGTH)
                    .fill((byte) 0);
            }
            return null;
        });
    }

    /**
     * Where the XRC shared receive queue {@code number} lives, or null if the domain has none (never created,
     * destroyed, or its device is gone).
     */
    SharedReceiveQueueLocation sharedReceiveQueue(final int number) {
        return locked(() -> {
            if (mapLocked(false) != XrcDomainDescriptor.STATE_LIVE) {
                return null;
            }
            reapLocked();
            final int index = number <= 0 || number > MAX_NUMBER ? -1 : findSharedReceiveQueue(number);
            if (index < 0) {
                return null;
            }
            final long entry = XrcDomainDescriptor.srqOffset(index);
            final int opener = segment.get(Atomics.INT, entry + SRQ_OPENER_OFFSET);
            if (opener < 0 || opener >= OPENERS) {
                throw new IllegalStateException("XRC domain registry " + path + " is corrupt: shared receive queue "
                    + number + " names opener " + opener);
            }
            return new SharedReceiveQueueLocation(gidAt(opener),
                segment.get(Atomics.INT, entry + SRQ_BLOCK_FILE_OFFSET),
                segment.get(Atomics.INT, entry + SRQ_BLOCK_IDENTITY_OFFSET));
        });
    }

    /**
     * An XRC shared receive queue's device, the pooled file of its block there and the block's identity.
     */
    record SharedReceiveQueueLocation(byte[] gid, int blockFile, int blockIdentity) {
    }

    private int findSharedReceiveQueue(final int number) {
        if (number <= 0 || number > MAX_NUMBER) {
            return -1;
        }
        return segment.get(Atomics.INT, srqNumberOffset(number)) == number ? XrcDomainDescriptor.srqIndex(number) : -1;
    }

    /** Where the entry of the XRC shared receive queue {@code number} keeps its number. */
    private static long srqNumberOffset(final int number) {
        return XrcDomainDescriptor.srqOffset(XrcDomainDescriptor.srqIndex(number)) + SRQ_NUMBER_OFFSET;
    }

    /**
     * The next number from the counter at {@code counterOffset} whose entry is free (a number's entry is fixed by
     * the number, {@link XrcDomainDescriptor#targetIndex} and {@link XrcDomainDescriptor#srqIndex}): 24 bits, never
     * 0, not in use. Consecutive numbers have consecutive entries, so the counter is also the cursor of a free entry,
     * and a number comes back only after the counter went round the whole 24-bit space.
     *
     * @param numberOffset where the entry of a number keeps the number it holds (0: free).
     * @return the number, or 0 if all {@code entries} are in use.
     */
    private int allocateNumber(final long counterOffset, final int entries, final IntToLongFunction numberOffset) {
        for (int tries = 0; tries <= entries; tries++) {
            final int number = segment.get(Atomics.INT, counterOffset);
            segment.set(Atomics.INT, counterOffset, number >= MAX_NUMBER || number <= 0 ? 1 : number + 1);
            if (number <= 0 || number > MAX_NUMBER) {
                continue;
            }
            if (segment.get(Atomics.INT, numberOffset.applyAsLong(number)) == 0) {
                return number;
            }
        }
        return 0;
    }

    // ----- reclaiming -----

    /**
     * Delete the registries in {@code base} whose every opener is gone (their processes died). Called when a device
     * opens, as dead device folders are reclaimed then.
     *
     * @return the number deleted.
     */
    static int reclaimUnused(final Path base) {
        int reclaimed = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(base, XrcDomainDescriptor.FILE_PREFIX + "*")) {
            for (final Path file : files) {
                if (reclaimIfUnused(file)) {
                    reclaimed++;
                }
            }
        } catch (final IOException ex) {
            LOG.debug("cannot scan {} for unused XRC domains", base, ex);
        }
        return reclaimed;
    }

    private static boolean reclaimIfUnused(final Path file) {
        final XrcRegistry registry;
        try {
            registry = acquire(file, false);
        } catch (final IOException ex) {
            return false;
        }
        try {
            final boolean deleted = registry.locked(() -> {
                final int state = registry.mapLocked(false);
                if (state == XrcDomainDescriptor.STATE_DELETED) {
                    // its last opener could not unlink it
                    registry.unlinkLocked();
                    return true;
                }
                if (state != XrcDomainDescriptor.STATE_LIVE) {
                    return false;
                }
                registry.reapLocked();
                for (int i = 0; i < OPENERS; i++) {
                    if (registry.openerHandles(i) != 0) {
                        return false;
                    }
                }
                Atomics.setIntVolatile(registry.segment, XrcDomainDescriptor.STATE_OFFSET,
                    XrcDomainDescriptor.STATE_DELETED);
                try {
                    Files.deleteIfExists(file);
                } catch (final IOException ex) {
                    return false;
                }
                return true;
            });
            if (deleted) {
                registry.retire();
                LOG.debug("reclaimed XRC domain registry {}: every opener is gone", file);
            }
            return deleted;
        } finally {
            registry.release();
        }
    }

    /**
     * Diagnostics: target queue pairs created and destroyed in the domain so far.
     */
    long[] targetCounts() {
        return locked(() -> new long[] {segment.get(Atomics.LONG, XrcDomainDescriptor.TARGETS_CREATED_OFFSET),
            segment.get(Atomics.LONG, XrcDomainDescriptor.TARGETS_DESTROYED_OFFSET)});
    }

    @Override
    public String toString() {
        return "XrcRegistry{path=" + path + '}';
    }
}
