package io.rdmachannel.demo.bench;

import io.rdmachannel.nio.RdmaServerSocketChannel;
import io.rdmachannel.nio.RdmaSocketChannel;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.StandardSocketOptions;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;

/**
 * The byte streams a benchmark runs over: RDMA channels of this library, and the JDK's TCP and Unix-domain socket
 * channels on this host for comparison.
 */
enum Transport {
    /**
     * {@link RdmaSocketChannel} over the provider of {@code rdmachannel.provider} (shm or native).
     */
    RDMA("rdma") {
        @Override
        ServerSocketChannel listen(final Path socketDirectory, final InetAddress address) throws IOException {
            return RdmaServerSocketChannel.open().bind(new InetSocketAddress(orLoopback(address), 0));
        }

        @Override
        SocketChannel connect(final String address) throws IOException {
            return RdmaSocketChannel.open(inetAddress(address));
        }
    },
    /**
     * The JDK's NIO {@link SocketChannel} over TCP on the loopback interface, with {@code TCP_NODELAY}.
     */
    TCP("tcp") {
        @Override
        ServerSocketChannel listen(final Path socketDirectory, final InetAddress address) throws IOException {
            return ServerSocketChannel.open().bind(new InetSocketAddress(orLoopback(address), 0));
        }

        @Override
        SocketChannel connect(final String address) throws IOException {
            final SocketChannel channel = SocketChannel.open(inetAddress(address));
            channel.setOption(StandardSocketOptions.TCP_NODELAY, true);
            return channel;
        }
    },
    /**
     * The JDK's NIO {@link SocketChannel} over a Unix-domain socket.
     */
    UDS("uds") {
        @Override
        ServerSocketChannel listen(final Path socketDirectory, final InetAddress address) throws IOException {
            return ServerSocketChannel.open(StandardProtocolFamily.UNIX)
                .bind(UnixDomainSocketAddress.of(socketDirectory.resolve("bench.sock")));
        }

        @Override
        SocketChannel connect(final String address) throws IOException {
            return SocketChannel.open(UnixDomainSocketAddress.of(address));
        }
    };

    private final String label;

    Transport(final String label) {
        this.label = label;
    }

    /**
     * The name on the command line and in the results.
     */
    String label() {
        return label;
    }

    /**
     * Open a blocking server channel bound to a free port of {@code address} (the loopback when null; uds ignores
     * it) or a Unix socket in {@code socketDirectory}.
     */
    abstract ServerSocketChannel listen(Path socketDirectory, InetAddress address) throws IOException;

    /**
     * Connect a blocking channel to an address printed by {@link #format(SocketAddress)}.
     */
    abstract SocketChannel connect(String address) throws IOException;

    /**
     * The address of a listening channel as one word: {@code host:port} or a socket path.
     */
    static String format(final SocketAddress address) {
        if (address instanceof InetSocketAddress inet) {
            return inet.getHostString() + ":" + inet.getPort();
        }
        return ((UnixDomainSocketAddress) address).getPath().toString();
    }

    static Transport of(final String label) {
        for (final Transport transport : values()) {
            if (transport.label.equals(label)) {
                return transport;
            }
        }
        throw new IllegalArgumentException("unknown transport '" + label + "'");
    }

    private static InetAddress orLoopback(final InetAddress address) {
        return address != null ? address : InetAddress.getLoopbackAddress();
    }

    static InetSocketAddress inetAddress(final String address) {
        final int colon = address.lastIndexOf(':');
        return new InetSocketAddress(address.substring(0, colon), Integer.parseInt(address.substring(colon + 1)));
    }
}
