package io.rdmachannel.interop.rstream;

import java.nio.ByteBuffer;

/**
 * The data pattern of {@code rstream -T v}: two 8-bit counters that start at 0 when the process starts and never
 * reset, one for the bytes sent and one for the bytes received, so each direction of every connection carries
 * 0, 1, ..., 255, 0, 1, ... counted from the first byte the process sent (the 16-byte sync messages included).
 *
 * <p>One instance stands for one rstream process: {@link JavaRstream} owns one, so two twins in one JVM do not share
 * it. Like rstream's {@code verify_buf}, a mismatch consumes the counter value of the failing byte and stops there;
 * {@link #bytesChecked()} then names the failing byte (0-based over everything received).
 */
final class VerifyPattern {

    /** Returned by {@link #check(ByteBuffer, int)} when every byte matched. */
    static final long VERIFIED = -1;

    private byte nextSent;
    private byte nextExpected;
    private long bytesChecked;
    private long bytesSent;
    private long corruptedByte = -1;

    /**
     * Test hook: flip the bits of one byte of the outgoing stream, so that the peer's check fails there.
     *
     * @param index the 0-based index of the byte over everything this process sends.
     */
    void corruptSentByte(final long index) {
        if (index < 0) {
            throw new IllegalArgumentException("corrupted byte index must be at least 0: index=" + index);
        }
        corruptedByte = index;
    }

    /**
     * Fills {@code buffer[0, length)} with the next bytes of the pattern (as rstream's {@code format_buf}, before
     * every send).
     *
     * @param buffer the send buffer, at least {@code length} bytes long; it is {@link ByteBuffer#clear() cleared}.
     * @param length how many bytes to fill.
     */
    void fill(final ByteBuffer buffer, final int length) {
        buffer.clear();
        for (int i = 0; i < length; i++) {
            byte value = nextSent++;
            if (bytesSent + i == corruptedByte) {
                value = (byte) ~value;
            }
            buffer.put(i, value);
        }
        bytesSent += length;
    }

    /**
     * Checks {@code buffer[0, length)} against the pattern (as rstream's {@code verify_buf}, after every receive).
     *
     * @param buffer the receive buffer, at least {@code length} bytes long; it is {@link ByteBuffer#clear() cleared}.
     * @param length how many bytes to check.
     * @return {@link #VERIFIED}, or the index over all bytes received of the first byte that differs.
     */
    long check(final ByteBuffer buffer, final int length) {
        buffer.clear();
        for (int i = 0; i < length; i++) {
            if (buffer.get(i) != nextExpected++) {
                return bytesChecked;
            }
            bytesChecked++;
        }
        return VERIFIED;
    }

    /**
     * @return how many received bytes matched so far.
     */
    long bytesChecked() {
        return bytesChecked;
    }

    /**
     * @return how many bytes were filled for sending so far.
     */
    long bytesSent() {
        return bytesSent;
    }
}
