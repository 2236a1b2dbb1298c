package io.rdmachannel.interop.contract;

import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ProtocolFamily;
import java.net.SocketOption;
import java.nio.channels.DatagramChannel;
import java.nio.channels.Pipe;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;

/**
 * The shm channels with the two ends of every connection in two JVMs ({@value #NAME}): listeners and the channels
 * they accept are this JVM's real rdmachannel channels; every channel the suite opens with
 * {@link #openSocketChannel()} is a real channel in a child JVM ({@link RemoteChannelHost}) worked through a proxy
 * ({@link RemoteSocketChannel}); selectors ({@link SplitSelector}) take both. So each test of the suite runs with
 * its client in another process: the shm handshake between processes, the agents' links and wake-up frames, the
 * mappings of another process's queue pairs, completion queues and memory, a peer's close and end seen through the
 * link, all with the assertions the JDK's TCP channels pass.
 * <p>
 * What the proxy cannot make remote stays local: the threads. A test's thread blocked in a remote read waits for
 * the child's answer (an interrupt closes the channel here, which closes it there), and a selection waits in the
 * local selector and the child's at once.
 */
final class ProcessesTransport implements ContractTransport {
    /** The transport's name. */
    static final String NAME = "rdma-shm-procs";
    /** The name of its twin in SRQ mode. */
    static final String SRQ_NAME = NAME + "-srq";
    /** The name of its twin in XRC mode. */
    static final String XRC_NAME = NAME + "-xrc";

    private final String name;
    /** The option every channel sets here and in the child ({@code RDMA_SHARED_RECEIVE_QUEUE}, {@code RDMA_XRC}). */
    private final SocketOption<Boolean> mode;
    private final RdmaTransport local;
    private final SelectorProvider split = new SplitProvider();

    /**
     * The transport, or its twin in SRQ mode ({@value #SRQ_NAME}) or XRC mode ({@value #XRC_NAME}): then every
     * channel, here and in the child, sets {@link RdmaSocketOptions#RDMA_SHARED_RECEIVE_QUEUE} (each JVM's
     * connections take their receives from its device's shared receive queue while their peers are in the other JVM)
     * or {@link RdmaSocketOptions#RDMA_XRC} (each connection's initiator sends into the other JVM's XRC queues
     * through a target of the domain both JVMs share).
     *
     * @param mode {@code null}, {@link RdmaSocketOptions#RDMA_SHARED_RECEIVE_QUEUE} or
     *     {@link RdmaSocketOptions#RDMA_XRC}.
     */
    ProcessesTransport(final SocketOption<Boolean> mode) {
        this.mode = mode;
        final RdmaTransport shm = new RdmaTransport(RdmaTransport.SHM, "shm", InetAddress.getLoopbackAddress());
        if (mode == RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE) {
            this.name = SRQ_NAME;
            this.local = shm.inSrqMode(name);
        } else if (mode == RdmaSocketOptions.RDMA_XRC) {
            this.name = XRC_NAME;
            this.local = shm.inXrcMode(name);
        } else {
            this.name = NAME;
            this.local = shm;
        }
    }

    @Override
    public String name() {
        return name;
    }

    /**
     * The provider of this JVM's channels (listeners and accepted channels).
     */
    @Override
    public SelectorProvider provider() {
        return local.provider();
    }

    @Override
    public InetAddress loopbackAddress() {
        return local.loopbackAddress();
    }

    @Override
    public boolean queuesConnectsBeyondBacklog() {
        return local.queuesConnectsBeyondBacklog();
    }

    @Override
    public boolean assignsClientPortAtBind() {
        return local.assignsClientPortAtBind();
    }

    @Override
    public SocketChannel openSocketChannel() throws IOException {
        final SocketChannel channel = split.openSocketChannel();
        if (mode != null) {
            channel.setOption(mode, true);
        }
        return channel;
    }

    @Override
    public ServerSocketChannel openServerSocketChannel() throws IOException {
        return local.openServerSocketChannel();
    }

    @Override
    public Selector openSelector() throws IOException {
        return split.openSelector();
    }

    @Override
    public String toString() {
        return name;
    }

    /**
     * The provider the remote channels report: its selectors take both kinds of channel.
     */
    private final class SplitProvider extends SelectorProvider {
        @Override
        public AbstractSelector openSelector() throws IOException {
            return new SplitSelector(this, local.provider().openSelector());
        }

        @Override
        public SocketChannel openSocketChannel() throws IOException {
            return RemoteSocketChannel.open(this);
        }

        @Override
        public ServerSocketChannel openServerSocketChannel() throws IOException {
            return local.openServerSocketChannel();
        }

        @Override
        public DatagramChannel openDatagramChannel() {
            throw new UnsupportedOperationException("no datagram channels over RDMA");
        }

        @Override
        public DatagramChannel openDatagramChannel(final ProtocolFamily family) {
            throw new UnsupportedOperationException("no datagram channels over RDMA");
        }

        @Override
        public Pipe openPipe() {
            throw new UnsupportedOperationException("no pipes over RDMA");
        }
    }
}
