package io.rdmachannel.nio;

import java.io.IOException;
import java.net.ProtocolFamily;
import java.net.StandardProtocolFamily;
import java.nio.channels.DatagramChannel;
import java.nio.channels.Pipe;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;
import java.util.Objects;

import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;

/**
 * The {@link SelectorProvider} of RDMA stream channels and their selector.
 *
 * <p>Use it directly ({@link #provider()}, {@link RdmaSocketChannel#open()}, {@link RdmaServerSocketChannel#open()})
 * or make it the JVM's default with
 * {@code -Djava.nio.channels.spi.SelectorProvider=io.rdmachannel.nio.RdmaSelectorProvider}, after which
 * {@code SocketChannel.open()}, {@code ServerSocketChannel.open()} and {@code Selector.open()} return RDMA channels.
 * This jar deliberately ships no {@code META-INF/services} entry: merely being on the class path must not switch
 * every NIO user of the JVM.
 *
 * <p>Only stream channels exist: datagram channels and pipes throw {@link UnsupportedOperationException}, and
 * channels of other providers (such as a JDK pipe) cannot be registered with an RDMA selector
 * ({@link java.nio.channels.IllegalSelectorException}).
 *
 * <p>The no-argument constructor finds the stream engine lazily, when the first channel is opened (never in the
 * constructor: a provider installed as the default must not call back into NIO while the JDK initialises it).
 */
public final class RdmaSelectorProvider extends SelectorProvider {
    private final Object transportLock = new Object();
    private volatile StreamTransport transport;

    /**
     * A provider over the default stream engine, found on first use.
     */
    public RdmaSelectorProvider() {
    }

    /**
     * A provider over a given stream engine (for tests, the contract suite and embedding). The stream package is
     * exported only to this module, so on the module path only code with access to it can call this constructor.
     *
     * @param transport the engine.
     */
    // "exports": StreamTransport's package is exported to this module only, on purpose (it is not public API).
    @SuppressWarnings("exports")
    public RdmaSelectorProvider(final StreamTransport transport) {
        this.transport = Objects.requireNonNull(transport, "transport");
    }

    /**
     * The shared provider over the default stream engine.
     *
     * @return the provider.
     */
    public static RdmaSelectorProvider provider() {
        return Holder.INSTANCE;
    }

    @Override
    public DatagramChannel openDatagramChannel() {
        throw new UnsupportedOperationException(
            "RDMA datagram channels are not supported; use the JDK's DatagramChannel (SelectorProvider of the JDK)");
    }

    @Override
    public DatagramChannel openDatagramChannel(final ProtocolFamily family) {
        Objects.requireNonNull(family, "family");
        return openDatagramChannel();
    }

    @Override
    public Pipe openPipe() {
        throw new UnsupportedOperationException(
            "RDMA pipes are not supported; use the JDK's Pipe, which cannot be registered with an RDMA selector");
    }

    @Override
    public AbstractSelector openSelector() throws IOException {
        return new RdmaSelector(this);
    }

    @Override
    public RdmaServerSocketChannel openServerSocketChannel() throws IOException {
        return new RdmaServerSocketChannelImpl(this, transport(), StandardProtocolFamily.INET6);
    }

    @Override
    public RdmaServerSocketChannel openServerSocketChannel(final ProtocolFamily family) throws IOException {
        return new RdmaServerSocketChannelImpl(this, transport(), checkFamily(family));
    }

    @Override
    public RdmaSocketChannel openSocketChannel() throws IOException {
        return new RdmaSocketChannelImpl(this, transport(), StandardProtocolFamily.INET6);
    }

    @Override
    public RdmaSocketChannel openSocketChannel(final ProtocolFamily family) throws IOException {
        return new RdmaSocketChannelImpl(this, transport(), checkFamily(family));
    }

    private static ProtocolFamily checkFamily(final ProtocolFamily family) {
        Objects.requireNonNull(family, "family");
        if (family != StandardProtocolFamily.INET && family != StandardProtocolFamily.INET6) {
            throw new UnsupportedOperationException("Protocol family not supported: " + family
                + " (RDMA channels support INET and INET6)");
        }
        return family;
    }

    private StreamTransport transport() {
        StreamTransport found = transport;
        if (found == null) {
            synchronized (transportLock) {
                found = transport;
                if (found == null) {
                    found = Objects.requireNonNull(StreamTransports.defaultTransport(), "defaultTransport");
                    transport = found;
                }
            }
        }
        return found;
    }

    @Override
    public String toString() {
        final StreamTransport current = transport;
        return "RdmaSelectorProvider[" + (current == null ? "default engine" : current.providerName()) + "]";
    }

    private static final class Holder {
        static final RdmaSelectorProvider INSTANCE = new RdmaSelectorProvider();
    }
}
