package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Fresh shm folders for tests that must not share the default one: under {@code /dev/shm} where it is writable, as
 * the provider's default, else under {@code /tmp}.
 */
public final class ShmTestDirectories {
    private ShmTestDirectories() {
    }

    /**
     * Create an empty folder; the caller deletes it ({@link #delete}).
     *
     * @return the folder.
     * @throws IOException if it cannot be created.
     */
    public static Path create() throws IOException {
        final Path devShm = Path.of("/dev/shm");
        final Path base = Files.isDirectory(devShm) && Files.isWritable(devShm) ? devShm : Path.of("/tmp");
        return Files.createTempDirectory(base, "rdc");
    }

    /**
     * Delete a folder and everything in it.
     *
     * @param directory the folder; nothing happens if it does not exist.
     * @throws IOException if something in it cannot be deleted.
     */
    public static void delete(final Path directory) throws IOException {
        ShmDirectory.deleteRecursively(directory);
    }
}
