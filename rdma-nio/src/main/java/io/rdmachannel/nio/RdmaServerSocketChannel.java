package io.rdmachannel.nio;

import java.io.IOException;
import java.net.ProtocolFamily;
import java.net.StandardProtocolFamily;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.spi.SelectorProvider;

/**
 * A {@link ServerSocketChannel} that accepts RDMA byte-stream connections as {@link RdmaSocketChannel}s, following
 * the JDK's contract (blocking and non-blocking accept, selection with {@code OP_ACCEPT}, asynchronous close and
 * interruption). Supported options: {@code SO_RCVBUF}, {@code SO_REUSEADDR} (default true, as on Linux) and the
 * {@link RdmaSocketOptions}; accepted channels inherit the receive-ring and RDMA settings. The backlog of
 * {@link #bind(java.net.SocketAddress, int)} defaults to 50 when below 1.
 */
public abstract class RdmaServerSocketChannel extends ServerSocketChannel {

    RdmaServerSocketChannel(final SelectorProvider provider) {
        super(provider);
    }

    /**
     * Open an unbound server channel of the shared {@link RdmaSelectorProvider#provider() default provider}.
     *
     * @return the channel, in blocking mode.
     * @throws IOException if an I/O error occurs.
     * @throws UnsupportedOperationException if no stream engine is available.
     */
    public static RdmaServerSocketChannel open() throws IOException {
        return RdmaSelectorProvider.provider().openServerSocketChannel(StandardProtocolFamily.INET6, false);
    }

    /**
     * Open an unbound server channel of the default provider for a protocol family.
     *
     * @param family {@link java.net.StandardProtocolFamily#INET} or {@link java.net.StandardProtocolFamily#INET6}.
     * @return the channel, in blocking mode.
     * @throws IOException if an I/O error occurs.
     * @throws UnsupportedOperationException if the family is not supported or no stream engine is available.
     */
    public static RdmaServerSocketChannel open(final ProtocolFamily family) throws IOException {
        return RdmaSelectorProvider.provider().openServerSocketChannel(family, false);
    }
}
