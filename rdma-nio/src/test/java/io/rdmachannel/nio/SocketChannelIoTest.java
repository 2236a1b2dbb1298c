package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.SocketChannel;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(20)
class SocketChannelIoTest {
    private static final int PIPE = 4096;
    private final ChannelFixture fixture = new ChannelFixture(PIPE);

    @AfterEach
    void close() throws IOException {
        fixture.close();
    }

    /**
     * Run on a new thread, platform or virtual, and hand back the thread and the result.
     */
    private static <T> Running<T> start(final boolean virtual, final java.util.concurrent.Callable<T> task) {
        final FutureTask<T> future = new FutureTask<>(task);
        final Thread thread = virtual ? Thread.ofVirtual().name("test-virtual").start(future)
            : Thread.ofPlatform().name("test-platform").daemon().start(future);
        return new Running<>(thread, future);
    }

    private record Running<T>(Thread thread, Future<T> future) {
        T get() throws Exception {
            return future.get(10, TimeUnit.SECONDS);
        }

        Throwable failure() throws Exception {
            try {
                future.get(10, TimeUnit.SECONDS);
                throw new AssertionError("no failure");
            } catch (final ExecutionException ex) {
                return ex.getCause();
            }
        }
    }

    private static byte[] pattern(final int length) {
        final byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (i * 31 + 7);
        }
        return bytes;
    }

    private static byte[] readFully(final SocketChannel channel, final int length) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(length);
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new IOException("early end of stream at " + buffer.position());
            }
        }
        return buffer.array();
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldWriteEverythingBlockingWhileThePeerReadsSlowly(final boolean virtual) throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final byte[] data = pattern(20 * PIPE + 123);

        final Running<Integer> writer = start(virtual, () -> pair[0].write(ByteBuffer.wrap(data)));

        assertArrayEquals(data, readFully(pair[1], data.length));
        assertEquals(data.length, writer.get());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldReturnFromABlockingReadAsSoonAsOneByteArrives(final boolean virtual) throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final ByteBuffer buffer = ByteBuffer.allocate(100);
        final Running<Integer> reader = start(virtual, () -> pair[1].read(buffer));
        ChannelFixture.awaitBlocked(reader.thread());

        pair[0].write(ByteBuffer.wrap(new byte[] {42}));

        assertEquals(1, reader.get());
        assertEquals(42, buffer.get(0));
    }

    @Test
    void shouldReadZeroAtOnceWithAFullBufferOrNoDataWhenNonBlocking() throws IOException {
        final SocketChannel[] pair = fixture.pair();

        assertEquals(0, pair[1].read(ByteBuffer.allocate(0)));
        pair[1].configureBlocking(false);
        assertEquals(0, pair[1].read(ByteBuffer.allocate(10)));
    }

    @Test
    void shouldWritePartiallyWhenNonBlocking() throws IOException {
        final SocketChannel[] pair = fixture.pair();
        pair[0].configureBlocking(false);

        assertEquals(PIPE, pair[0].write(ByteBuffer.allocate(PIPE + 10)));
        assertEquals(0, pair[0].write(ByteBuffer.allocate(10)));
    }

    @Test
    void shouldReturnEndOfStreamAfterThePeerShutsDownOutputOrCloses() throws IOException {
        final SocketChannel[] pair = fixture.pair();
        pair[0].write(ByteBuffer.wrap(new byte[] {1, 2}));

        pair[0].shutdownOutput();

        assertArrayEquals(new byte[] {1, 2}, readFully(pair[1], 2));
        assertEquals(-1, pair[1].read(ByteBuffer.allocate(1)));
        assertEquals(-1, pair[1].read(ByteBuffer.allocate(1)));
        pair[1].write(ByteBuffer.wrap(new byte[] {3}));
        assertArrayEquals(new byte[] {3}, readFully(pair[0], 1));
        pair[1].close();
        assertEquals(-1, pair[0].read(ByteBuffer.allocate(1)));
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldWakeABlockedReaderWithEndOfStreamOnShutdownInput(final boolean virtual) throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final Running<Integer> reader = start(virtual, () -> pair[1].read(ByteBuffer.allocate(1)));
        ChannelFixture.awaitBlocked(reader.thread());

        pair[1].shutdownInput();

        assertEquals(-1, reader.get());
        assertTrue(pair[1].isOpen());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldFailABlockedWriterWithAsynchronousCloseOnShutdownOutput(final boolean virtual) throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final Running<Integer> writer = start(virtual, () -> pair[0].write(ByteBuffer.allocate(3 * PIPE)));
        ChannelFixture.awaitBlocked(writer.thread());

        pair[0].shutdownOutput();

        assertInstanceOf(AsynchronousCloseException.class, writer.failure());
        assertTrue(pair[0].isOpen());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldWakeABlockedReaderOnCloseAndLetThePeerReadEndOfStream(final boolean virtual) throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final Running<Integer> reader = start(virtual, () -> pair[1].read(ByteBuffer.allocate(1)));
        ChannelFixture.awaitBlocked(reader.thread());

        pair[1].close();

        assertEquals(AsynchronousCloseException.class, reader.failure().getClass());
        assertEquals(-1, pair[0].read(ByteBuffer.allocate(1)));
        ChannelFixture.await("release", () -> fixture.transport.connections.get(1).isReleased());
        assertTrue(fixture.transport.connections.stream().noneMatch(FakeConnection::isAborted));
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldWakeABlockedWriterOnClose(final boolean virtual) throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final Running<Integer> writer = start(virtual, () -> pair[0].write(ByteBuffer.allocate(3 * PIPE)));
        ChannelFixture.awaitBlocked(writer.thread());

        pair[0].close();

        assertEquals(AsynchronousCloseException.class, writer.failure().getClass());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldCloseOnInterruptOfABlockedReadAndKeepTheInterruptStatus(final boolean virtual) throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final Running<Boolean> reader = start(virtual, () -> {
            try {
                pair[1].read(ByteBuffer.allocate(1));
                return false;
            } catch (final ClosedByInterruptException ex) {
                return Thread.currentThread().isInterrupted();
            }
        });
        ChannelFixture.awaitBlocked(reader.thread());

        reader.thread().interrupt();

        assertTrue(reader.get());
        assertFalse(pair[1].isOpen());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldCloseOnInterruptOfABlockedWrite(final boolean virtual) throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final Running<Integer> writer = start(virtual, () -> pair[0].write(ByteBuffer.allocate(3 * PIPE)));
        ChannelFixture.awaitBlocked(writer.thread());

        writer.thread().interrupt();

        assertEquals(ClosedByInterruptException.class, writer.failure().getClass());
        assertFalse(pair[0].isOpen());
    }

    @Test
    void shouldCloseAtOnceWhenInterruptedBeforeARead() throws Exception {
        final SocketChannel[] pair = fixture.pair();

        final Running<Boolean> reader = start(true, () -> {
            Thread.currentThread().interrupt();
            assertThrows(ClosedByInterruptException.class, () -> pair[1].read(ByteBuffer.allocate(1)));
            return Thread.currentThread().isInterrupted();
        });

        assertTrue(reader.get());
        assertFalse(pair[1].isOpen());
    }

    @Test
    void shouldNotBlockAReaderBehindABlockedWriter() throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final Running<Integer> writer = start(true, () -> pair[0].write(ByteBuffer.allocate(3 * PIPE)));
        ChannelFixture.awaitBlocked(writer.thread());
        pair[1].write(ByteBuffer.wrap(new byte[] {9}));

        assertArrayEquals(new byte[] {9}, readFully(pair[0], 1));

        readFully(pair[1], 3 * PIPE);
        assertEquals(3 * PIPE, writer.get());
    }

    @Test
    void shouldScatterAndGatherHeapDirectAndSegmentBuffers() throws Exception {
        final SocketChannel[] pair = fixture.pair();
        final byte[] data = pattern(3 * PIPE);
        try (Arena confined = Arena.ofConfined(); Arena shared = Arena.ofShared()) {
            final IntFunction<ByteBuffer[]> buffers = size -> new ByteBuffer[] {
                ByteBuffer.allocate(size), ByteBuffer.allocateDirect(size),
                confined.allocate(size).asByteBuffer(), shared.allocate(size).asByteBuffer(),
                Arena.global().allocate(size).asByteBuffer(), Arena.ofAuto().allocate(size).asByteBuffer()};
            final ByteBuffer[] sources = buffers.apply(data.length / 6);
            for (int i = 0; i < sources.length; i++) {
                sources[i].put(data, i * (data.length / 6), data.length / 6).flip();
            }
            final Running<byte[]> received = start(false, () -> readFully(pair[1], data.length));

            assertEquals(data.length, pair[0].write(sources, 0, sources.length));

            assertArrayEquals(data, received.get());
            final Running<Integer> echo = start(false, () -> pair[1].write(ByteBuffer.wrap(data)));
            final ByteBuffer[] sinks = buffers.apply(data.length / 6);
            long total = 0;
            while (total < data.length) {
                total += pair[0].read(sinks, 0, sinks.length);
            }
            assertEquals(data.length, echo.get());
            for (int i = 0; i < sinks.length; i++) {
                final byte[] part = new byte[data.length / 6];
                sinks[i].flip().get(part);
                assertArrayEquals(java.util.Arrays.copyOfRange(data, i * part.length, (i + 1) * part.length), part);
            }
        }
    }

    @Test
    void shouldReportAResetAgainAndAgain() throws IOException {
        final SocketChannel[] pair = fixture.pair();
        pair[1].setOption(java.net.StandardSocketOptions.SO_LINGER, 0);

        pair[1].close();

        assertEquals("Connection reset",
            assertThrows(SocketException.class, () -> pair[0].read(ByteBuffer.allocate(1))).getMessage());
        assertEquals("Connection reset",
            assertThrows(SocketException.class, () -> pair[0].read(ByteBuffer.allocate(1))).getMessage());
    }

    @Test
    void shouldBusyPollBeforeParking() throws Exception {
        final SocketChannel[] pair = fixture.pair();
        pair[1].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 1000);
        final Running<Integer> reader = start(true, () -> pair[1].read(ByteBuffer.allocate(1)));
        ChannelFixture.awaitBlocked(reader.thread());

        pair[0].write(ByteBuffer.wrap(new byte[] {1}));

        assertEquals(1, reader.get());
        final FakeConnection accepted = fixture.transport.connections.get(1);
        assertTrue(accepted.spins.get() >= 1, "spins=" + accepted.spins.get());
        assertEquals(0, fixture.transport.connections.get(0).spins.get());
    }

    @Test
    void shouldNotSpinOnTheFirstReadOfANewAcceptedChannelOnceTheFirstReadsBeforeItParked() throws Exception {
        // a ceiling of 1 ms halves to nothing in 10 parked first reads (under 1 us a spin is not worth it)
        for (int connection = 0; connection <= 10; connection++) {
            final SocketChannel[] pair = fixture.pair();
            pair[1].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 1000);
            final FakeConnection accepted = fixture.transport.connections.get(2 * connection + 1);
            final Running<Integer> reader = start(true, () -> pair[1].read(ByteBuffer.allocate(1)));
            ChannelFixture.awaitBlocked(reader.thread());

            pair[0].write(ByteBuffer.wrap(new byte[] {1}));

            assertEquals(1, reader.get());
            assertEquals(connection < 10 ? 1 : 0, accepted.spins.get(), "spins of accepted connection " + connection);
        }
    }

    @Test
    void shouldKeepBusyPollingAReadWhileOnlyWritable() throws Exception {
        final SocketChannel[] pair = fixture.pair();
        pair[1].setOption(RdmaSocketOptions.RDMA_BUSY_POLL, 30_000_000);
        final FakeConnection accepted = fixture.transport.connections.get(1);
        final int armsBefore = fixture.transport.arms.get();
        final Running<Integer> reader = start(true, () -> pair[1].read(ByteBuffer.allocate(1)));
        while (accepted.spins.get() == 0) {
            Thread.onSpinWait();
        }
        // the spin sees the connection writable many times over and keeps going
        accepted.awaitReadyChecks(10_000);

        pair[0].write(ByteBuffer.wrap(new byte[] {1}));

        assertEquals(1, reader.get());
        assertEquals(1, accepted.spins.get(), "a writable connection ended the read's spin early");
        assertEquals(armsBefore, fixture.transport.arms.get(), "the busy-polled read armed and parked");
    }

    @Test
    void shouldConnectBlockingOnAVirtualThreadAndBeWokenByClose() throws Exception {
        final RdmaSocketChannel channel = fixture.socket();
        fixture.transport.unanswered.add(7);
        final Running<Boolean> connector = start(true, () -> channel.connect(
            new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 7)));
        ChannelFixture.awaitBlocked(connector.thread());
        assertTrue(channel.isConnectionPending());

        channel.close();

        assertEquals(AsynchronousCloseException.class, connector.failure().getClass());
    }

    @Test
    void shouldCloseOnInterruptOfABlockedConnect() throws Exception {
        final RdmaSocketChannel channel = fixture.socket();
        fixture.transport.unanswered.add(7);
        final Running<Boolean> connector = start(false, () -> channel.connect(
            new java.net.InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), 7)));
        ChannelFixture.awaitBlocked(connector.thread());

        connector.thread().interrupt();

        assertEquals(ClosedByInterruptException.class, connector.failure().getClass());
        assertFalse(channel.isOpen());
    }
}
