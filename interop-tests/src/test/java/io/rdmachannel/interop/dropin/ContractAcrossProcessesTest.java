package io.rdmachannel.interop.dropin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.nio.RdmaSelectorProvider;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.util.zip.CRC32;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Stream behaviour with the two ends in two JVMs, run on the JDK's TCP channels (the oracle) and on rdmachannel with
 * the same assertions: the far end is {@link ContractPeer}, an unmodified program in a child JVM (with rdmachannel
 * installed JVM-wide for the RDMA run), and this JVM's end is blocking or non-blocking with a {@link Selector}. Every
 * connection goes through the shm provider's agents, its links between processes, the mappings of another process's
 * memory and the wake-ups across processes. The contract suite runs its every test that way too, on the transport
 * {@code rdma-shm-procs} (its clients in a child JVM, driven through proxies); this test keeps the far end an
 * unmodified program with rdmachannel installed JVM-wide.
 *
 * <p>{@code rdmachannel.dropin.address} is the address the far end listens on (default 127.0.0.1; an address of the
 * RDMA device's interface on the native provider).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ContractAcrossProcessesTest {
    private static final String ADDRESS = System.getProperty("rdmachannel.dropin.address", "127.0.0.1");
    private static final long SECONDS = 60;
    private static final int ECHO_BYTES = 3 << 20;
    private static final long STALL_CAP = 1L << 30;

    private static ChildJvm tcpPeer;
    private static ChildJvm rdmaPeer;
    private static int tcpPort;
    private static int rdmaPort;

    /** Both far ends, started once: every test makes its own connection to one of them. */
    @BeforeAll
    static void startPeers() throws Exception {
        tcpPeer = ChildJvm.start(ContractPeer.class, false, List.of(), ADDRESS);
        rdmaPeer = ChildJvm.start(ContractPeer.class, true, List.of(), ADDRESS);
        tcpPort = Integer.parseInt(tcpPeer.expect("LISTENING ", SECONDS).split(" ")[1]);
        rdmaPort = Integer.parseInt(rdmaPeer.expect("LISTENING ", SECONDS).split(" ")[1]);
    }

    @AfterAll
    static void stopPeers() throws IOException {
        if (rdmaPeer != null) {
            rdmaPeer.close();
        }
        if (tcpPeer != null) {
            tcpPeer.close();
        }
    }

    static Stream<Arguments> cases() {
        final List<Arguments> cases = new ArrayList<>();
        for (final boolean rdma : new boolean[] {false, true}) {
            for (final boolean selector : new boolean[] {false, true}) {
                cases.add(Arguments.of(rdma ? "rdma" : "jdk-tcp", selector ? "selector" : "blocking"));
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void shouldEchoEveryByteInOrderAndEndAfterTheFarEndsShutdown(final String transport, final String mode)
        throws Exception {
        try (End end = connect(transport, mode, 'E')) {
            final CompletableFuture<Long> sent = CompletableFuture.supplyAsync(() -> {
                try {
                    final long crc = end.writeRandom(ECHO_BYTES, 5);
                    end.channel.shutdownOutput();
                    return crc;
                } catch (final IOException ex) {
                    throw new IllegalStateException(ex);
                }
            });
            final CRC32 received = new CRC32();
            assertEquals(ECHO_BYTES, end.readToEnd(received), end::describe);
            assertEquals(sent.get(SECONDS, TimeUnit.SECONDS), received.getValue(), end::describe);
            assertEquals(-1, end.read(ByteBuffer.allocate(1)), "end of stream again");
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void shouldDeliverEverythingAFarEndWroteBeforeItClosed(final String transport, final String mode)
        throws Exception {
        final int count = (1 << 20) + 7;
        try (End end = connect(transport, mode, 'W', count)) {
            end.expectPattern(count);
            assertEquals(-1, end.read(ByteBuffer.allocate(16)), end::describe);
            assertEquals(-1, end.read(ByteBuffer.allocate(16)), "end of stream again");
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void shouldKeepTheOtherDirectionOpenAfterTheFarEndShutsItsOutputDown(final String transport, final String mode)
        throws Exception {
        final int count = 300_001;
        try (End end = connect(transport, mode, 'H', count)) {
            end.expectPattern(count);
            assertEquals(-1, end.read(ByteBuffer.allocate(16)), end::describe);
            final int back = 500_000 + (mode.length() << 4) + transport.length();
            final long crc = end.writeRandom(back, 3);
            end.channel.shutdownOutput();
            assertEquals("RECEIVED " + back + " " + crc, end.peer.expect("RECEIVED " + back + " ", SECONDS));
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void shouldHoldWritesWhileTheFarEndDoesNotReadAndLoseNothing(final String transport, final String mode)
        throws Exception {
        try (End end = connect(transport, mode, 'S')) {
            final long total;
            final long crc;
            if (end.selector != null) {
                // non-blocking: writes take what fits and then nothing; the channel is not writable until the far
                // end reads, and then it is, through the selector
                final CRC32 sum = new CRC32();
                final Random random = new Random(17);
                final ByteBuffer chunk = ByteBuffer.allocate(64 * 1024);
                long written = 0;
                int n;
                do {
                    random.nextBytes(chunk.array());
                    chunk.clear();
                    n = end.channel.write(chunk);
                    sum.update(chunk.array(), 0, n);
                    written += n;
                } while (n > 0 && written < STALL_CAP);
                assertTrue(written < STALL_CAP, "wrote " + written + " bytes to a far end that reads nothing");
                assertEquals(0, end.selectNow(SelectionKey.OP_WRITE), "writable while the far end reads nothing: "
                    + end.describe());
                end.peer.send("DRAIN");
                assertEquals(1, end.select(SelectionKey.OP_WRITE), "never writable after the far end read: "
                    + end.describe());
                final ByteBuffer more = ByteBuffer.allocate(100_000);
                random.nextBytes(more.array());
                sum.update(more.array());
                end.writeFully(more);
                total = written + more.capacity();
                crc = sum.getValue();
            } else {
                // blocking: a write larger than every buffer on the way waits for the far end, then completes
                total = 48L << 20;
                final CompletableFuture<Long> writer = CompletableFuture.supplyAsync(() -> {
                    try {
                        return end.writeRandom(total, 11);
                    } catch (final IOException ex) {
                        throw new IllegalStateException(ex);
                    }
                });
                Thread.sleep(300);
                assertFalse(writer.isDone(), "48 MiB written to a far end that reads nothing: " + end.describe());
                end.peer.send("DRAIN");
                crc = writer.get(SECONDS, TimeUnit.SECONDS);
            }
            end.channel.shutdownOutput();
            assertEquals("RECEIVED " + total + " " + crc, end.peer.expect("RECEIVED " + total + " ", SECONDS),
                end::describe);
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void shouldFailWritesOnceTheFarEndClosed(final String transport, final String mode) throws Exception {
        try (End end = connect(transport, mode, 'W', 0)) {
            assertEquals(-1, end.read(ByteBuffer.allocate(16)), end::describe);
            // TCP takes the first writes and fails once the far end's reset is back; either way a write fails
            final ByteBuffer chunk = ByteBuffer.allocate(4096);
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            final IOException failed = assertThrows(IOException.class, () -> {
                while (System.nanoTime() < deadline) {
                    end.writeFully(chunk.clear());
                    Thread.sleep(1);
                }
            }, end::describe);
            // the JDK's channels: a plain IOException with the errno's words (EPIPE, or ECONNRESET if the reset
            // arrives during the write)
            assertEquals(IOException.class, failed.getClass(), () -> failed + ": " + end.describe());
            assertTrue(List.of("Broken pipe", "Connection reset by peer").contains(failed.getMessage()),
                () -> failed + ": " + end.describe());
        }
    }

    // ----- this JVM's end -----

    private static End connect(final String transport, final String mode, final char role, final int... count)
        throws Exception {
        final boolean rdma = "rdma".equals(transport);
        final SelectorProvider provider = rdma ? RdmaSelectorProvider.provider()
            : RdmaSelectorProvider.platformProvider();
        final ChildJvm peer = rdma ? rdmaPeer : tcpPeer;
        final SocketChannel channel = provider.openSocketChannel();
        final End end = new End(peer, channel, "selector".equals(mode) ? provider : null);
        try {
            end.connect(new InetSocketAddress(ADDRESS, rdma ? rdmaPort : tcpPort));
            if (rdma) {
                assertTrue(channel.toString().contains("path=rdma:"), "not over RDMA: " + end.describe());
            }
            peer.expect("ACCEPTED ", SECONDS);
            final ByteBuffer header = ByteBuffer.allocate(5).put((byte) role);
            for (final int n : count) {
                header.putInt(n);
            }
            end.writeFully(header.flip());
            return end;
        } catch (final Exception | AssertionError ex) {
            end.close();
            throw ex;
        }
    }

    /** One connection, blocking, or non-blocking with one selector for reads and one for writes. */
    private static final class End implements AutoCloseable {
        private final ChildJvm peer;
        private final SocketChannel channel;
        private final Selector selector;
        private final Selector writeSelector;

        End(final ChildJvm peer, final SocketChannel channel, final SelectorProvider selectors) throws IOException {
            this.peer = peer;
            this.channel = channel;
            this.selector = selectors == null ? null : selectors.openSelector();
            this.writeSelector = selectors == null ? null : selectors.openSelector();
        }

        void connect(final InetSocketAddress address) throws IOException {
            if (selector == null) {
                channel.connect(address);
                return;
            }
            channel.configureBlocking(false);
            if (!channel.connect(address)) {
                final SelectionKey key = channel.register(selector, SelectionKey.OP_CONNECT);
                if (selector.select(TimeUnit.SECONDS.toMillis(SECONDS)) == 0) {
                    throw new AssertionError("connect never completed: " + describe());
                }
                selector.selectedKeys().clear();
                assertTrue(channel.finishConnect(), describe());
                key.interestOps(0);
            }
        }

        /** A read that waits for at least one byte or the end of stream. */
        int read(final ByteBuffer buffer) throws IOException {
            if (selector == null) {
                return channel.read(buffer);
            }
            int n;
            while ((n = channel.read(buffer)) == 0) {
                if (select(SelectionKey.OP_READ) == 0) {
                    throw new AssertionError("no byte and no end of stream within " + SECONDS + " s: " + describe());
                }
            }
            return n;
        }

        void writeFully(final ByteBuffer buffer) throws IOException {
            while (buffer.hasRemaining()) {
                if (channel.write(buffer) == 0 && selector != null && select(SelectionKey.OP_WRITE) == 0) {
                    throw new AssertionError("not writable within " + SECONDS + " s: " + describe());
                }
            }
        }

        /** Write {@code total} random bytes in random-sized writes; their CRC. */
        long writeRandom(final long total, final long seed) throws IOException {
            final Random random = new Random(seed);
            final CRC32 crc = new CRC32();
            final byte[] bytes = new byte[128 * 1024];
            long written = 0;
            while (written < total) {
                final int size = (int) Math.min(total - written, 1 + random.nextInt(bytes.length));
                random.nextBytes(bytes);
                crc.update(bytes, 0, size);
                writeFully(ByteBuffer.wrap(bytes, 0, size));
                written += size;
            }
            return crc.getValue();
        }

        long readToEnd(final CRC32 crc) throws IOException {
            final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
            long total = 0;
            int n;
            while ((n = read(buffer.clear())) >= 0) {
                crc.update(buffer.flip());
                total += n;
            }
            return total;
        }

        /** Read {@code count} bytes that must be {@link ContractPeer#pattern}'s. */
        void expectPattern(final long count) throws IOException {
            final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
            long position = 0;
            while (position < count) {
                buffer.clear().limit((int) Math.min(buffer.capacity(), count - position));
                final int n = read(buffer);
                assertTrue(n > 0, () -> "end of stream after " + count + " bytes: " + describe());
                buffer.flip();
                for (int i = 0; i < n; i++) {
                    final long at = position + i;
                    final byte got = buffer.get(i);
                    if (got != ContractPeer.pattern(at)) {
                        throw new AssertionError("byte " + at + " is " + got + ", not " + ContractPeer.pattern(at)
                            + ": " + describe());
                    }
                }
                position += n;
            }
        }

        int select(final int ops) throws IOException {
            return select(ops, SECONDS * 1000);
        }

        int selectNow(final int ops) throws IOException {
            return select(ops, -1);
        }

        /**
         * Wait (at most {@code millis}, not at all if negative) for the channel to be ready for {@code ops}, on the
         * write selector for writes and the other one for the rest.
         */
        private int select(final int ops, final long millis) throws IOException {
            final Selector on = ops == SelectionKey.OP_WRITE ? writeSelector : selector;
            SelectionKey key = channel.keyFor(on);
            if (key == null) {
                key = channel.register(on, ops);
            } else {
                key.interestOps(ops);
            }
            final int ready = millis < 0 ? on.selectNow() : on.select(millis);
            on.selectedKeys().clear();
            return ready;
        }

        String describe() {
            return channel + "\n" + peer.describe();
        }

        @Override
        public void close() throws IOException {
            try (channel) {
                if (selector != null) {
                    selector.close();
                    writeSelector.close();
                }
            }
        }
    }
}
