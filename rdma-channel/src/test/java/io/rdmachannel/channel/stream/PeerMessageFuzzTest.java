package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.RdmaProviders;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.AfterAll;

/**
 * What a peer sends once connected, chosen by the fuzzer: DATA of any length written anywhere near the ring, any
 * immediate at all, entries written into the engine's target SGL, SENDs without immediate data, controls; between
 * them the engine reads and writes. The engine must either deliver bytes (never more than the DATA messages
 * announced) or fail the connection with an {@link IOException}; any other exception, a hang, or an engine message
 * the watchful peer ({@link HostilePeer}) finds outside the protocol is a finding. The device keeps every access
 * inside the regions the engine registered. Runs its corpus in every build; {@code ./rdmachannel fuzz} fuzzes it.
 */
class PeerMessageFuzzTest {
    // the engine's transport and the peer's connection manager, opened once per test class (JUnit runs the classes
    // one after the other; each closes what it opened)
    private static StreamTransport transport;
    private static ConnectionManager cm;

    StreamTransport openTransport() throws IOException {
        return StreamTransports.open(RdmaProviders.byName("shm"));
    }

    ConnectionManager openConnectionManager() throws IOException {
        return RdmaProviders.byName("shm").openConnectionManager(null);
    }

    private void open() throws IOException {
        synchronized (PeerMessageFuzzTest.class) {
            if (transport == null) {
                transport = openTransport();
                cm = openConnectionManager();
            }
        }
    }

    @AfterAll
    static void close() {
        synchronized (PeerMessageFuzzTest.class) {
            if (transport != null) {
                cm.close();
                StreamTransports.close(transport);
                transport = null;
            }
        }
    }

    @FuzzTest
    void shouldDeliverOrFailWhateverThePeerSends(final FuzzedDataProvider data) throws Exception {
        open();
        try (HostilePeer peer = HostilePeer.listen(cm, HostilePeer.ConnectionDataEditor.NONE)) {
            final BlockingStream.Waker waker = new BlockingStream.Waker();
            try (StreamConnection engine = BlockingStream.connect(transport.connect(peer.address(), null,
                new StreamOptions(), waker), waker)) {
                final PeerConnectionData advertised = peer.awaitEstablished();
                new Exchange(peer, engine, advertised).run(data);
            }
        }
    }

    /**
     * One connection's exchange: the peer's steps, the engine's reads and writes, what was announced and delivered.
     */
    private static final class Exchange {
        private final HostilePeer peer;
        private final StreamConnection engine;
        private final PeerConnectionData advertised;
        private final ByteBuffer in = ByteBuffer.allocate(16 * 1024);
        private final ByteBuffer out = ByteBuffer.allocate(512);
        private long announced;
        private long delivered;
        private boolean peerCut;
        private boolean engineFailed;

        Exchange(final HostilePeer peer, final StreamConnection engine, final PeerConnectionData advertised) {
            this.peer = peer;
            this.engine = engine;
            this.advertised = advertised;
        }

        void run(final FuzzedDataProvider data) {
            final int steps = data.consumeInt(1, 24);
            for (int i = 0; i < steps && !peerCut; i++) {
                step(data);
            }
            // whatever arrived is read, or the connection has failed
            for (int i = 0; i < 64 && !engineFailed; i++) {
                if (read() <= 0) {
                    break;
                }
            }
            assertTrue(delivered <= announced, () -> "the engine delivered " + delivered + " bytes where the peer's "
                + "DATA messages announced " + announced);
        }

        private void step(final FuzzedDataProvider data) {
            switch (data.consumeInt(0, 6)) {
                case 0 -> {
                    // DATA of any length, written at or near the engine's ring, with its key or another
                    final int length = data.consumeInt(0, 1024);
                    final long address = advertised.dataBufferAddress() + data.consumeInt(-64, 64 * 1024);
                    final int key = data.consumeBoolean() ? advertised.dataBufferKey() : data.consumeInt();
                    write(ImmediateData.encode(ImmediateData.DATA, length), address, key, data.consumeBytes(length));
                }
                case 1 -> write(data.consumeInt(), 0, 0, new byte[0]);
                case 2 -> {
                    // an entry of the engine's target SGL, with an SGL message or any other
                    final int index = data.consumeInt(0, advertised.targetSglEntries() + 1);
                    final int immediate = data.consumeBoolean()
                        ? ImmediateData.encode(ImmediateData.SGL, data.consumeInt(0, 0xFFFF)) : data.consumeInt();
                    write(immediate, advertised.targetSglAddress() + (long) index * SgeDescriptor.LENGTH,
                        advertised.targetSglKey(), data.consumeBytes(SgeDescriptor.LENGTH));
                }
                case 3 -> send(data.consumeBytes(data.consumeInt(0, 8)));
                case 4 -> write(ImmediateData.encode(ImmediateData.CTRL, data.consumeInt(0, 7)), 0, 0, new byte[0]);
                case 5 -> read();
                default -> write(data.consumeInt(1, 512));
            }
        }

        private void write(final int immediate, final long address, final int key, final byte[] payload) {
            if (peer.tryWrite(immediate, address, key, payload) != CompletionStatus.SUCCESS) {
                peerCut = true;
            } else {
                announce(immediate);
            }
        }

        /**
         * A SEND of any bytes. In message mode one of 4 bytes is a message like any other (the peer encodes its
         * messages in native order), so what it announces counts.
         */
        private void send(final byte[] payload) {
            if (peer.trySendBytes(payload) != CompletionStatus.SUCCESS) {
                peerCut = true;
            } else if (peer.messageMode() && payload.length == MessageSendDescriptor.LENGTH) {
                announce(MessageSendDescriptor.message(new UnsafeBuffer(payload), 0, ByteOrder.nativeOrder()));
            }
        }

        private void announce(final int message) {
            if (ImmediateData.op(message) == ImmediateData.DATA) {
                announced += ImmediateData.operand(message);
            }
        }

        private int read() {
            if (engineFailed) {
                return -1;
            }
            try {
                final int count = engine.read(in.clear());
                delivered += Math.max(0, count);
                return count;
            } catch (final IOException failed) {
                engineFailed = true;
                return -1;
            }
        }

        private void write(final int length) {
            if (engineFailed) {
                return;
            }
            try {
                engine.write(out.clear().limit(length));
            } catch (final IOException failed) {
                engineFailed = true;
            }
        }
    }
}
