package io.rdmachannel.demo;

import io.rdmachannel.nio.RdmaSelectorProvider;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;

/**
 * A process with one RDMA connection open for {@link StatTest}: it connects to itself, sends {@link #BYTES} bytes,
 * prints {@link #READY} and keeps the connection until its standard input ends.
 */
public final class StatPeer {
    /** Printed once the connection carried its bytes. */
    static final String READY = "ready";
    /** What the client sends to the server. */
    static final int BYTES = 5000;

    private StatPeer() {
    }

    /**
     * Run the peer.
     *
     * @param args none.
     * @throws IOException if the connection fails.
     */
    public static void main(final String[] args) throws IOException {
        final RdmaSelectorProvider provider = RdmaSelectorProvider.provider();
        try (ServerSocketChannel listener = provider.openServerSocketChannel()
            .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            SocketChannel client = provider.openSocketChannel();
            SocketChannel accepted = accept(client, listener)) {
            client.write(ByteBuffer.allocate(BYTES));
            final ByteBuffer in = ByteBuffer.allocate(BYTES);
            while (in.hasRemaining() && accepted.read(in) >= 0) {
                // until every byte is in
            }
            System.out.println(READY);
            System.out.flush();
            while (System.in.read() >= 0) {
                // hold the connection until the test closes our input
            }
        }
    }

    private static SocketChannel accept(final SocketChannel client, final ServerSocketChannel listener)
        throws IOException {
        client.connect(listener.getLocalAddress());
        return listener.accept();
    }
}
