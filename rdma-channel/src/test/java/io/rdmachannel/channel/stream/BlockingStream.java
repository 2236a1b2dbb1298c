package io.rdmachannel.channel.stream;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32;

/**
 * Blocking helpers over the non-blocking seam, as the NIO face builds them: attempt, arm, attempt, park until the
 * observer fires. For engine tests only.
 */
final class BlockingStream {
    private static final long PARK_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private BlockingStream() {
    }

    /**
     * An observer that unparks the threads waiting on it; a connection's reader and writer may share it.
     */
    static final class Waker implements ReadinessObserver {
        private final java.util.Set<Thread> waiters = java.util.concurrent.ConcurrentHashMap.newKeySet();

        /**
         * Parks until woken or for a while; a test's timeout interrupts the thread, which ends the wait with
         * {@link InterruptedIOException} instead of looping on.
         */
        void waitFor() throws InterruptedIOException {
            waiters.add(Thread.currentThread());
            LockSupport.parkNanos(this, PARK_NANOS);
            waiters.remove(Thread.currentThread());
            if (Thread.interrupted()) {
                throw new InterruptedIOException("interrupted while waiting for readiness");
            }
        }

        @Override
        public void onReadiness() {
            waiters.forEach(LockSupport::unpark);
        }
    }

    static StreamConnection connect(final StreamConnector connector, final Waker waker) throws IOException {
        while (true) {
            StreamConnection connection = connector.finish();
            if (connection != null) {
                return connection;
            }
            connector.arm();
            connection = connector.finish();
            if (connection != null) {
                return connection;
            }
            waker.waitFor();
        }
    }

    static StreamConnection accept(final StreamListener listener, final Waker waker) throws IOException {
        while (true) {
            StreamConnection connection = listener.accept(waker);
            if (connection == null) {
                listener.arm();
                connection = listener.accept(waker);
            }
            if (connection != null) {
                return connection;
            }
            waker.waitFor();
        }
    }

    static int read(final StreamConnection connection, final ByteBuffer dst, final Waker waker) throws IOException {
        while (true) {
            int count = connection.read(dst);
            if (count != 0) {
                return count;
            }
            connection.arm();
            count = connection.read(dst);
            if (count != 0) {
                return count;
            }
            waker.waitFor();
        }
    }

    static void writeFully(final StreamConnection connection, final ByteBuffer src, final Waker waker)
        throws IOException {
        while (src.hasRemaining()) {
            if (connection.write(src) == 0) {
                connection.arm();
                if (connection.write(src) == 0) {
                    waker.waitFor();
                }
            }
        }
    }

    /**
     * Write {@code total} random bytes in random pieces of 1 to {@code piece} bytes, then shut the output down.
     *
     * @return the CRC-32 of what was written.
     */
    static long writeRandom(final StreamConnection connection, final Waker waker, final int total, final int piece,
        final long seed) throws IOException {
        final Random random = new Random(seed);
        final byte[] chunk = new byte[piece];
        final CRC32 crc = new CRC32();
        int sent = 0;
        while (sent < total) {
            final int size = Math.min(total - sent, 1 + random.nextInt(piece));
            random.nextBytes(chunk);
            crc.update(chunk, 0, size);
            writeFully(connection, ByteBuffer.wrap(chunk, 0, size), waker);
            sent += size;
        }
        connection.shutdownOutput();
        return crc.getValue();
    }
}
