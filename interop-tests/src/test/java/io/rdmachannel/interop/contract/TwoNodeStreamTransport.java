package io.rdmachannel.interop.contract;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.ReadinessObserver;
import io.rdmachannel.channel.stream.StreamConnector;
import io.rdmachannel.channel.stream.StreamListener;
import io.rdmachannel.channel.stream.StreamOptions;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;

import java.io.IOException;
import java.net.SocketAddress;

/**
 * A stream transport whose listeners and connectors live on two different shm nodes: listeners on one stream
 * transport (its own connection manager and shm device, with its own GID, agent thread, folder and files),
 * connectors on another. Every connection of the contract suite then crosses nodes the way a connection between two
 * processes does: the handshake over the listener's Unix socket, the agents' links and their wake-up frames, each
 * side mapping the other's queue-pair block, completion queue and memory regions, and a peer's close or end seen
 * through the link. With one transport both ends would share one device, and the shm provider takes its same-device
 * shortcuts (no link, no mapping of a peer's files).
 * <p>
 * What stays shared is the JVM: the process boundary itself (a peer's exit, its files left behind, its PID) is
 * covered by the two-process tests of the {@code dropin} package.
 */
final class TwoNodeStreamTransport implements StreamTransport {

    private final StreamTransport listening;
    private final StreamTransport connecting;

    private TwoNodeStreamTransport(final StreamTransport listening, final StreamTransport connecting) {
        this.listening = listening;
        this.connecting = connecting;
    }

    /**
     * Opens the two nodes on the shm provider. They live as long as the JVM, as the suite's other transports do.
     *
     * @return the transport.
     */
    static TwoNodeStreamTransport openShm() {
        return new TwoNodeStreamTransport(StreamTransports.open(RdmaProviders.byName("shm")),
            StreamTransports.open(RdmaProviders.byName("shm")));
    }

    @Override
    public String providerName() {
        return listening.providerName();
    }

    @Override
    public StreamListener listen(final SocketAddress local, final int backlog, final StreamOptions options,
        final ReadinessObserver observer) throws IOException {
        return listening.listen(local, backlog, options, observer);
    }

    @Override
    public StreamConnector connect(final SocketAddress remote, final SocketAddress local, final StreamOptions options,
        final ReadinessObserver observer) throws IOException {
        return connecting.connect(remote, local, options, observer);
    }
}
