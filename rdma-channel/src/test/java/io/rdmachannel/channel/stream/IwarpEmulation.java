package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.shm.ShmConfiguration;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;

/**
 * Opens shm objects whose device emulates iWARP ({@link ShmConfiguration#TRANSPORT_PROP_NAME}), whatever the rest of
 * the JVM uses: the setting is read when a device opens, so it is set for the opening only.
 */
final class IwarpEmulation {
    private IwarpEmulation() {
    }

    /**
     * A stream transport over an iWARP shm device; close it with {@link StreamTransports#close(StreamTransport)}.
     */
    static StreamTransport transport() throws IOException {
        return open(() -> StreamTransports.open(RdmaProviders.byName("shm")));
    }

    /**
     * A connection manager over an iWARP shm device, for a {@link HostilePeer}.
     */
    static ConnectionManager connectionManager() throws IOException {
        return open(() -> RdmaProviders.byName("shm").openConnectionManager(null));
    }

    private static <T> T open(final WithProperty.Opener<T> opener) throws IOException {
        return WithProperty.open(ShmConfiguration.TRANSPORT_PROP_NAME,
            ShmConfiguration.Transport.IWARP.propertyValue(), opener);
    }
}
