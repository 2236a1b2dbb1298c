package io.rdmachannel.nio;

import java.io.IOException;
import java.net.ProtocolFamily;
import java.net.StandardProtocolFamily;
import java.nio.channels.Channel;
import java.nio.channels.DatagramChannel;
import java.nio.channels.Pipe;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;
import java.util.Objects;

import io.rdmachannel.channel.internal.PlatformChannels;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;

/**
 * The {@link SelectorProvider} of RDMA stream channels and their selector.
 *
 * <p><b>Explicit use.</b> {@link RdmaSocketChannel#open()}, {@link RdmaServerSocketChannel#open()}, or the methods of
 * a provider that is not the JVM-wide one ({@link #provider()} while the JDK's is the default): the channels are
 * RDMA-only unless {@link RdmaSocketOptions#RDMA_PATH_POLICY} says otherwise.
 *
 * <p><b>Drop-in.</b> Installed as the JVM's default with
 * {@code -Djava.nio.channels.spi.SelectorProvider=io.rdmachannel.nio.RdmaSelectorProvider} (and the JVM flag
 * {@code --add-exports java.base/sun.nio.ch=ALL-UNNAMED}, which lets the library reach the JDK's own provider), an
 * unmodified program's {@code SocketChannel.open()} and {@code ServerSocketChannel.open()} return RDMA channels
 * whose path the destination rules decide per connection (system properties {@code rdmachannel.rules} and
 * {@code rdmachannel.rules.file}, format in the README): with no rules a connect tries RDMA and continues over TCP,
 * inside the same channel, when the peer cannot speak RDMA, and a server channel accepts RDMA and TCP peers on the
 * same port. Every other channel kind (datagram channels, pipes, Unix-domain channels, inherited channels) is the
 * platform's, and the selectors of this provider multiplex RDMA channels and the platform's selectable channels
 * together. This jar deliberately ships no {@code META-INF/services} entry: merely being on the class path must not
 * switch every NIO user of the JVM.
 *
 * <p>The no-argument constructor finds the stream engine lazily, when the first RDMA connection needs it (never in
 * the constructor: a provider installed as the default must not call back into NIO while the JDK initialises it).
 */
public final class RdmaSelectorProvider extends SelectorProvider {
    private final Object transportLock = new Object();
    private volatile StreamTransport transport;
    /** The drop-in's settings, or null for this JVM's (read on first use). */
    private final DropInConfiguration dropIn;
    /** Whether this is the JVM-wide provider: 0 not known yet, 1 yes, -1 no. */
    private volatile int jvmWide;
    /** The first waits of its channels' readers and writers, connected and accepted ({@link #firstWaits}). */
    private final AdaptiveSpin.FirstWaits[] firstWaits = {new AdaptiveSpin.FirstWaits(),
        new AdaptiveSpin.FirstWaits(), new AdaptiveSpin.FirstWaits(), new AdaptiveSpin.FirstWaits()};

    /**
     * A provider over the default stream engine, found on first use.
     */
    public RdmaSelectorProvider() {
        this.dropIn = null;
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
        this(transport, null);
    }

    /**
     * A provider over a given engine with given drop-in settings (tests).
     */
    RdmaSelectorProvider(final StreamTransport transport, final DropInConfiguration dropIn) {
        this.transport = Objects.requireNonNull(transport, "transport");
        this.dropIn = dropIn;
    }

    /**
     * What the first waits of this provider's channels of one kind learned: a new channel's first wait has no history
     * of its own ({@link AdaptiveSpin}).
     *
     * @param accepted the channels a server channel accepted, else those that connected.
     * @param reader their readers, else their writers.
     */
    AdaptiveSpin.FirstWaits firstWaits(final boolean accepted, final boolean reader) {
        return firstWaits[(accepted ? 2 : 0) + (reader ? 1 : 0)];
    }

    /**
     * The shared provider over the default stream engine: the JVM-wide provider when rdmachannel is installed as
     * such, else one shared instance.
     *
     * @return the provider.
     */
    public static RdmaSelectorProvider provider() {
        final SelectorProvider jvmWide = SelectorProvider.provider();
        return jvmWide instanceof RdmaSelectorProvider rdma ? rdma : Holder.INSTANCE;
    }

    /**
     * The platform's own provider (the JDK's), which opens every channel that is not an RDMA stream, also while
     * rdmachannel is the JVM-wide provider.
     *
     * @return the JDK's provider.
     * @throws IllegalStateException if rdmachannel is the JVM-wide provider and the JVM was not started with
     *     {@code --add-exports java.base/sun.nio.ch=ALL-UNNAMED}.
     */
    public static SelectorProvider platformProvider() {
        return PlatformChannels.provider();
    }

    /**
     * A datagram channel of the platform.
     */
    @Override
    public DatagramChannel openDatagramChannel() throws IOException {
        return platformProvider().openDatagramChannel();
    }

    /**
     * A datagram channel of the platform.
     */
    @Override
    public DatagramChannel openDatagramChannel(final ProtocolFamily family) throws IOException {
        return platformProvider().openDatagramChannel(family);
    }

    /**
     * A pipe of the platform.
     */
    @Override
    public Pipe openPipe() throws IOException {
        return platformProvider().openPipe();
    }

    /**
     * A selector for RDMA channels and the platform's selectable channels together.
     */
    @Override
    public AbstractSelector openSelector() throws IOException {
        return new RdmaSelector(this);
    }

    @Override
    public RdmaServerSocketChannel openServerSocketChannel() throws IOException {
        return openServerSocketChannel(StandardProtocolFamily.INET6, isJvmWide());
    }

    /**
     * An RDMA server channel for {@code INET} or {@code INET6}; the platform's Unix-domain server channel for
     * {@code UNIX}.
     */
    @Override
    public ServerSocketChannel openServerSocketChannel(final ProtocolFamily family) throws IOException {
        Objects.requireNonNull(family, "family");
        if (family == StandardProtocolFamily.UNIX) {
            return platformProvider().openServerSocketChannel(family);
        }
        return openServerSocketChannel(checkFamily(family), isJvmWide());
    }

    @Override
    public RdmaSocketChannel openSocketChannel() throws IOException {
        return openSocketChannel(StandardProtocolFamily.INET6, isJvmWide());
    }

    /**
     * An RDMA socket channel for {@code INET} or {@code INET6}; the platform's Unix-domain channel for {@code UNIX}.
     */
    @Override
    public SocketChannel openSocketChannel(final ProtocolFamily family) throws IOException {
        Objects.requireNonNull(family, "family");
        if (family == StandardProtocolFamily.UNIX) {
            return platformProvider().openSocketChannel(family);
        }
        return openSocketChannel(checkFamily(family), isJvmWide());
    }

    /**
     * The platform's inherited channel.
     */
    @Override
    public Channel inheritedChannel() throws IOException {
        return platformProvider().inheritedChannel();
    }

    /**
     * An RDMA socket channel.
     *
     * @param dropIn whether the destination rules decide its path (a channel the JVM-wide provider opened for an
     *     unmodified program), rather than RDMA only.
     */
    RdmaSocketChannel openSocketChannel(final ProtocolFamily family, final boolean dropIn) throws IOException {
        return new RdmaSocketChannelImpl(this, checkFamily(family), dropIn);
    }

    RdmaServerSocketChannel openServerSocketChannel(final ProtocolFamily family, final boolean dropIn)
        throws IOException {
        return new RdmaServerSocketChannelImpl(this, checkFamily(family), dropIn);
    }

    private static ProtocolFamily checkFamily(final ProtocolFamily family) {
        Objects.requireNonNull(family, "family");
        if (family != StandardProtocolFamily.INET && family != StandardProtocolFamily.INET6) {
            throw new UnsupportedOperationException("Protocol family not supported: " + family
                + " (RDMA channels support INET and INET6)");
        }
        return family;
    }

    /**
     * Whether this instance is the JVM-wide provider, so that its channels are the drop-in's. Asked when a channel is
     * opened (not in the constructor, which the JDK runs while it initialises the JVM-wide provider).
     */
    boolean isJvmWide() {
        int known = jvmWide;
        if (known == 0) {
            known = SelectorProvider.provider() == this ? 1 : -1;
            jvmWide = known;
        }
        return known > 0;
    }

    /**
     * The drop-in's settings: rules, fallback timeout, the cache of destinations RDMA could not reach.
     */
    DropInConfiguration dropIn() {
        return dropIn != null ? dropIn : DropInConfiguration.get();
    }

    /**
     * The stream engine, opened on first use.
     *
     * @throws IllegalStateException or {@link java.io.UncheckedIOException} if no engine can be opened.
     */
    StreamTransport transport() {
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
        return "RdmaSelectorProvider[" + (current == null ? "default engine" : current.providerName())
            + (jvmWide > 0 ? ", JVM-wide" : "") + "]";
    }

    private static final class Holder {
        static final RdmaSelectorProvider INSTANCE = new RdmaSelectorProvider();
    }
}
