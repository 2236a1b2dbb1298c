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
     * Something that opens a shm device underneath.
     */
    @FunctionalInterface
    interface Opener<T> {
        T open() throws IOException;
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

    static synchronized <T> T open(final Opener<T> opener) throws IOException {
        final String previous = System.getProperty(ShmConfiguration.TRANSPORT_PROP_NAME);
        System.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME, ShmConfiguration.Transport.IWARP.propertyValue());
        try {
            return opener.open();
        } finally {
            if (previous == null) {
                System.clearProperty(ShmConfiguration.TRANSPORT_PROP_NAME);
            } else {
                System.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME, previous);
            }
        }
    }
}
