package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.io.UncheckedIOException;

/**
 * The stream transports of this JVM.
 */
public final class StreamTransports {
    /** System property naming the connection manager: {@code shm}, {@code rdma_cm}, {@code oob}; empty for the
     * provider's default. */
    public static final String CONNECTION_MANAGER_PROP_NAME = "rdmachannel.cm";

    private static volatile StreamTransport defaultTransport;

    private StreamTransports() {
    }

    /**
     * The transport over the default provider ({@link RdmaProviders#defaultProvider()}), opened on first use and
     * shared by every channel of the JVM.
     *
     * @return the transport.
     * @throws UncheckedIOException if it cannot be opened.
     * @throws IllegalStateException if the chosen provider is not available.
     */
    public static StreamTransport defaultTransport() {
        StreamTransport transport = defaultTransport;
        if (transport == null) {
            synchronized (StreamTransports.class) {
                transport = defaultTransport;
                if (transport == null) {
                    transport = open(RdmaProviders.defaultProvider());
                    defaultTransport = transport;
                }
            }
        }
        return transport;
    }

    /**
     * Open a new transport over a provider. The caller owns it.
     *
     * @param provider the provider.
     * @return the transport; close it with {@link #close(StreamTransport)}.
     * @throws UncheckedIOException if the connection manager cannot start.
     */
    public static StreamTransport open(final RdmaProvider provider) {
        final String name = System.getProperty(CONNECTION_MANAGER_PROP_NAME, "");
        return open(provider, name.isEmpty() ? null : name);
    }

    /**
     * Open a new transport over a provider with a connection manager: one of the provider's
     * ({@link RdmaProvider#connectionManagerNames()}) or {@code oob}, which every provider has. The caller owns it.
     *
     * @param provider the provider.
     * @param connectionManager the connection manager's name, or {@code null} for the provider's default.
     * @return the transport; close it with {@link #close(StreamTransport)}.
     * @throws UncheckedIOException if the connection manager cannot start.
     * @throws IllegalArgumentException if the provider has no connection manager of that name.
     */
    public static StreamTransport open(final RdmaProvider provider, final String connectionManager) {
        try {
            return new RsocketTransport(provider, connectionManager);
        } catch (final IOException ex) {
            throw new UncheckedIOException("cannot open the stream transport over provider " + provider.name(), ex);
        }
    }

    /**
     * Close a transport opened with {@link #open(RdmaProvider)}; its connections must be closed first.
     *
     * @param transport the transport.
     */
    public static void close(final StreamTransport transport) {
        if (transport instanceof RsocketTransport rsocket) {
            rsocket.close();
        }
    }
}
