package io.rdmachannel.interop.contract;

import java.io.IOException;
import io.rdmachannel.channel.RegisteredBuffers;

import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.zip.CRC32C;

/**
 * Writes the {@link Pattern} stream in chunks whose sizes come from a {@link SizeSequence}, keeping a CRC32C of what
 * the channel accepted and counting zero and partial writes. Used by one thread at a time.
 */
final class PatternSender {

    private final SizeSequence sizes;
    /** Each chunk is copied here first when writing from a registered buffer, or null. */
    private ByteBuffer registered;
    private final CRC32C checksum = new CRC32C();
    private volatile long position;
    private volatile long writes;
    private volatile long zeroWrites;
    private volatile long partialWrites;
    private volatile long emptyWrites;
    private ByteBuffer chunk;
    private boolean exhausted;
    private boolean stalled;

    PatternSender(final SizeSequence sizes) {
        this.sizes = sizes;
    }

    /**
     * Write every chunk from a {@link RegisteredBuffers} buffer (which RDMA channels send without copying), and
     * overwrite the bytes a write took as soon as it returns: the peer must still receive the pattern.
     *
     * @return this sender.
     */
    PatternSender fromRegisteredBuffer() {
        registered = RegisteredBuffers.allocate(Pattern.MAX_CHUNK);
        return this;
    }

    /**
     * Free the registered buffer, if any, once no write is in progress.
     */
    void release() {
        if (registered != null) {
            RegisteredBuffers.release(registered);
            registered = null;
        }
    }

    /**
     * Makes one write call (or, for a zero-length chunk, one zero-length write). A blocking channel used from a
     * platform thread must accept the whole chunk at once.
     *
     * @param channel the channel.
     * @return bytes written, or -1 if everything has been sent.
     * @throws IOException from the channel.
     */
    int writeOnce(final SocketChannel channel) throws IOException {
        stalled = false;
        if (chunk == null || !chunk.hasRemaining()) {
            final int size = sizes.next();
            if (size < 0) {
                exhausted = true;
                return -1;
            }
            chunk = Pattern.slice(position, size);
            if (registered != null) {
                chunk = registered.clear().put(chunk).flip().slice();
            }
            if (size == 0) {
                final int written = channel.write(chunk);
                if (written != 0) {
                    throw new AssertionError("zero-length write returned " + written);
                }
                emptyWrites++;
                return 0;
            }
        }
        final int requested = chunk.remaining();
        final ByteBuffer before = chunk.duplicate();
        final int written = channel.write(chunk);
        if (written < 0 || written > requested || chunk.remaining() != requested - written) {
            throw new AssertionError("write returned " + written + " for " + requested + " bytes, buffer " + chunk);
        }
        // The javadoc's "no short writes in blocking mode" holds for the JDK on platform threads only: on a virtual
        // thread, JDK 25 returns what one non-blocking write(2) took once the socket turns writable.
        if (channel.isBlocking() && !Thread.currentThread().isVirtual() && written != requested) {
            throw new AssertionError("blocking write wrote " + written + " of " + requested + " bytes");
        }
        writes++;
        if (written == 0) {
            stalled = true;
            zeroWrites++;
        } else if (written < requested) {
            partialWrites++;
        }
        synchronized (this) {
            checksum.update(before.duplicate().limit(before.position() + written));
        }
        if (registered != null) {
            // the write returned: those bytes are the channel's now, so the buffer may be reused
            for (int i = before.position(); i < before.position() + written; i++) {
                before.put(i, (byte) 0x5A);
            }
        }
        position += written;
        return written;
    }

    /**
     * Whether every chunk has been written.
     *
     * @return true once {@link #writeOnce} returned -1.
     */
    boolean done() {
        return exhausted;
    }

    /**
     * Writes everything on a blocking channel.
     *
     * @param channel the channel.
     * @throws IOException from the channel.
     */
    void writeAll(final SocketChannel channel) throws IOException {
        while (writeOnce(channel) >= 0) {
            // each call writes one chunk
        }
    }

    /**
     * Whether the last write call accepted nothing of a non-empty chunk (a non-blocking channel's send buffer is full).
     *
     * @return true if the last {@link #writeOnce} returned 0 for want of space.
     */
    boolean stalled() {
        return stalled;
    }

    long position() {
        return position;
    }

    long zeroWrites() {
        return zeroWrites;
    }

    long partialWrites() {
        return partialWrites;
    }

    synchronized long checksum() {
        return checksum.getValue();
    }

    @Override
    public String toString() {
        return "sent=" + position + " crc32c=" + Long.toHexString(checksum()) + " writes=" + writes
            + " zeroWrites=" + zeroWrites + " partialWrites=" + partialWrites + " emptyWrites=" + emptyWrites
            + " done=" + exhausted + " sizes=" + sizes;
    }
}
