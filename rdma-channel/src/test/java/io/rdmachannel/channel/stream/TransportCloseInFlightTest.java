package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.cm.oob.OobConnectionManager;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Closing a transport while one of its connection attempts is in flight (its queue pair, completion queues and
 * memory allocated, the listener not answering yet): the close releases everything and ends the attempt, and throws
 * nothing. It used to close the device contexts first, whose readiness source the attempt's completion queues still
 * used, and fail there, leaving the connection manager and its device open. On the shm provider's own manager and on
 * {@code oob}.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TransportCloseInFlightTest {
    private final CountDownLatch requested = new CountDownLatch(1);
    private final CountDownLatch answer = new CountDownLatch(1);
    private StreamTransport serverTransport;
    private StreamTransport clientTransport;
    private StreamListener listener;

    private void open(final String manager) throws IOException {
        serverTransport = StreamTransports.open(RdmaProviders.byName("shm"), manager);
        clientTransport = StreamTransports.open(RdmaProviders.byName("shm"), manager);
        listener = serverTransport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
            new StreamOptions().requestFilter(request -> {
                requested.countDown();
                try {
                    answer.await(30, TimeUnit.SECONDS);
                } catch (final InterruptedException ex) {
                    Thread.currentThread().interrupt();
                }
                return null;
            }), new BlockingStream.Waker());
    }

    @AfterEach
    void close() {
        answer.countDown();
        listener.close();
        StreamTransports.close(serverTransport);
        StreamTransports.close(clientTransport);
    }

    @ParameterizedTest
    @ValueSource(strings = {"shm", OobConnectionManager.NAME})
    void shouldReleaseAnAttemptInFlightAndCloseCleanly(final String manager) throws Exception {
        open(manager);
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        final StreamConnector attempt = clientTransport.connect(listener.localAddress(), null, new StreamOptions(),
            waker);
        assertTrue(requested.await(10, TimeUnit.SECONDS), "the request never reached the listener");
        final RsocketTransport transport = (RsocketTransport) clientTransport;
        final DeviceContext context = transport.contexts().getFirst();
        assertEquals(1, context.connectionCount(), "the attempt should hold its resources now");

        StreamTransports.close(clientTransport);

        assertEquals(0, context.connectionCount(), "the attempt still holds its resources");
        assertEquals(0, context.device().resources().queuePairs());
        final IOException failed = assertThrows(IOException.class, () -> BlockingStream.connect(attempt, waker));
        System.out.println("the attempt ended with: " + failed);
    }
}
