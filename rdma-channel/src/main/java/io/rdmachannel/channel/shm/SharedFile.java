package io.rdmachannel.channel.shm;

import java.io.BufferedReader;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A file mapped into memory: created by its owner (mode 0600) or opened by a peer. Closing unmaps; only the owner
 * deletes the file. A pooled file ({@link ShmFilePool}) is named {@code f-<id>} for its whole life, so peers can keep
 * their mapping of it while the owner reuses it.
 */
final class SharedFile implements AutoCloseable {
    static final long PAGE_SIZE = 4096;
    static final String POOLED_PREFIX = "f-";
    private static final Path MAX_MAP_COUNT_FILE = Path.of("/proc/sys/vm/max_map_count");
    /** The kernel's limit of memory mappings per process, or {@link Integer#MAX_VALUE} where it cannot be read. */
    static final int MAX_MAP_COUNT = readMaxMapCount();
    /**
     * The most shm files this process keeps mapped: {@link #MAX_MAP_COUNT} less room for what the JVM maps itself
     * (libraries, heap, thread stacks). Past it a mapping fails with an {@link IOException} that names the limit,
     * rather than the JVM failing a mapping of its own later (a crash). Tests lower it.
     */
    static volatile int mappingBudget = MAX_MAP_COUNT == Integer.MAX_VALUE ? Integer.MAX_VALUE
        : MAX_MAP_COUNT - Math.max(8192, MAX_MAP_COUNT / 8);
    /** Every shm file this process has mapped and not closed. */
    private static final AtomicInteger MAPPED = new AtomicInteger();

    private Path path;
    private final Arena arena;
    private final MemorySegment segment;
    private final boolean owner;
    private final int id;
    private long dirtyLength;

    private SharedFile(final Path path, final Arena arena, final MemorySegment segment, final boolean owner,
        final int id) {
        this.path = path;
        this.arena = arena;
        this.segment = segment;
        this.owner = owner;
        this.id = id;
    }

    /**
     * Create a zero-filled pooled file {@code f-<id>} of {@code length} bytes (a multiple of the page size).
     */
    static SharedFile createPooled(final Path folder, final int id, final long length) throws IOException {
        return create(folder.resolve(pooledName(id)), length, id);
    }

    static String pooledName(final int id) {
        return POOLED_PREFIX + Integer.toHexString(id);
    }

    /**
     * The id of a pooled file from its name, or -1.
     */
    static int pooledId(final String name) {
        if (!name.startsWith(POOLED_PREFIX) || name.length() > POOLED_PREFIX.length() + 8
            || name.length() == POOLED_PREFIX.length()) {
            return -1;
        }
        try {
            final int id = Integer.parseUnsignedInt(name, POOLED_PREFIX.length(), name.length(), 16);
            return id > 0 ? id : -1;
        } catch (final NumberFormatException ex) {
            return -1;
        }
    }

    /**
     * Create a zero-filled file of at least {@code length} bytes (rounded up to a page) and map it.
     */
    static SharedFile create(final Path path, final long length) throws IOException {
        return create(path, length, 0);
    }

    private static SharedFile create(final Path path, final long length, final int id) throws IOException {
        final long size = alignToPage(Math.max(length, 1));
        reserveMapping(path);
        try {
            return createMapped(path, size, id);
        } catch (final IOException | RuntimeException ex) {
            MAPPED.decrementAndGet();
            throw ex;
        }
    }

    private static SharedFile createMapped(final Path path, final long size, final int id) throws IOException {
        Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        final Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            channel.truncate(size);
            return new SharedFile(path, arena, channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena), true, id);
        } catch (final IOException | RuntimeException ex) {
            arena.close();
            Files.deleteIfExists(path);
            throw ex;
        }
    }

    /**
     * Map an existing file of a peer. Only a regular file with no other name: a peer that put a link in its folder
     * (symbolic, or a second name of a file of ours or of any file this user may write) could otherwise make us read
     * and write that file as its memory. The folder is private to this user, so only a process of the same user could
     * swap a file between the check and the open, and such a process can write our memory anyway.
     *
     * @throws NoSuchFileException if the file does not exist.
     * @throws IOException if the file is a link, has more than one name or is not a regular file.
     */
    static SharedFile open(final Path path) throws IOException {
        final Map<String, Object> attributes = Files.readAttributes(path, "unix:nlink,isRegularFile",
            LinkOption.NOFOLLOW_LINKS);
        if (!Boolean.TRUE.equals(attributes.get("isRegularFile")) || !Integer.valueOf(1).equals(
            attributes.get("nlink"))) {
            throw new IOException("shm peer file " + path + " is not a regular file with a single name (link count "
                + attributes.get("nlink") + "): refused");
        }
        reserveMapping(path);
        final Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
            LinkOption.NOFOLLOW_LINKS)) {
            return new SharedFile(path, arena, channel.map(FileChannel.MapMode.READ_WRITE, 0, channel.size(), arena),
                false, pooledId(path.getFileName().toString()));
        } catch (final IOException | RuntimeException ex) {
            arena.close();
            MAPPED.decrementAndGet();
            throw ex;
        }
    }

    /**
     * Count one more mapping, or refuse it past {@link #mappingBudget}.
     */
    private static void reserveMapping(final Path path) throws IOException {
        final int budget = mappingBudget;
        if (MAPPED.incrementAndGet() > budget) {
            final int mapped = MAPPED.decrementAndGet();
            throw new IOException("no room for more shm mappings in this process under vm.max_map_count="
                + MAX_MAP_COUNT + " (" + mapped + " mapped, about 8 per connection): raise it (sysctl -w "
                + "vm.max_map_count=262144) or spread the connections over more processes; cannot map " + path);
        }
    }

    /**
     * The shm files this process has mapped now.
     */
    static int mappedFiles() {
        return MAPPED.get();
    }

    private static int readMaxMapCount() {
        try {
            // a line at a time: procfs files report a size of 0, which whole-file reads may trust
            try (BufferedReader reader = Files.newBufferedReader(MAX_MAP_COUNT_FILE)) {
                final String line = reader.readLine();
                return line == null ? Integer.MAX_VALUE : Integer.parseInt(line.trim());
            }
        } catch (final IOException | RuntimeException ex) {
            return Integer.MAX_VALUE;
        }
    }

    static long alignToPage(final long length) {
        return (length + PAGE_SIZE - 1) & -PAGE_SIZE;
    }

    /**
     * Give the owner's file its final name; peers find it only under that name.
     */
    void renameTo(final Path target) throws IOException {
        Files.move(path, target, StandardCopyOption.ATOMIC_MOVE);
        path = target;
    }

    Path path() {
        return path;
    }

    MemorySegment segment() {
        return segment;
    }

    /**
     * The pooled file's id, 0 for a file that is not pooled.
     */
    int id() {
        return id;
    }

    /**
     * Note that the first {@code length} bytes may have been written: {@link #zero} clears them.
     */
    void markDirty(final long length) {
        dirtyLength = Math.min(segment.byteSize(), Math.max(dirtyLength, length));
    }

    /**
     * Zero what was handed out since the last zeroing; untouched pages of the file stay unallocated.
     */
    void zero() {
        segment.asSlice(0, dirtyLength).fill((byte) 0);
        dirtyLength = 0;
    }

    /**
     * Unmap, and delete the file if this process created it.
     */
    @Override
    public void close() {
        arena.close();
        MAPPED.decrementAndGet();
        if (owner) {
            try {
                Files.deleteIfExists(path);
            } catch (final IOException ignore) {
                // the directory is reclaimed when the device closes or by the next process
            }
        }
    }
}
