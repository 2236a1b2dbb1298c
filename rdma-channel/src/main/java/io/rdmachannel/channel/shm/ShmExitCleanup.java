package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Deletes this process's shared files when the JVM exits normally, for devices and listeners still open then (the
 * JVM-wide stream transport is never closed). Mappings stay valid until the process is gone, so deleting early is
 * harmless. After a crash the next process that opens a device reclaims what is left.
 */
final class ShmExitCleanup {
    private static final Set<Path> PATHS = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().name("rdmachannel-shm-cleanup").unstarted(
            ShmExitCleanup::run));
    }

    private ShmExitCleanup() {
    }

    /**
     * Delete this file or folder at exit unless {@link #forget(Path)} is called first.
     */
    static void deleteAtExit(final Path path) {
        PATHS.add(path);
    }

    static void forget(final Path path) {
        PATHS.remove(path);
    }

    private static void run() {
        for (final Path path : PATHS) {
            try {
                if (Files.isDirectory(path)) {
                    ShmDirectory.deleteRecursively(path);
                } else {
                    Files.deleteIfExists(path);
                }
            } catch (final IOException ignore) {
                // the next process reclaims it
            }
        }
    }
}
