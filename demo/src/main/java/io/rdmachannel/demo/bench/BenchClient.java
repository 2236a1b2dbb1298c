package io.rdmachannel.demo.bench;

import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.RegisteredBuffers;
import io.rdmachannel.nio.RdmaSocketChannel;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.DoubleConsumer;

/**
 * One measurement from the client's side: connect, send the {@link SessionHeader}, run the measured loop over
 * pre-allocated direct buffers, close. The measured loops allocate nothing.
 */
final class BenchClient implements AutoCloseable {
    private static final long PROGRESS_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final int PROGRESS_MASK = 1023;

    private final MessageChannel messages;
    private final DoubleConsumer progress;
    private final boolean registered;

    private BenchClient(final MessageChannel messages, final DoubleConsumer progress, final boolean registered) {
        this.messages = messages;
        this.progress = progress;
        this.registered = registered;
    }

    /**
     * Connect to {@code address} over {@code transport}, announce the session and switch to its mode.
     *
     * @param progress told the share done, from 0 to 1, about once a second during long loops.
     * @param registered write from a {@link RegisteredBuffers} buffer (rdma only).
     */
    static BenchClient connect(final Transport transport, final String address, final SessionHeader header,
        final DoubleConsumer progress, final boolean registered) throws IOException {
        final var channel = transport.connect(address);
        try {
            final ByteBuffer buffer = ByteBuffer.allocate(SessionHeader.LENGTH);
            header.encode(buffer);
            buffer.flip();
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        } catch (final IOException | RuntimeException ex) {
            channel.close();
            throw ex;
        }
        return new BenchClient(MessageChannel.of(channel, header.mode(), header.busyPollMicros()), progress,
            registered && transport == Transport.RDMA);
    }

    /**
     * Connection cycles: connect, announce a one-message latency session, echo {@code message}, close.
     *
     * @param count how many.
     * @param recorder where to store each cycle's phases (as many as it holds), or null for untimed cycles.
     */
    static void cycles(final Transport transport, final String address, final SessionHeader header,
        final ByteBuffer message, final int count, final ChurnPhases.Recorder recorder) throws IOException {
        for (int i = 0; i < count; i++) {
            final long start = System.nanoTime();
            final long connected;
            final long echoed;
            try (BenchClient client = connect(transport, address, header, share -> { }, false)) {
                connected = System.nanoTime();
                message.clear();
                client.messages.writeFully(message);
                message.clear();
                if (!client.messages.readFully(message)) {
                    throw new IOException("end of stream instead of the echo in cycle " + i);
                }
                echoed = System.nanoTime();
            }
            if (recorder != null) {
                recorder.record(i, start, connected, echoed, System.nanoTime());
            }
        }
    }

    /**
     * Ping-pong {@code warmUp + iterations} messages of {@code size} bytes; each carries its number in its first
     * eight bytes (when it has that many), checked when it comes back.
     *
     * @return the timed round trips in nanoseconds, unsorted.
     */
    long[] pingPong(final int size, final int warmUp, final int iterations) throws IOException {
        final ByteBuffer buffer = allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        try {
            return pingPong(buffer, size, warmUp, iterations);
        } finally {
            free(buffer);
        }
    }

    private long[] pingPong(final ByteBuffer buffer, final int size, final int warmUp, final int iterations)
        throws IOException {
        fill(buffer);
        final long[] roundTrips = new long[iterations];
        final int total = warmUp + iterations;
        long lastProgress = System.nanoTime();
        for (int i = 0; i < total; i++) {
            buffer.clear();
            if (size >= Long.BYTES) {
                buffer.putLong(0, i);
            }
            final long start = System.nanoTime();
            messages.writeFully(buffer);
            buffer.clear();
            if (!messages.readFully(buffer)) {
                throw new IOException("end of stream after " + i + " round trips");
            }
            final long end = System.nanoTime();
            if (size >= Long.BYTES && buffer.getLong(0) != i) {
                throw new IOException("round trip " + i + " came back as " + buffer.getLong(0));
            }
            if (i >= warmUp) {
                roundTrips[i - warmUp] = end - start;
            }
            if ((i & PROGRESS_MASK) == 0 && end - lastProgress > PROGRESS_NANOS) {
                lastProgress = end;
                progress.accept((double) i / total);
            }
        }
        return roundTrips;
    }

    /**
     * Write {@code warmUp} messages of {@code size} bytes and wait for the server's acknowledgement, then write
     * {@code count} more and wait for the acknowledgement of those.
     *
     * @return the nanoseconds from the first timed write to the second acknowledgement.
     */
    long stream(final int size, final long warmUp, final long count) throws IOException {
        final ByteBuffer buffer = allocate(size);
        try {
            fill(buffer);
            final ByteBuffer ack = ByteBuffer.allocateDirect(Long.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            if (warmUp > 0) {
                write(buffer, warmUp, 0, warmUp + count);
                awaitAck(ack, warmUp * size);
            }
            final long start = System.nanoTime();
            write(buffer, count, warmUp, warmUp + count);
            awaitAck(ack, count * size);
            return System.nanoTime() - start;
        } finally {
            free(buffer);
        }
    }

    private ByteBuffer allocate(final int size) {
        return registered ? RegisteredBuffers.allocate(size) : ByteBuffer.allocateDirect(size);
    }

    private void free(final ByteBuffer buffer) {
        if (registered) {
            RegisteredBuffers.release(buffer);
        }
    }

    private void write(final ByteBuffer buffer, final long count, final long done, final long total)
        throws IOException {
        long lastProgress = System.nanoTime();
        for (long i = 0; i < count; i++) {
            buffer.clear();
            messages.writeFully(buffer);
            if ((i & PROGRESS_MASK) == 0) {
                final long now = System.nanoTime();
                if (now - lastProgress > PROGRESS_NANOS) {
                    lastProgress = now;
                    progress.accept((double) (done + i) / total);
                }
            }
        }
    }

    private void awaitAck(final ByteBuffer ack, final long bytes) throws IOException {
        ack.clear();
        if (!messages.readFully(ack)) {
            throw new IOException("end of stream instead of the acknowledgement of " + bytes + " bytes");
        }
        if (ack.getLong(0) != bytes) {
            throw new IOException("the server acknowledged " + ack.getLong(0) + " bytes, not " + bytes);
        }
    }

    private static void fill(final ByteBuffer buffer) {
        for (int i = 0; i < buffer.capacity(); i++) {
            buffer.put(i, (byte) (i * 31 + 7));
        }
    }

    /**
     * The RDMA connection's statistics so far, or empty for a JDK channel.
     */
    Optional<ConnectionStatistics> statistics() {
        return messages.channel() instanceof RdmaSocketChannel rdma ? rdma.statistics() : Optional.empty();
    }

    /**
     * The channel's state, for a report of a hung measurement.
     */
    String describe() {
        return messages.toString();
    }

    @Override
    public void close() throws IOException {
        messages.close();
    }
}
