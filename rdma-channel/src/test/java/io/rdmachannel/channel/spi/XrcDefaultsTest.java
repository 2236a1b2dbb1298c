package io.rdmachannel.channel.spi;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;

class XrcDefaultsTest {
    @Test
    void shouldRefuseXrcDomainsOnADeviceThatHasNone() {
        final RdmaProvider provider = (RdmaProvider) Proxy.newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {RdmaProvider.class}, (proxy, method, args) -> "fake");
        final InvocationHandler handler = (proxy, method, args) -> switch (method.getName()) {
            case "name" -> "fake0";
            case "provider" -> provider;
            default -> InvocationHandler.invokeDefault(proxy, method, args);
        };
        final RdmaDevice device = (RdmaDevice) Proxy.newProxyInstance(getClass().getClassLoader(),
            new Class<?>[] {RdmaDevice.class}, handler);
        final UnsupportedOperationException ex = assertThrows(UnsupportedOperationException.class,
            () -> device.openXrcDomain(Path.of("domain"), true));
        assertEquals("device fake0 of provider fake has no XRC domains", ex.getMessage());
    }

    @Test
    void shouldCountNoXrcObjectsWithTheSixCountConstructor() {
        assertEquals(new DeviceResources(1, 2, 3, 4, 5, 6, 0, 0), new DeviceResources(1, 2, 3, 4, 5, 6));
    }

    @Test
    void shouldMapQueuePairEventCodes() {
        for (final QueuePairEvent event : QueuePairEvent.values()) {
            assertEquals(event, QueuePairEvent.fromCode(event.code()));
        }
        assertEquals(16, QueuePairEvent.LAST_WORK_REQUEST_REACHED.code());
        assertTrue(QueuePairEvent.FATAL.isError());
        assertFalse(QueuePairEvent.LAST_WORK_REQUEST_REACHED.isError());
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> QueuePairEvent.fromCode(99));
        assertEquals("no queue pair event has code=99", ex.getMessage());
    }
}
