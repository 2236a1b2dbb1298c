package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * A file mapped into memory: created by its owner (mode 0600) or opened by a peer. Closing unmaps; only the owner
 * deletes the file.
 */
final class SharedFile implements AutoCloseable {
    static final long PAGE_SIZE = 4096;

    private Path path;
    private final Arena arena;
    private final MemorySegment segment;
    private final boolean owner;

    private SharedFile(final Path path, final Arena arena, final MemorySegment segment, final boolean owner) {
        this.path = path;
        this.arena = arena;
        this.segment = segment;
        this.owner = owner;
    }

    /**
     * Create a zero-filled file of at least {@code length} bytes (rounded up to a page) and map it.
     */
    static SharedFile create(final Path path, final long length) throws IOException {
        final long size = alignToPage(Math.max(length, 1));
        Files.createFile(path, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        final Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            channel.truncate(size);
            return new SharedFile(path, arena, channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena), true);
        } catch (final IOException | RuntimeException ex) {
            arena.close();
            Files.deleteIfExists(path);
            throw ex;
        }
    }

    /**
     * Map an existing file of a peer.
     *
     * @throws NoSuchFileException if the file does not exist.
     */
    static SharedFile open(final Path path) throws IOException {
        final Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            return new SharedFile(path, arena, channel.map(FileChannel.MapMode.READ_WRITE, 0, channel.size(), arena),
                false);
        } catch (final IOException | RuntimeException ex) {
            arena.close();
            throw ex;
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
     * Unmap, and delete the file if this process created it.
     */
    @Override
    public void close() {
        arena.close();
        if (owner) {
            try {
                Files.deleteIfExists(path);
            } catch (final IOException ignore) {
                // the directory is reclaimed when the device closes or by the next process
            }
        }
    }
}
