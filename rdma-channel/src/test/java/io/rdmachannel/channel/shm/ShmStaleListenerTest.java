package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Listener sockets that a process which died without closing its listeners left in the shm {@code ports} folder:
 * the next process to open a connection manager deletes them, and never a socket a live listener accepts on, a
 * socket that may be between bind and listen, or anything that is not a socket.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ShmStaleListenerTest {
    private static final FileTime LONG_AGO = FileTime.fromMillis(System.currentTimeMillis() - 60_000);

    private Path directory;
    private Path ports;

    @BeforeEach
    void useFreshDirectory() throws IOException {
        directory = ShmTestDirectories.create();
        ports = Files.createDirectory(directory.resolve("ports"));
    }

    @AfterEach
    void deleteDirectory() throws IOException {
        ShmDirectory.deleteRecursively(directory);
    }

    @Test
    void shouldReclaimTheListenerSocketsOfDeadProcessesWhenAConnectionManagerOpens() throws Exception {
        // a listener socket closed without unlinking its path is what a process killed with SIGKILL leaves behind
        final Path dead = deadSocket("ip_127.0.0.1_40001");
        Files.setLastModifiedTime(dead, LONG_AGO);
        final Path youngDead = deadSocket("ip_127.0.0.1_40002");
        final Path notASocket = Files.writeString(ports.resolve("ip_127.0.0.1_40003"), "x");
        Files.setLastModifiedTime(notASocket, LONG_AGO);
        try (ServerSocketChannel live = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            final Path livePath = ports.resolve("ip_127.0.0.1_40004");
            live.bind(UnixDomainSocketAddress.of(livePath));
            Files.setLastModifiedTime(livePath, LONG_AGO);

            final Properties properties = new Properties(System.getProperties());
            properties.setProperty(ShmConfiguration.DIRECTORY_PROP_NAME, directory.toString());
            final ShmConfiguration configuration = ShmConfiguration.fromProperties(properties);
            final ShmDevice device = ShmDevice.open((ShmProvider) ShmFixture.provider(),
                configuration);
            try (ShmConnectionManager manager = new ShmConnectionManager(device, configuration)) {
                assertEquals("shm", manager.name());
                assertFalse(Files.exists(dead), dead.toString());
                assertTrue(Files.exists(youngDead), "a socket may be between bind and listen: " + youngDead);
                assertTrue(Files.exists(notASocket), notASocket.toString());
                assertTrue(Files.exists(livePath), livePath.toString());
            }
            // the probe of the live listener is an ordinary connection it can accept and drop
            live.configureBlocking(false);
            live.accept().close();
        }
    }

    @Test
    void shouldCountWhatItReclaimsAndSkipWhatIsTooYoung() throws Exception {
        final Path dead = deadSocket("ib_00000000000000000000000000000001_7");
        assertEquals(0, ShmConnectionManager.reclaimStaleListeners(ports, 10_000));
        assertTrue(Files.exists(dead));
        assertEquals(1, ShmConnectionManager.reclaimStaleListeners(ports, 0));
        assertFalse(Files.exists(dead));
        assertEquals(0, ShmConnectionManager.reclaimStaleListeners(directory.resolve("missing"), 0));
    }

    private Path deadSocket(final String name) throws IOException {
        final Path path = ports.resolve(name);
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(path));
        }
        assertTrue(Files.exists(path), path.toString());
        return path;
    }
}
