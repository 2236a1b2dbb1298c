package io.rdmachannel.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;
import java.util.List;

import org.junit.jupiter.api.Test;

/**
 * What holds on any machine: the provider is found, loads without the libraries, and says why it is unavailable.
 */
class NativeProviderTest {
    private static final List<String> PROVIDER_CLASSES = List.of(
        "io.rdmachannel.ffm.NativeProvider",
        "io.rdmachannel.ffm.NativeDevice",
        "io.rdmachannel.ffm.InlineProbe",
        "io.rdmachannel.ffm.NativeProtectionDomain",
        "io.rdmachannel.ffm.NativeMemoryRegion",
        "io.rdmachannel.ffm.NativeCompletionQueue",
        "io.rdmachannel.ffm.NativeWorkCompletion",
        "io.rdmachannel.ffm.NativeReadinessSource",
        "io.rdmachannel.ffm.NativeQueuePair",
        "io.rdmachannel.ffm.NativeSendWorkRequest",
        "io.rdmachannel.ffm.NativeReceiveWorkRequest",
        "io.rdmachannel.ffm.NativeSharedReceiveQueue",
        "io.rdmachannel.ffm.VerbsConstants");

    @Test
    void shouldBeFoundByServiceLoader() {
        RdmaProvider provider = RdmaProviders.byName(NativeProvider.NAME);

        assertInstanceOf(NativeProvider.class, provider);
        assertEquals("native", provider.name());
    }

    @Test
    void shouldLoadEveryProviderClass() throws Exception {
        for (String name : PROVIDER_CLASSES) {
            Class.forName(name, true, getClass().getClassLoader());
        }
    }

    @Test
    void shouldReportTheUnavailabilityCauseOfTheBindings() {
        RdmaProvider provider = RdmaProviders.byName(NativeProvider.NAME);

        assertEquals(RdmaNative.isAvailable(), provider.isAvailable());
        assertSame(RdmaNative.unavailabilityCause(), provider.unavailabilityCause());
    }

    @Test
    void shouldRefuseToOpenDevicesWhenUnavailable() throws Exception {
        RdmaProvider provider = new NativeProvider();
        assumeFalse(provider.isAvailable(), "this machine has RDMA devices");

        IllegalStateException error = assertThrows(IllegalStateException.class, () -> provider.openDevice(null));

        assertSame(provider.unavailabilityCause(), error.getCause());
        assertEquals("RDMA provider 'native' is not available: " + provider.unavailabilityCause().getMessage(),
            error.getMessage());
        assertEquals(List.of(), provider.deviceNames());
    }

    @Test
    void shouldLeaveShmTheDefaultWhenUnavailable() {
        assumeFalse(RdmaNative.isAvailable(), "this machine has RDMA devices");
        assumeFalse(System.getProperty(RdmaProviders.PROVIDER_PROP_NAME) != null, "a provider is chosen explicitly");

        assertEquals("shm", RdmaProviders.defaultProvider().name());
    }

    @Test
    void shouldConvertPathMtus() {
        assertEquals(1, VerbsConstants.mtuCode(256));
        assertEquals(3, VerbsConstants.mtuCode(1024));
        assertEquals(5, VerbsConstants.mtuCode(4096));
        assertEquals(1024, VerbsConstants.mtuBytes(3));
        assertEquals(0, VerbsConstants.mtuBytes(0));
        assertFalse(VerbsConstants.mtuBytes(6) > 0);
        assertTrue(VerbsConstants.mtuBytes(5) == 4096);
    }
}
