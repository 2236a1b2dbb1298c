package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.DeviceAttributes;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

class ShmDeviceTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldFindTheShmProviderByName() throws Exception {
        final RdmaProvider provider = RdmaProviders.byName("shm");
        assertInstanceOf(ShmProvider.class, provider);
        assertEquals("shm", provider.name());
        assertTrue(provider.isAvailable());
        assertNull(provider.unavailabilityCause());
        provider.ensureAvailability();
        assertEquals(List.of("shm0"), provider.deviceNames());
        assertTrue(RdmaProviders.all().stream().anyMatch(p -> p instanceof ShmProvider));
    }

    @Test
    void shouldChooseShmByDefaultWhenNoNativeProviderExists() {
        final String saved = System.clearProperty(RdmaProviders.PROVIDER_PROP_NAME);
        try {
            assertInstanceOf(ShmProvider.class, RdmaProviders.defaultProvider());
            System.setProperty(RdmaProviders.PROVIDER_PROP_NAME, "auto");
            assertInstanceOf(ShmProvider.class, RdmaProviders.defaultProvider());
            System.setProperty(RdmaProviders.PROVIDER_PROP_NAME, "shm");
            assertInstanceOf(ShmProvider.class, RdmaProviders.defaultProvider());
            System.setProperty(RdmaProviders.PROVIDER_PROP_NAME, "nosuch");
            final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
                RdmaProviders::defaultProvider);
            assertEquals("no RDMA provider named 'nosuch'; known providers: shm", ex.getMessage());
        } finally {
            if (saved == null) {
                System.clearProperty(RdmaProviders.PROVIDER_PROP_NAME);
            } else {
                System.setProperty(RdmaProviders.PROVIDER_PROP_NAME, saved);
            }
        }
    }

    @Test
    void shouldRejectAnUnknownProviderName() {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> RdmaProviders.byName("native"));
        assertEquals("no RDMA provider named 'native'; known providers: shm", ex.getMessage());
    }

    @Test
    void shouldRejectAnUnknownDeviceName() {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> ShmFixture.provider().openDevice("mlx5_0"));
        assertEquals("the shm provider has no device named 'mlx5_0'; it offers shm0", ex.getMessage());
    }

    @Test
    void shouldReportDeviceAttributes() throws Exception {
        final RdmaDevice device = fixture.own(ShmFixture.provider().openDevice("shm0"));
        assertEquals("shm0", device.name());
        assertSame(ShmFixture.provider().getClass(), device.provider().getClass());
        final DeviceAttributes attributes = device.attributes();
        assertEquals(new DeviceAttributes("shm0", 16384, 1 << 20, 16, 1024, 1 << 20, 1L << 40, 1L << 30, 4096,
            EnumSet.of(DeviceCapability.SHARED_RECEIVE_QUEUE, DeviceCapability.RDMA_WRITE_WITH_IMMEDIATE,
                DeviceCapability.SYNCHRONOUS_TRANSFER, DeviceCapability.LOCAL_ACCESS_TO_ANY_MEMORY,
                DeviceCapability.XRC)),
            attributes);
        assertTrue(attributes.has(DeviceCapability.SHARED_RECEIVE_QUEUE));
        assertTrue(attributes.has(DeviceCapability.XRC), "the shm provider has XRC domains and queue pairs");
        assertFalse(attributes.has(DeviceCapability.REMOTE_ACCESS_TO_REGISTERED_MEMORY));
    }

    @Test
    void shouldGiveEachDeviceItsOwnLinkLocalGid() throws Exception {
        final RdmaDevice a = fixture.device();
        final RdmaDevice b = fixture.device();
        final byte[] gidA = a.queryGid(1, 0);
        assertEquals(16, gidA.length);
        assertEquals((byte) 0xfe, gidA[0]);
        assertEquals((byte) 0x80, gidA[1]);
        gidA[5]++;
        assertNotEquals(HexFormat.of().formatHex(gidA), HexFormat.of().formatHex(a.queryGid(1, 0)));
        assertFalse(Arrays.equals(a.queryGid(1, 0), b.queryGid(1, 0)));
        assertArrayEquals(a.queryGid(1, 0), a.queryGid(1, 0));
    }

    @Test
    void shouldRejectABadPortOrGidIndex() throws Exception {
        final RdmaDevice device = fixture.device();
        final IllegalArgumentException port = assertThrows(IllegalArgumentException.class,
            () -> device.queryGid(2, 0));
        assertEquals("the shm device has one port with one GID: portNumber=2, index=0", port.getMessage());
        final IllegalArgumentException index = assertThrows(IllegalArgumentException.class,
            () -> device.queryGid(1, 1));
        assertEquals("the shm device has one port with one GID: portNumber=1, index=1", index.getMessage());
        assertThrows(IllegalArgumentException.class, () -> device.queryGid(0, 0));
    }

    @Test
    void shouldRemoveItsFolderOnClose() throws Exception {
        final RdmaDevice device = ShmFixture.provider().openDevice(null);
        final Path folder = folderOf(device);
        try {
            assertTrue(Files.isDirectory(folder), folder.toString());
            assertTrue(Files.exists(folder.resolve(ShmDirectory.LOCK_FILE)));
            assertTrue(Files.exists(folder.resolve(ShmAgent.SOCKET_FILE)));
        } finally {
            device.close();
        }
        assertFalse(Files.exists(folder), folder.toString());
        device.close();
    }

    @Test
    void shouldNeverReclaimTheFolderOfALiveDevice() throws Exception {
        final RdmaDevice first = fixture.device();
        final Path folder = folderOf(first);
        final RdmaDevice second = fixture.device();
        assertTrue(Files.isDirectory(folder));
        assertFalse(ShmDirectory.reclaimIfDead(folder));
        ShmDirectory.reclaimDead(folder.getParent());
        assertTrue(Files.isDirectory(folder));
        assertTrue(Files.exists(folder.resolve("mrtable")));
        assertTrue(Files.isDirectory(folderOf(second)));
        // the first device still works after the second one scanned the directory
        final ProtectionDomain pd = fixture.own(first.allocateProtectionDomain());
        fixture.own(pd.allocate(64, 0));
    }

    @Test
    @Timeout(30)
    void shouldKeepItsFolderLockedForOtherProcessesWhenAnotherDeviceOpens() throws Exception {
        final RdmaDevice first = fixture.device();
        final Path folder = folderOf(first);
        fixture.device();
        final String java = ProcessHandle.current().info().command().orElseThrow();
        final java.lang.Process probe = new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"),
            ShmReclaimProbe.class.getName(), folder.toString()).redirectErrorStream(true).start();
        final String output = new String(probe.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertEquals(0, probe.waitFor());
        assertEquals("false", output);
        assertTrue(Files.exists(folder.resolve("mrtable")));
    }

    @Test
    void shouldRefuseToCloseWithOpenChildren() throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = device.allocateProtectionDomain();
        final String gid = HexFormat.of().formatHex(device.queryGid(1, 0));
        final IllegalStateException ex = assertThrows(IllegalStateException.class, device::close);
        assertEquals("shm device " + gid + " still has 1 open protection domains, completion queues, readiness"
            + " sources or XRC domains: close them first", ex.getMessage());
        pd.close();
        device.close();
    }

    @Test
    void shouldRefuseUseAfterClose() throws Exception {
        final RdmaDevice device = ShmFixture.provider().openDevice(null);
        final String gid = HexFormat.of().formatHex(device.queryGid(1, 0));
        device.close();
        final String message = "shm device " + gid + " is closed";
        assertEquals(message, assertThrows(IllegalStateException.class,
            device::allocateProtectionDomain).getMessage());
        assertEquals(message, assertThrows(IllegalStateException.class,
            device::createReadinessSource).getMessage());
        assertEquals(message, assertThrows(IllegalStateException.class,
            () -> device.createCompletionQueue(1, null, 0)).getMessage());
        assertEquals(message, assertThrows(IllegalStateException.class,
            () -> device.queryGid(1, 0)).getMessage());
    }

    static Path folderOf(final RdmaDevice device) throws Exception {
        return ShmConfiguration.fromSystemProperties().directory()
            .resolve(HexFormat.of().formatHex(device.queryGid(1, 0)));
    }
}
