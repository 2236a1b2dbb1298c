package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Stream;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The per-user directory of the shared-memory provider. Each open device has a folder named by its GID holding a
 * {@code lock} file that its process keeps locked; the lock vanishes with the process, so a folder whose lock can be
 * taken belongs to a dead process and is reclaimed.
 */
final class ShmDirectory {
    static final String LOCK_FILE = "lock";
    private static final Logger LOG = LoggerFactory.getLogger(ShmDirectory.class);
    private static final Set<PosixFilePermission> PRIVATE_DIRECTORY = PosixFilePermissions.fromString("rwx------");
    /**
     * Folders whose lock this process holds. Their lock file must never be opened again here: closing any descriptor
     * of a file drops every POSIX lock the process holds on it, which would let another process reclaim the folder.
     */
    private static final Pattern DEVICE_FOLDER_NAME = Pattern.compile("[0-9a-f]{32}");
    private static final Set<Path> LOCKED_HERE = ConcurrentHashMap.newKeySet();
    /** Walks of a folder whose entries vanish meanwhile, before its deletion gives up. */
    private static final int DELETE_ATTEMPTS = 3;

    private ShmDirectory() {
    }

    /**
     * Create the base directory with mode 0700, or check that an existing one is private to this user.
     */
    static void ensurePrivate(final Path base) throws IOException {
        try {
            Files.createDirectories(base.getParent());
            Files.createDirectory(base, PosixFilePermissions.asFileAttribute(PRIVATE_DIRECTORY));
        } catch (final FileAlreadyExistsException ignore) {
            // checked below
        }
        if (!Files.isDirectory(base, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("shm provider directory " + base + " is not a directory");
        }
        final Set<PosixFilePermission> permissions = Files.getPosixFilePermissions(base, LinkOption.NOFOLLOW_LINKS);
        if (!permissions.equals(PRIVATE_DIRECTORY)) {
            throw new IOException("shm provider directory " + base + " must have mode 0700 but has "
                + PosixFilePermissions.toString(permissions) + "; fix it or set "
                + ShmConfiguration.DIRECTORY_PROP_NAME);
        }
        final Object owner = Files.getAttribute(base, "unix:uid", LinkOption.NOFOLLOW_LINKS);
        final Path probe = Files.createTempFile(base, "uid", ".probe");
        try {
            final Object self = Files.getAttribute(probe, "unix:uid", LinkOption.NOFOLLOW_LINKS);
            if (!owner.equals(self)) {
                throw new IOException("shm provider directory " + base + " belongs to uid " + owner
                    + ", not to this user (uid " + self + ")");
            }
        } finally {
            Files.deleteIfExists(probe);
        }
    }

    /**
     * Create a device folder (0700) and lock it for the life of this process.
     */
    static FileChannel createAndLock(final Path folder) throws IOException {
        Files.createDirectory(folder, PosixFilePermissions.asFileAttribute(PRIVATE_DIRECTORY));
        final FileChannel channel = FileChannel.open(folder.resolve(LOCK_FILE), StandardOpenOption.CREATE_NEW,
            StandardOpenOption.WRITE, StandardOpenOption.READ);
        try {
            if (channel.tryLock() == null) {
                throw new IOException("cannot lock new shm device folder " + folder);
            }
            LOCKED_HERE.add(folder.toAbsolutePath().normalize());
            ShmExitCleanup.deleteAtExit(folder);
            return channel;
        } catch (final IOException | RuntimeException ex) {
            channel.close();
            deleteRecursively(folder);
            throw ex;
        }
    }

    /**
     * Release a folder locked by {@link #createAndLock} and delete it.
     */
    static void unlockAndDelete(final Path folder, final FileChannel lock) throws IOException {
        try {
            lock.close();
            deleteRecursively(folder);
        } finally {
            LOCKED_HERE.remove(folder.toAbsolutePath().normalize());
            ShmExitCleanup.forget(folder);
        }
    }

    /**
     * Delete the folders of devices whose process has died. Only device folders (named by a GID: 32 hex digits)
     * are considered; anything else in the directory, such as the connection manager's {@code ports}, is left alone.
     *
     * @return the number of folders reclaimed.
     */
    static int reclaimDead(final Path base) {
        int reclaimed = 0;
        try (DirectoryStream<Path> folders = Files.newDirectoryStream(base, ShmDirectory::isDeviceFolderName)) {
            for (final Path folder : folders) {
                if (Files.isDirectory(folder, LinkOption.NOFOLLOW_LINKS) && reclaimIfDead(folder)) {
                    reclaimed++;
                }
            }
        } catch (final IOException ex) {
            LOG.debug("cannot scan {} for dead shm devices", base, ex);
        }
        return reclaimed;
    }

    private static boolean isDeviceFolderName(final Path path) {
        return DEVICE_FOLDER_NAME.matcher(path.getFileName().toString()).matches();
    }

    /**
     * Delete a device folder if no live process holds its lock.
     *
     * @return true if it was deleted.
     */
    static boolean reclaimIfDead(final Path folder) {
        if (LOCKED_HERE.contains(folder.toAbsolutePath().normalize())) {
            return false;
        }
        final Path lockFile = folder.resolve(LOCK_FILE);
        try (FileChannel channel = FileChannel.open(lockFile, StandardOpenOption.WRITE)) {
            final FileLock lock = channel.tryLock();
            if (lock == null) {
                return false;
            }
            try {
                deleteRecursively(folder);
            } finally {
                lock.release();
            }
            LOG.debug("reclaimed shm device folder {} of a dead process", folder);
            return true;
        } catch (final OverlappingFileLockException ex) {
            return false;
        } catch (final NoSuchFileException ex) {
            return reclaimIfAbandoned(folder);
        } catch (final IOException ex) {
            LOG.debug("cannot check shm device folder {}", folder, ex);
            return false;
        }
    }

    /**
     * Whether the device of a folder is open in a live process: this process holds its lock, or another process
     * does. A folder that is gone, or whose lock can be taken, belongs to a closed device or a dead process. The
     * lock is only probed, never kept: closing the probe's descriptor drops no lock of this process, since this
     * process holds none on another process's lock file.
     */
    static boolean isDeviceAlive(final Path folder) {
        if (LOCKED_HERE.contains(folder.toAbsolutePath().normalize())) {
            return true;
        }
        try (FileChannel channel = FileChannel.open(folder.resolve(LOCK_FILE), StandardOpenOption.WRITE)) {
            final FileLock lock = channel.tryLock();
            if (lock == null) {
                return true;
            }
            lock.release();
            return false;
        } catch (final OverlappingFileLockException ex) {
            // another thread of this process is probing it right now
            return true;
        } catch (final NoSuchFileException ex) {
            return false;
        } catch (final IOException ex) {
            LOG.debug("cannot probe shm device folder {}; taken as alive", folder, ex);
            return true;
        }
    }

    private static boolean reclaimIfAbandoned(final Path folder) {
        // a folder without lock file is either being created right now or was left by a crash during creation
        try {
            final long ageMillis = System.currentTimeMillis() - Files.getLastModifiedTime(folder).toMillis();
            if (ageMillis > 60_000) {
                deleteRecursively(folder);
                return true;
            }
        } catch (final IOException ignore) {
            // raced with another reclaimer
        }
        return false;
    }

    /**
     * Make the symbolic link {@code link} to {@code target}, replacing one left there (by an object of the same name
     * that could not remove it, or a name reused since).
     */
    static void linkReplacing(final Path link, final Path target) throws IOException {
        try {
            Files.createSymbolicLink(link, target);
        } catch (final FileAlreadyExistsException ex) {
            Files.deleteIfExists(link);
            Files.createSymbolicLink(link, target);
        }
    }

    static void deleteRecursively(final Path folder) throws IOException {
        for (int attempt = 1;; attempt++) {
            if (!Files.exists(folder, LinkOption.NOFOLLOW_LINKS)) {
                return;
            }
            try (Stream<Path> paths = Files.walk(folder)) {
                for (final Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(path);
                }
                return;
            } catch (final UncheckedIOException ex) {
                // an entry vanished while the folder was walked (its process deletes files as it closes): again
                if (!(ex.getCause() instanceof NoSuchFileException) || attempt == DELETE_ATTEMPTS) {
                    throw ex.getCause();
                }
            }
        }
    }
}
