package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * The mappings of one peer device's shared files: its memory-region table, and the files of the regions this
 * process has reached. Every value read from the peer's table is validated before use; a peer can never make us
 * touch memory outside a region it registered with the access asked for.
 */
final class PeerNode implements AutoCloseable {
    /** Resolution succeeded. */
    static final int OK = 0;
    /** The key, protection domain, access or bounds did not match a region. */
    static final int ACCESS_ERROR = 1;

    private final String gidHex;
    private final Path folder;
    private final SharedFile table;
    private final int capacity;
    private final AtomicReferenceArray<Mapping> mappings;
    private int references = 1;
    private boolean closed;

    private record Mapping(int key, SharedFile file) {
    }

    /**
     * Where a resolved remote range lives: reused per queue pair, so resolving allocates nothing.
     */
    static final class Cursor {
        MemorySegment segment;
        long offset;
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

    void retain() {
        references++;
    }

    /**
     * @return true when the last reference was released.
     */
    boolean release() {
        return --references == 0;
    }

    /**
     * Resolve {@code length} bytes at {@code address} of the region {@code key}.
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
        if (Atomics.getIntVolatile(entries, entry + MemoryRegionTableDescriptor.KEY_OFFSET) != key) {
            return ACCESS_ERROR;
        }
        final int access = entries.get(Atomics.INT, entry + MemoryRegionTableDescriptor.ACCESS_OFFSET);
        final int domain = entries.get(Atomics.INT, entry + MemoryRegionTableDescriptor.PD_OFFSET);
        final long base = entries.get(Atomics.LONG, entry + MemoryRegionTableDescriptor.ADDRESS_OFFSET);
        final long regionLength = entries.get(Atomics.LONG, entry + MemoryRegionTableDescriptor.LENGTH_OFFSET);
        if (domain != protectionDomain || (access & requiredAccess) != requiredAccess) {
            return ACCESS_ERROR;
        }
        final long offset = address - base;
        if (offset < 0 || regionLength < 0 || offset > regionLength || length > regionLength - offset) {
            return ACCESS_ERROR;
        }
        final SharedFile file = mapping(index, key);
        if (file == null || offset + length > file.segment().byteSize()) {
            return ACCESS_ERROR;
        }
        cursor.segment = file.segment();
        cursor.offset = offset;
        return OK;
    }

    private SharedFile mapping(final int index, final int key) {
        final Mapping current = mappings.get(index);
        if (current != null && current.key() == key) {
            return current.file();
        }
        synchronized (this) {
            if (closed) {
                return null;
            }
            final Mapping again = mappings.get(index);
            if (again != null && again.key() == key) {
                return again.file();
            }
            final SharedFile file;
            try {
                file = SharedFile.open(folder.resolve(MemoryRegionTableDescriptor.fileName(key)));
            } catch (final IOException ex) {
                return null;
            }
            mappings.set(index, new Mapping(key, file));
            if (again != null) {
                // the peer reused the entry: the old region is gone; its mapping may still be read by a racing
                // thread, so it is closed when this peer is released rather than now
                retired(again.file());
            }
            return file;
        }
    }

    private final java.util.List<SharedFile> retiredFiles = new java.util.ArrayList<>();

    private void retired(final SharedFile file) {
        retiredFiles.add(file);
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (int i = 0; i < capacity; i++) {
            final Mapping mapping = mappings.getAndSet(i, null);
            if (mapping != null) {
                closeQuietly(mapping.file());
            }
        }
        retiredFiles.forEach(PeerNode::closeQuietly);
        retiredFiles.clear();
        closeQuietly(table);
    }

    private static void closeQuietly(final SharedFile file) {
        try {
            file.close();
        } catch (final RuntimeException ignore) {
            // a racing reader of a shared arena keeps it open; the mapping goes with the process
        }
    }
}
