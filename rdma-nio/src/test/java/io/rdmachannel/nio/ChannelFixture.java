package io.rdmachannel.nio;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.Channel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * A provider over a fresh fake transport, with helpers to make connected pairs; closes everything it made.
 */
final class ChannelFixture implements AutoCloseable {
    final FakeTransport transport;
    final RdmaSelectorProvider provider;
    private final List<Channel> opened = new ArrayList<>();
    private RdmaServerSocketChannel server;

    ChannelFixture() {
        this(64 * 1024);
    }

    ChannelFixture(final int pipeCapacity) {
        transport = new FakeTransport(pipeCapacity);
        provider = new RdmaSelectorProvider(transport);
    }

    <T extends Channel> T track(final T channel) {
        opened.add(channel);
        return channel;
    }

    RdmaSocketChannel socket() throws IOException {
        return track(provider.openSocketChannel());
    }

    RdmaServerSocketChannel server() throws IOException {
        return track(provider.openServerSocketChannel());
    }

    /**
     * A bound server channel shared by the pairs.
     */
    RdmaServerSocketChannel listening() throws IOException {
        if (server == null) {
            server = server();
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
        }
        return server;
    }

    InetSocketAddress serverAddress() throws IOException {
        return (InetSocketAddress) listening().getLocalAddress();
    }

    /**
     * A connected pair: [0] the client, [1] the accepted channel; both blocking.
     */
    SocketChannel[] pair() throws IOException {
        final RdmaSocketChannel client = socket();
        client.connect(serverAddress());
        final SocketChannel accepted = track(listening().accept());
        return new SocketChannel[] {client, accepted};
    }

    @Override
    public void close() throws IOException {
        for (final Channel channel : opened) {
            channel.close();
        }
        transport.close();
    }

    /**
     * Wait for a condition (no bare sleeps): polls with a short park, fails after the timeout.
     */
    static void await(final String what, final BooleanSupplier condition) {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting for " + what);
            }
            LockSupport.parkNanos(200_000);
        }
    }

    /**
     * Wait until a thread is parked (blocked in the code under test).
     */
    static void awaitBlocked(final Thread thread) {
        await(thread.getName() + " to block", () -> {
            final Thread.State state = thread.getState();
            return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING;
        });
    }
}
