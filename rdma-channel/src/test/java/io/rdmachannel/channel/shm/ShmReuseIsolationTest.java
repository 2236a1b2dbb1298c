package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.shm.ShmChildProcess.value;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.QueuePairState;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Reused memory between two JVMs: the parent closes a region a child was given and allocates another that the pool
 * backs with the same file; the child, a stale peer that still maps the file and holds the old key, writes to the old
 * key and address. As on an HCA after ibv_dereg_mr, the write completes with REMOTE_ACCESS_ERROR and the new region
 * holds exactly what its owner put there.
 */
class ShmReuseIsolationTest {
    private static final long LENGTH = 4L * ShmProcessPeer.PIECE;

    private Path directory;
    private String previousDirectory;
    private ShmChildProcess child;
    private ShmProcessPeer parent;

    @BeforeEach
    void useFreshDirectory() throws IOException {
        directory = ShmTestDirectories.create();
        previousDirectory = System.setProperty(ShmConfiguration.DIRECTORY_PROP_NAME, directory.toString());
    }

    @AfterEach
    void closeAll() throws Exception {
        try {
            if (child != null) {
                child.close();
            }
            if (parent != null) {
                parent.close();
            }
        } finally {
            if (previousDirectory == null) {
                System.clearProperty(ShmConfiguration.DIRECTORY_PROP_NAME);
            } else {
                System.setProperty(ShmConfiguration.DIRECTORY_PROP_NAME, previousDirectory);
            }
            ShmDirectory.deleteRecursively(directory);
        }
    }

    @Test
    @Timeout(120)
    void shouldFailAStalePeersWriteToAReusedRegionWithRemoteAccessErrorAndTouchNothing() throws Exception {
        child = ShmChildProcess.start(directory, LENGTH);
        final ShmProcessPeer.Endpoint childEndpoint = ShmProcessPeer.Endpoint.parse(child.expect("gid="));
        parent = ShmProcessPeer.open(LENGTH);
        child.send(parent.endpoint().format());
        parent.connect(childEndpoint);
        child.expect("ready");

        // the child reaches the region: its mapping of the parent's file exists from here on
        final String written = value(child.command("fill 1 " + LENGTH, "ok"), "crc");
        assertEquals(written, value(child.command("write " + LENGTH, "ok"), "crc"));
        assertEquals(written, ShmProcessPeer.checksum(parent.memory(), LENGTH));

        final long oldAddress = parent.region().address();
        final int oldKey = parent.region().remoteKey();
        parent.reallocateRegion();
        assertEquals(oldAddress, parent.region().address(), "the pool should back the new region with the same file");
        assertNotEquals(oldKey, parent.region().remoteKey(), "a reused region must get a fresh key");
        for (long i = 0; i < LENGTH; i++) {
            assertEquals(0, parent.memory().get(ValueLayout.JAVA_BYTE, i), "reused memory is zeroed: byte " + i);
        }
        ShmProcessPeer.fill(parent.memory(), 0, LENGTH, 2);
        final String owned = ShmProcessPeer.checksum(parent.memory(), LENGTH);

        final String stale = child.command("write " + LENGTH, "error");
        assertTrue(stale.contains("REMOTE_ACCESS_ERROR"), stale);
        assertEquals(owned, ShmProcessPeer.checksum(parent.memory(), LENGTH), "the stale write touched the region");
        final long deadline = System.nanoTime() + 10_000_000_000L;
        while (parent.queuePair().state() != QueuePairState.ERROR && System.nanoTime() - deadline < 0) {
            Thread.yield();
        }
        assertEquals(QueuePairState.ERROR, parent.queuePair().state(), "a remote access error fails both ends");
        assertEquals(owned, ShmProcessPeer.checksum(parent.memory(), LENGTH));
    }
}
