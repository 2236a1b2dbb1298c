package io.rdmachannel.nio;

import io.rdmachannel.channel.ConnectionStatistics;
import java.io.IOException;
import java.net.ProtocolFamily;
import java.net.StandardProtocolFamily;
import java.net.SocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Optional;

/**
 * A {@link SocketChannel} over an RDMA byte stream: a drop-in for the JDK's TCP socket channel, usable blocking,
 * non-blocking with an {@link RdmaSelector RDMA selector} (from {@link RdmaSelectorProvider#openSelector()}), and
 * from virtual threads, which park instead of pinning their carrier.
 *
 * <p>It follows the JDK's {@code SocketChannel} contract: the same states, the same checks in the same order, the
 * same exceptions. The differences:
 * <ul>
 *   <li>Addresses: {@link java.net.InetSocketAddress} (IPv4; IPv6 too unless opened for
 *   {@link java.net.StandardProtocolFamily#INET}) and {@link io.rdmachannel.channel.IbSocketAddress}, which is passed
 *   to the engine as is.</li>
 *   <li>{@link #bind} records the local address; the engine binds it when the channel connects, so an address
 *   conflict surfaces from {@code connect} as a {@link java.net.BindException}, and before the connection
 *   {@link #getLocalAddress()} reports the address as given (port 0 for an ephemeral port).</li>
 *   <li>{@code SO_SNDBUF}/{@code SO_RCVBUF} size the send and receive rings when the connection is created:
 *   {@code getOption} returns the value set, the ring is that value clamped to [4 KiB, 1 GiB] and rounded up to a
 *   power of two; set after connecting they have no effect. {@code TCP_NODELAY}, {@code SO_REUSEADDR} and
 *   {@code IP_TOS} are accepted and stored (there is no Nagle algorithm). {@code SO_LINGER} 0 makes close abortive
 *   (the peer sees a reset). See {@link RdmaSocketOptions} for the RDMA options.</li>
 *   <li>A blocking {@code write} always writes every byte (as the JDK's does in blocking mode).</li>
 * </ul>
 * Instances come from {@link #open()} or an {@link RdmaSelectorProvider}; the class cannot be extended outside this
 * package.
 */
public abstract class RdmaSocketChannel extends SocketChannel {

    RdmaSocketChannel(final SelectorProvider provider) {
        super(provider);
    }

    /**
     * What this channel's RDMA connection has done: bytes and messages each way, writes stalled for the peer's
     * credits or for send resources, waits, keepalive probes, completion errors. Cheap enough to call often: it
     * allocates one snapshot and takes the connection's locks only briefly, never making the data path wait on
     * it. Still readable after close, with the final counts.
     *
     * @return the snapshot; empty while the channel is not connected, or when its connection runs over TCP
     *     ({@link RdmaSocketOptions#RDMA_PATH}).
     */
    public abstract Optional<ConnectionStatistics> statistics();

    /**
     * Open an unconnected channel of the shared {@link RdmaSelectorProvider#provider() default provider}.
     *
     * @return the channel, in blocking mode.
     * @throws IOException if an I/O error occurs.
     * @throws UnsupportedOperationException if no stream engine is available.
     */
    public static RdmaSocketChannel open() throws IOException {
        return RdmaSelectorProvider.provider().openSocketChannel(StandardProtocolFamily.INET6, false);
    }

    /**
     * Open an unconnected channel of the default provider for a protocol family.
     *
     * @param family {@link java.net.StandardProtocolFamily#INET} or {@link java.net.StandardProtocolFamily#INET6}.
     * @return the channel, in blocking mode.
     * @throws IOException if an I/O error occurs.
     * @throws UnsupportedOperationException if the family is not supported or no stream engine is available.
     */
    public static RdmaSocketChannel open(final ProtocolFamily family) throws IOException {
        return RdmaSelectorProvider.provider().openSocketChannel(family, false);
    }

    /**
     * Open a channel of the default provider and connect it, in blocking mode. The channel is closed if the connect
     * fails in any way.
     *
     * @param remote the peer's address.
     * @return the connected channel.
     * @throws IOException as {@link SocketChannel#connect(SocketAddress)}.
     */
    public static RdmaSocketChannel open(final SocketAddress remote) throws IOException {
        final RdmaSocketChannel channel = open();
        try {
            channel.connect(remote);
        } catch (final Throwable failure) {
            try {
                channel.close();
            } catch (final Throwable suppressed) {
                failure.addSuppressed(suppressed);
            }
            throw failure;
        }
        return channel;
    }
}
