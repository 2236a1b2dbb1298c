package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.spi.RdmaProviders;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The Flight Recorder events of the connection lifecycle, recorded while two shm connections are established and
 * closed, one request is refused by a full backlog and one connect finds no listener; and of a write stall longer than
 * the threshold, not recorded under a longer threshold.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class StreamEventsTest {
    private static final String[] EVENTS = {"io.rdmachannel.ConnectionEstablished",
        "io.rdmachannel.ConnectionClosed", "io.rdmachannel.ConnectionFailed", "io.rdmachannel.ConnectionRejected"};
    private static final String STALLED = "io.rdmachannel.WriteStalled";
    private static final int STALL_MILLIS = 100;

    private StreamTransport transport;
    private Recording recording;

    @BeforeEach
    void open() {
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        recording = new Recording();
        for (final String event : EVENTS) {
            recording.enable(event);
        }
    }

    @AfterEach
    void close() {
        recording.close();
        StreamTransports.close(transport);
    }

    @Test
    void shouldRecordEstablishedClosedRejectedAndFailedConnections() throws Exception {
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
        final InetSocketAddress client;
        final InetSocketAddress server;
        recording.start();
        try (StreamListener listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            1, new StreamOptions(), serverWaker)) {
            server = (InetSocketAddress) listener.localAddress();
            try (StreamConnection connected = BlockingStream.connect(transport.connect(server, null,
                new StreamOptions(), clientWaker), clientWaker)) {
                client = (InetSocketAddress) connected.localAddress();
                // the backlog of one is taken by the connection not yet accepted: the next request is refused
                final StreamConnector refused = transport.connect(server, null, new StreamOptions(), clientWaker);
                assertThrows(IOException.class, () -> BlockingStream.connect(refused, clientWaker));
                try (StreamConnection accepted = BlockingStream.accept(listener, serverWaker)) {
                    BlockingStream.writeFully(connected, ByteBuffer.allocate(1234), clientWaker);
                    assertEquals(1234, readFully(accepted, 1234, serverWaker));
                }
            }
        }
        recording.stop();

        final List<RecordedEvent> events = events();
        final List<RecordedEvent> established = named(events, "io.rdmachannel.ConnectionEstablished");
        assertEquals(2, established.size(), events::toString);
        assertEquals(1, established.stream().filter(e -> e.getBoolean("passive")).count(), events::toString);
        assertTrue(established.stream().allMatch(e -> "shm".equals(e.getString("provider"))), events::toString);

        final List<RecordedEvent> closed = named(events, "io.rdmachannel.ConnectionClosed");
        assertEquals(2, closed.size(), events::toString);
        final RecordedEvent clientClosed = closed.stream()
            .filter(e -> e.getString("local").equals(StreamEvents.text(client))).findFirst().orElseThrow();
        assertEquals(1234, clientClosed.getLong("bytesSent"), clientClosed::toString);
        assertEquals(0, clientClosed.getLong("bytesReceived"), clientClosed::toString);
        assertNull(clientClosed.getString("error"), clientClosed::toString);
        final RecordedEvent serverClosed = closed.get(closed.get(0) == clientClosed ? 1 : 0);
        assertEquals(StreamEvents.text(client), serverClosed.getString("remote"), serverClosed::toString);
        assertEquals(1234, serverClosed.getLong("bytesReceived"), serverClosed::toString);

        final List<RecordedEvent> rejected = named(events, "io.rdmachannel.ConnectionRejected");
        assertEquals(1, rejected.size(), events::toString);
        assertEquals("BACKLOG_FULL", rejected.get(0).getString("reason"));
        assertEquals(StreamEvents.text(server), rejected.get(0).getString("local"));
        assertEquals("127.0.0.1:" + server.getPort(), StreamEvents.text(server));

        final List<RecordedEvent> failed = named(events, "io.rdmachannel.ConnectionFailed");
        assertEquals(1, failed.size(), events::toString);
        assertFalse(failed.get(0).getBoolean("passive"));
        assertEquals(StreamEvents.text(server), failed.get(0).getString("remote"));
    }

    @Test
    void shouldRecordAWriteStalledForThePeersCreditsLongerThanTheThreshold() throws Exception {
        recording.enable(STALLED);
        recording.start();
        final InetSocketAddress client = stallOnce(transport);
        // the same stall under a threshold of an hour is not recorded
        final StreamTransport patient = WithProperty.open(StreamConfiguration.STALL_EVENT_THRESHOLD_PROP_NAME,
            "3600000", () -> StreamTransports.open(RdmaProviders.byName("shm")));
        try {
            stallOnce(patient);
        } finally {
            StreamTransports.close(patient);
        }
        recording.stop();

        final List<RecordedEvent> stalls = named(events(), STALLED);
        assertEquals(1, stalls.size(), stalls::toString);
        final RecordedEvent stall = stalls.get(0);
        assertEquals("peer credits", stall.getString("cause"), stall::toString);
        assertEquals(StreamEvents.text(client), stall.getString("local"), stall::toString);
        assertEquals("shm", stall.getString("provider"), stall::toString);
        assertTrue(stall.getDuration("stallTime").toMillis() >= STALL_MILLIS, stall::toString);
    }

    /**
     * Fill a connection until the peer's credits run out, let it stall {@link #STALL_MILLIS}, then have the peer read
     * it all and write again until something goes out.
     *
     * @return the writer's address.
     */
    @Test
    void shouldRecordTheWordsOfAPolicyRejection() throws Exception {
        final BlockingStream.Waker waker = new BlockingStream.Waker();
        recording.start();
        try (StreamListener listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            4, new StreamOptions().requestFilter(request -> new Rejection(RejectReason.POLICY, "maintenance")),
            waker)) {
            assertThrows(IOException.class, () -> BlockingStream.connect(transport.connect(listener.localAddress(),
                null, new StreamOptions(), waker), waker));
        }
        recording.stop();
        final List<RecordedEvent> rejected = named(events(), "io.rdmachannel.ConnectionRejected");
        assertEquals(1, rejected.size(), rejected::toString);
        assertEquals("POLICY: maintenance", rejected.get(0).getString("reason"));
    }

    private static InetSocketAddress stallOnce(final StreamTransport transport) throws Exception {
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
        try (StreamListener listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            1, new StreamOptions(), serverWaker);
            StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
                new StreamOptions(), clientWaker), clientWaker);
            StreamConnection server = BlockingStream.accept(listener, serverWaker)) {
            final ByteBuffer chunk = ByteBuffer.allocate(64 * 1024);
            int written = 0;
            while (client.write(chunk.clear()) > 0) {
                written += chunk.position();
            }
            // the stall: the peer reads nothing for a while
            Thread.sleep(STALL_MILLIS);
            assertEquals(written, readFully(server, written, serverWaker));
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (client.write(chunk.clear()) == 0 && System.nanoTime() - deadline < 0) {
                Thread.onSpinWait();
            }
            assertTrue(chunk.position() > 0, "the write after the peer read sent nothing");
            return (InetSocketAddress) client.localAddress();
        }
    }

    private List<RecordedEvent> events() throws IOException {
        final Path file = Files.createTempFile("rdmachannel-events", ".jfr");
        try {
            recording.dump(file);
            return RecordingFile.readAllEvents(file);
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static List<RecordedEvent> named(final List<RecordedEvent> events, final String name) {
        return events.stream().filter(e -> e.getEventType().getName().equals(name)).toList();
    }

    private static int readFully(final StreamConnection connection, final int length,
        final BlockingStream.Waker waker) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(length);
        while (buffer.hasRemaining()) {
            if (BlockingStream.read(connection, buffer, waker) < 0) {
                break;
            }
        }
        return buffer.position();
    }
}
