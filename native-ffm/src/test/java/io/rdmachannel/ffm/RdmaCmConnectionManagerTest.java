package io.rdmachannel.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.spi.RdmaProvider;
import java.net.InetSocketAddress;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The rdma_cm connection manager where it can run without a device: its classes load, the provider names it, and
 * opening it on an unavailable provider fails with the provider's cause. The real thing runs in
 * {@code RdmaCmGuestTest}.
 */
class RdmaCmConnectionManagerTest {
    @Test
    void shouldLoadTheConnectionManagerClasses() throws Exception {
        for (String name : List.of("RdmaCmConnectionManager", "RdmaCmConnectionManager$CmEvent", "RdmaCmListener",
            "RdmaCmAttempt", "CmAddresses")) {
            Class.forName("io.rdmachannel.ffm." + name, true, getClass().getClassLoader());
        }
        assertEquals("rdma_cm", RdmaCmConnectionManager.NAME);
    }

    @Test
    void shouldOfferRdmaCmAsTheDefault() {
        assertEquals(List.of("rdma_cm"), new NativeProvider().connectionManagerNames());
    }

    @Test
    void shouldRefuseUnknownConnectionManagerNames() {
        IllegalArgumentException error = assertThrows(IllegalArgumentException.class,
            () -> new NativeProvider().openConnectionManager("ucx"));

        assertEquals("the native provider has no connection manager named 'ucx'; it offers rdma_cm, and every "
            + "provider offers oob",
            error.getMessage());
    }

    @Test
    void shouldFailToOpenWithTheProvidersCauseWhenUnavailable() {
        RdmaProvider provider = new NativeProvider();
        assumeFalse(provider.isAvailable(), "this machine has RDMA devices");

        IllegalStateException error = assertThrows(IllegalStateException.class,
            () -> provider.openConnectionManager(null));

        assertSame(provider.unavailabilityCause(), error.getCause());
        assertEquals("RDMA provider 'native' is not available: " + provider.unavailabilityCause().getMessage(),
            error.getMessage());
    }

    @Test
    void shouldCheckAddressTypes() {
        assertThrows(UnresolvedAddressException.class,
            () -> CmAddresses.check(InetSocketAddress.createUnresolved("example.invalid", 1)));
        UnsupportedAddressTypeException unix = assertThrows(UnsupportedAddressTypeException.class,
            () -> CmAddresses.check(UnixDomainSocketAddress.of("/tmp/x")));
        assertTrue(unix.getMessage().contains("InetSocketAddress or IbSocketAddress"), unix.getMessage());
        assumeFalse(CmAddresses.hasInfiniBandPort(), "this machine has an InfiniBand port");
        UnsupportedAddressTypeException ib = assertThrows(UnsupportedAddressTypeException.class,
            () -> CmAddresses.check(IbSocketAddress.of(new byte[16], 7471)));
        assertTrue(ib.getMessage().contains("needs an RDMA device with an InfiniBand link layer"), ib.getMessage());
    }

    @Test
    void shouldConvertInetAddressesBothWays() throws Exception {
        try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
            for (InetSocketAddress address : List.of(new InetSocketAddress("192.0.2.1", 7471),
                new InetSocketAddress("0.0.0.0", 0), new InetSocketAddress("2001:db8::1", 65535))) {
                assertEquals(address, CmAddresses.fromNative(CmAddresses.toNative(address, arena)));
            }
            IbSocketAddress ib = IbSocketAddress.of(new byte[] {(byte) 0xfe, (byte) 0x80, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4,
                5, 6, 7, 8}, 7471);
            assertEquals(ib, CmAddresses.fromNative(CmAddresses.toNative(ib, arena)));
        }
    }
}
