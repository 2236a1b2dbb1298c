package io.rdmachannel.interop.contract;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.shm.ShmConfiguration;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.NetworkChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The RDMA channels on one fabric: {@code shm} (the embedded shared-memory provider, over a loopback address),
 * {@code shm-iwarp} (the same provider emulating iWARP, so the stream runs in message mode: no immediate data, the
 * active side sends first), {@code shm-nodes} (listeners on one shm node, clients on another, as two processes),
 * {@code native} (a real device, over an address of its interface, e.g. the soft-RoCE guest's 192.0.2.1), or
 * {@code shm-oob} and {@code native-oob} (shm, or the real device, with the queue pairs connected by the {@code oob}
 * manager's TCP side channel). Each fabric gets one {@link RdmaSelectorProvider} over its own stream transport,
 * shared by the tests.
 */
final class RdmaTransport implements ContractTransport {
    /** The name of the transport on the shm provider. */
    static final String SHM = "rdma-shm";
    /** The name of the transport on the shm provider emulating iWARP. */
    static final String SHM_IWARP = "rdma-shm-iwarp";
    /** The fabric of {@link #SHM_IWARP}: shm devices opened with {@code rdmachannel.shm.transport=iwarp}. */
    static final String IWARP_FABRIC = "shm-iwarp";
    /** The name of the transport whose listeners and clients are on two shm nodes ({@link TwoNodeStreamTransport}). */
    static final String SHM_NODES = "rdma-shm-nodes";
    /** The fabric of {@link #SHM_NODES}. */
    static final String NODES_FABRIC = "shm-nodes";
    /** The name of the transport on the shm provider with the {@code oob} connection manager (a TCP side channel). */
    static final String SHM_OOB = "rdma-shm-oob";
    /** The fabric of {@link #SHM_OOB}. */
    static final String OOB_FABRIC = "shm-oob";
    /** The name of the transport on the native provider. */
    static final String NATIVE = "rdma-native";
    /** The name of the transport on the native provider with the {@code oob} connection manager. */
    static final String NATIVE_OOB = "rdma-native-oob";
    /** The name of the transport on shm with {@code oob}, addressed by GID ({@code ib:[::ffff:127.0.0.1]:port}). */
    static final String SHM_OOB_GID = "rdma-shm-oob-gid";
    /** The name of the transport on the native provider with {@code oob}, addressed by rxe0's GID. */
    static final String NATIVE_OOB_GID = "rdma-native-oob-gid";
    /** The name of the transport on shm in SRQ mode: every channel it opens sets {@code RDMA_SHARED_RECEIVE_QUEUE}. */
    static final String SHM_SRQ = "rdma-shm-srq";
    /** The name of the transport on shm in XRC mode: every channel it opens sets {@code RDMA_XRC}. */
    static final String SHM_XRC = "rdma-shm-xrc";
    /** The name of the transport on the native provider in SRQ mode. */
    static final String NATIVE_SRQ = "rdma-native-srq";
    /** The fabric of {@link #NATIVE_OOB}. */
    static final String NATIVE_OOB_FABRIC = "native-oob";

    private static final Map<String, RdmaSelectorProvider> PROVIDERS = new ConcurrentHashMap<>();

    private final String name;
    private final String fabric;
    private final InetAddress loopback;
    private final boolean byGid;
    private final boolean sharedReceiveQueue;
    private final boolean xrc;

    /**
     * The RDMA channels on a fabric.
     *
     * @param name     the transport's name, for example {@code rdma-shm-ipv6}.
     * @param fabric   the verbs provider, {@code shm} or {@code native}, or {@link #IWARP_FABRIC} or
     *                 {@link #NODES_FABRIC}.
     * @param loopback the address listeners bind to and clients connect to.
     */
    RdmaTransport(final String name, final String fabric, final InetAddress loopback) {
        this(name, fabric, loopback, false);
    }

    /**
     * The RDMA channels on a fabric, their listeners bound by GID when {@code byGid}: the RoCE GID of the address
     * ({@code ::ffff:a.b.c.d}), which the {@code oob} connection manager takes.
     */
    RdmaTransport(final String name, final String fabric, final InetAddress loopback, final boolean byGid) {
        this(name, fabric, loopback, byGid, false);
    }

    private RdmaTransport(final String name, final String fabric, final InetAddress loopback, final boolean byGid,
        final boolean sharedReceiveQueue) {
        this(name, fabric, loopback, byGid, sharedReceiveQueue, false);
    }

    private RdmaTransport(final String name, final String fabric, final InetAddress loopback, final boolean byGid,
        final boolean sharedReceiveQueue, final boolean xrc) {
        this.name = name;
        this.fabric = fabric;
        this.loopback = loopback;
        this.byGid = byGid;
        this.sharedReceiveQueue = sharedReceiveQueue;
        this.xrc = xrc;
    }

    /**
     * The same fabric in XRC mode: every channel this transport opens, listeners and clients, sets
     * {@link RdmaSocketOptions#RDMA_XRC}.
     *
     * @param xrcName the new transport's name.
     * @return a transport sharing this one's provider.
     */
    RdmaTransport inXrcMode(final String xrcName) {
        return new RdmaTransport(xrcName, fabric, loopback, byGid, false, true);
    }

    /**
     * The same fabric in SRQ mode: every channel this transport opens, listeners and clients, sets
     * {@link RdmaSocketOptions#RDMA_SHARED_RECEIVE_QUEUE}, so both ends of each connection take their receives from
     * their device's shared receive queue (one queue for both in this JVM).
     *
     * @param srqName the new transport's name.
     * @return a transport sharing this one's provider.
     */
    RdmaTransport inSrqMode(final String srqName) {
        return new RdmaTransport(srqName, fabric, loopback, byGid, true);
    }

    @Override
    public SocketChannel openSocketChannel() throws IOException {
        return inMode(provider().openSocketChannel());
    }

    @Override
    public ServerSocketChannel openServerSocketChannel() throws IOException {
        return inMode(provider().openServerSocketChannel());
    }

    /** A new channel of this transport, in SRQ mode when the transport is. */
    private <T extends NetworkChannel> T inMode(final T channel) throws IOException {
        if (sharedReceiveQueue) {
            channel.setOption(RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE, true);
        }
        if (xrc) {
            channel.setOption(RdmaSocketOptions.RDMA_XRC, true);
        }
        return channel;
    }

    @Override
    public SocketAddress bindAddress() {
        if (!byGid) {
            return ContractTransport.super.bindAddress();
        }
        final byte[] gid = new byte[IbSocketAddress.GID_LENGTH];
        gid[10] = (byte) 0xff;
        gid[11] = (byte) 0xff;
        System.arraycopy(loopback.getAddress(), 0, gid, 12, 4);
        return IbSocketAddress.of(gid, 0);
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public SelectorProvider provider() {
        return PROVIDERS.computeIfAbsent(fabric, key -> new RdmaSelectorProvider(openStream(key)));
    }

    private static StreamTransport openStream(final String fabric) {
        return switch (fabric) {
            case IWARP_FABRIC -> openIwarp();
            case NODES_FABRIC -> TwoNodeStreamTransport.openShm();
            case OOB_FABRIC -> StreamTransports.open(RdmaProviders.byName("shm"), "oob");
            case NATIVE_OOB_FABRIC -> StreamTransports.open(RdmaProviders.byName("native"), "oob");
            default -> StreamTransports.open(RdmaProviders.byName(fabric));
        };
    }

    /**
     * A stream transport over an shm device emulating iWARP. The setting is read when the device opens, so it is set
     * for the opening only: the other transports of this JVM stay on InfiniBand semantics.
     */
    private static StreamTransport openIwarp() {
        synchronized (RdmaTransport.class) {
            final String previous = System.getProperty(ShmConfiguration.TRANSPORT_PROP_NAME);
            System.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME,
                ShmConfiguration.Transport.IWARP.propertyValue());
            try {
                return StreamTransports.open(RdmaProviders.byName("shm"));
            } finally {
                if (previous == null) {
                    System.clearProperty(ShmConfiguration.TRANSPORT_PROP_NAME);
                } else {
                    System.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME, previous);
                }
            }
        }
    }

    /**
     * Whether this transport runs on the native provider (a real device).
     */
    boolean isNative() {
        return "native".equals(fabric) || NATIVE_OOB_FABRIC.equals(fabric);
    }

    /**
     * Open the provider and run one connection through it (connect, accept, a byte, close) before any test. In the
     * soft-RoCE guest's emulated CPU the first connection of a JVM loads and compiles the whole native path, which
     * took 20 to 40 s there: that belongs to no test's timeout. A failure or a hang (2 minutes) is only reported
     * here; the tests then report it as theirs.
     *
     * @return this.
     */
    RdmaTransport warmedUp() {
        final Thread warmUp = Thread.ofPlatform().daemon().name("warm-up-" + name).start(() -> {
            try (ServerSocketChannel server = provider().openServerSocketChannel();
                SocketChannel client = provider().openSocketChannel()) {
                server.bind(new InetSocketAddress(loopback, 0));
                client.connect(server.getLocalAddress());
                try (SocketChannel accepted = server.accept()) {
                    client.write(ByteBuffer.wrap(new byte[] {1}));
                    accepted.read(ByteBuffer.allocate(1));
                }
            } catch (final IOException | RuntimeException ex) {
                System.err.println("warming up " + name + " failed: " + ex);
            }
        });
        try {
            warmUp.join(Duration.ofMinutes(2));
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        if (warmUp.isAlive()) {
            System.err.println("warming up " + name + " did not finish within 2 minutes");
        }
        return this;
    }

    @Override
    public InetAddress loopbackAddress() {
        return loopback;
    }

    /**
     * As rsockets over rdma_cm: a connection request beyond the backlog is rejected at once.
     */
    @Override
    public boolean queuesConnectsBeyondBacklog() {
        return false;
    }

    /**
     * The engine binds a client's address when it connects (see {@code RdmaSocketChannel}).
     */
    @Override
    public boolean assignsClientPortAtBind() {
        return false;
    }

    /**
     * The shm provider maps a wildcard target to the loopback as the JDK does; a real device has no loopback route.
     */
    @Override
    public boolean connectsWildcardViaLoopback() {
        return !isNative();
    }

    @Override
    public String toString() {
        return name;
    }
}
