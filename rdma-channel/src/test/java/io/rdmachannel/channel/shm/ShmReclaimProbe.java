package io.rdmachannel.channel.shm;

import java.nio.file.Path;

/**
 * Run in a child JVM by {@link ShmDeviceTest}: another process of the same user trying to reclaim a device folder.
 * Prints {@code true} if it reclaimed the folder.
 */
final class ShmReclaimProbe {
    private ShmReclaimProbe() {
    }

    public static void main(final String[] args) {
        System.out.println(ShmDirectory.reclaimIfDead(Path.of(args[0])));
    }
}
