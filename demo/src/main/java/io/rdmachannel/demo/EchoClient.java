package io.rdmachannel.demo;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/**
 * One client connection of the echo demo, in blocking mode: a ping-pong of fixed-size messages, each round trip
 * timed, then a bulk stream checked with a CRC32C of what was sent against what came back, then the end of the
 * stream in both directions. The bulk phase writes from a second thread, as the server echoes while it reads.
 */
final class EchoClient implements AutoCloseable {
    static final int MESSAGE_SIZE = 64;
    private static final int CHUNK = 64 * 1024;

    private final int id;
    private final SocketChannel channel;
    private volatile String phase = "connected";

    /**
     * What one connection measured.
     *
     * @param roundTrips the timed round trips in nanoseconds, sorted.
     * @param bulkBytes  the bytes sent, and echoed, in the bulk phase.
     * @param bulkStart  {@link System#nanoTime()} when the bulk phase started.
     * @param bulkEnd    {@link System#nanoTime()} when the end of the stream was read.
     * @param checksum   the CRC32C of the bytes sent, which is also that of the bytes echoed.
     */
    record Result(int id, long[] roundTrips, long bulkBytes, long bulkStart, long bulkEnd, long checksum) {
    }

    private EchoClient(final int id, final SocketChannel channel) {
        this.id = id;
        this.channel = channel;
    }

    /**
     * Connect to the echo server with a blocking channel of {@code provider}.
     */
    static EchoClient connect(final int id, final SelectorProvider provider, final InetSocketAddress server)
        throws IOException {
        final SocketChannel channel = provider.openSocketChannel();
        try {
            channel.connect(server);
            return new EchoClient(id, channel);
        } catch (final IOException | RuntimeException ex) {
            channel.close();
            throw ex;
        }
    }

    int id() {
        return id;
    }

    /**
     * Run both phases and read the end of the stream.
     *
     * @param warmUp     untimed round trips first.
     * @param iterations timed round trips.
     * @param bulkBytes  bytes to stream in the bulk phase.
     * @return what was measured.
     * @throws IOException naming the phase and the state of the connection.
     */
    Result run(final int warmUp, final int iterations, final long bulkBytes) throws IOException {
        try {
            phase = "warm-up";
            pingPong(warmUp);
            phase = "ping-pong";
            final long[] roundTrips = pingPong(iterations);
            Arrays.sort(roundTrips);
            phase = "bulk";
            final long bulkStart = System.nanoTime();
            final long checksum = bulk(bulkBytes);
            return new Result(id, roundTrips, bulkBytes, bulkStart, System.nanoTime(), checksum);
        } catch (final IOException | RuntimeException ex) {
            throw new IOException("connection " + id + " failed in the " + phase + " phase: " + ex + "; " + channel,
                ex);
        }
    }

    private long[] pingPong(final int count) throws IOException {
        final long[] roundTrips = new long[count];
        final ByteBuffer ping = ByteBuffer.allocateDirect(MESSAGE_SIZE);
        final ByteBuffer pong = ByteBuffer.allocateDirect(MESSAGE_SIZE);
        for (int i = 0; i < count; i++) {
            ping.clear();
            while (ping.hasRemaining()) {
                ping.putLong(((long) id << 32) | i);
            }
            ping.flip();
            pong.clear();
            final long start = System.nanoTime();
            channel.write(ping);
            while (pong.hasRemaining()) {
                if (channel.read(pong) < 0) {
                    throw new EOFException("end of stream after " + pong.position() + " bytes of echo " + i);
                }
            }
            roundTrips[i] = System.nanoTime() - start;
            if (!pong.flip().equals(ping.flip())) {
                throw new IOException("echo " + i + " differs from what was sent");
            }
        }
        return roundTrips;
    }

    /**
     * Send {@code bytes} pseudo-random bytes from a writer thread, then shut down output; read the echo to the end
     * of the stream here.
     *
     * @return the checksum of the bytes sent, once the echo has been checked against it.
     */
    private long bulk(final long bytes) throws IOException {
        final long[] sent = new long[1];
        final Exception[] writeFailure = new Exception[1];
        final Thread writer = Thread.ofPlatform().name("echo-client-" + id + "-writer").start(() -> {
            try {
                sent[0] = send(bytes);
            } catch (final IOException | RuntimeException ex) {
                writeFailure[0] = ex;
                // The reader would wait for an end of stream that will not come.
                closeQuietly(ex);
            }
        });
        final CRC32C received = new CRC32C();
        long total = 0;
        IOException readFailure = null;
        try {
            final ByteBuffer buffer = ByteBuffer.allocateDirect(CHUNK);
            for (int n = channel.read(buffer); n >= 0; n = channel.read(buffer)) {
                received.update(buffer.flip());
                buffer.clear();
                total += n;
            }
        } catch (final IOException ex) {
            readFailure = ex;
        }
        join(writer);
        if (writeFailure[0] != null) {
            final IOException failure = new IOException("writing failed: " + writeFailure[0], writeFailure[0]);
            if (readFailure != null) {
                failure.addSuppressed(readFailure);
            }
            throw failure;
        }
        if (readFailure != null) {
            throw readFailure;
        }
        if (total != bytes || received.getValue() != sent[0]) {
            throw new IOException(String.format("echoed %d bytes with CRC32C %08x; sent %d bytes with CRC32C %08x",
                total, received.getValue(), bytes, sent[0]));
        }
        return sent[0];
    }

    private static void join(final Thread thread) throws IOException {
        try {
            thread.join();
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for " + thread.getName(), ex);
        }
    }

    private void closeQuietly(final Exception cause) {
        try {
            channel.close();
        } catch (final IOException ex) {
            cause.addSuppressed(ex);
        }
    }

    private long send(final long bytes) throws IOException {
        final SplittableRandom random = new SplittableRandom(id);
        final CRC32C checksum = new CRC32C();
        final ByteBuffer buffer = ByteBuffer.allocateDirect(CHUNK);
        for (long left = bytes; left > 0; left -= buffer.limit()) {
            buffer.clear().limit((int) Math.min(CHUNK, left));
            while (buffer.remaining() >= Long.BYTES) {
                buffer.putLong(random.nextLong());
            }
            while (buffer.hasRemaining()) {
                buffer.put((byte) random.nextInt());
            }
            checksum.update(buffer.flip());
            buffer.rewind();
            channel.write(buffer);
        }
        channel.shutdownOutput();
        return checksum.getValue();
    }

    /**
     * The phase and the state of the connection, for a report.
     */
    String describe() {
        return "connection " + id + " in the " + phase + " phase: " + channel;
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
