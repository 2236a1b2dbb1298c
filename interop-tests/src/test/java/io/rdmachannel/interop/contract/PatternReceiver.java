package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.util.zip.CRC32C;

/**
 * Reads a {@link Pattern} stream with read sizes from a {@link SizeSequence}, checking every byte against the pattern
 * and keeping a CRC32C of what arrived. Used by one thread at a time.
 */
final class PatternReceiver {

    private final SizeSequence readSizes;
    private final ByteBuffer buffer;
    private final CRC32C checksum = new CRC32C();
    private volatile long position;
    private volatile long reads;
    private volatile boolean eof;

    PatternReceiver(final SizeSequence readSizes, final int maxReadSize, final boolean direct) {
        this.readSizes = readSizes;
        this.buffer = direct ? ByteBuffer.allocateDirect(maxReadSize) : ByteBuffer.allocate(maxReadSize);
    }

    /**
     * Makes one read call and verifies what it returned.
     *
     * @param channel the channel.
     * @return what read returned: bytes read, 0, or -1 at end of stream.
     * @throws IOException from the channel.
     */
    int readOnce(final ReadableByteChannel channel) throws IOException {
        final int size = Math.min(buffer.capacity(), Math.max(1, readSizes.next()));
        buffer.clear().limit(size);
        final int read = channel.read(buffer);
        reads++;
        if (read < 0) {
            eof = true;
            return read;
        }
        if (read > size || buffer.position() != read) {
            throw new AssertionError("read returned " + read + " for " + size + " bytes, buffer " + buffer);
        }
        buffer.flip();
        final long wrong = Pattern.mismatch(position, buffer);
        if (wrong >= 0) {
            throw new AssertionError("wrong byte at stream position " + wrong + " in a read of " + read
                + " bytes at position " + position);
        }
        synchronized (this) {
            checksum.update(buffer);
        }
        position += read;
        return read;
    }

    /**
     * Reads until end of stream on a blocking channel.
     *
     * @param channel the channel.
     * @throws IOException from the channel.
     */
    void readToEnd(final ReadableByteChannel channel) throws IOException {
        while (readOnce(channel) >= 0) {
            // each call reads once
        }
    }

    boolean eof() {
        return eof;
    }

    long position() {
        return position;
    }

    synchronized long checksum() {
        return checksum.getValue();
    }

    @Override
    public String toString() {
        return "received=" + position + " reads=" + reads + " eof=" + eof + " crc32c=" + Long.toHexString(checksum())
            + " readSizes=" + readSizes;
    }
}
