package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A connected pair of stream connections on the shm provider for one test: the transport, a listener, the client
 * and the connection the listener accepted, their wakers, and platform threads for the test's tasks. Everything is
 * closed after the test in reverse order (a connection a test closed itself is set to {@code null} by it).
 */
final class StreamPairFixture implements AfterEachCallback {
    final StreamTransport transport = StreamTransports.open(RdmaProviders.byName("shm"));
    final ExecutorService threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
    final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
    final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
    StreamListener listener;
    StreamConnection client;
    StreamConnection server;

    /**
     * Listen on the loopback, connect and accept, with the same options on both ends.
     */
    void connect(final StreamOptions options) throws IOException {
        listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8, options,
            serverWaker);
        client = BlockingStream.connect(transport.connect(listener.localAddress(), null, options, clientWaker),
            clientWaker);
        server = BlockingStream.accept(listener, serverWaker);
    }

    String describe() {
        return "client " + (client == null ? "closed" : client.describe()) + "; server "
            + (server == null ? "closed" : server.describe());
    }

    @Override
    public void afterEach(final ExtensionContext context) {
        if (client != null) {
            client.wakeDirectWaiters();
            client.close();
        }
        if (server != null) {
            server.wakeDirectWaiters();
            server.close();
        }
        if (listener != null) {
            listener.close();
        }
        threads.shutdownNow();
        StreamTransports.close(transport);
    }
}
