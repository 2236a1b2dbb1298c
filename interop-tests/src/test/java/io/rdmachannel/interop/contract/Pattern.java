package io.rdmachannel.interop.contract;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;

/**
 * The byte stream every data test sends: stream position {@code p} carries {@code PATTERN[p % PERIOD]}. The period is
 * odd, so a lost, repeated or reordered chunk shows up as a mismatch at a known stream position.
 */
final class Pattern {

    /**
     * Largest chunk {@link #slice} hands out.
     */
    static final int MAX_CHUNK = 1 << 20;

    private static final int PERIOD = MAX_CHUNK + 7;
    private static final ByteBuffer PATTERN = create();

    private Pattern() {
    }

    /**
     * The pattern bytes from stream position {@code position} on.
     *
     * @param position the stream position.
     * @param length   how many bytes, at most {@link #MAX_CHUNK}.
     * @return a fresh read-only buffer over the bytes.
     */
    static ByteBuffer slice(final long position, final int length) {
        if (length < 0 || length > MAX_CHUNK) {
            throw new IllegalArgumentException("length=" + length);
        }
        return PATTERN.slice((int) (position % PERIOD), length);
    }

    /**
     * Compares received bytes with the pattern.
     *
     * @param position stream position of {@code received}'s first remaining byte.
     * @param received the received bytes (position and limit unchanged).
     * @return the stream position of the first wrong byte, or -1 if all match.
     */
    static long mismatch(final long position, final ByteBuffer received) {
        final int index = received.mismatch(slice(position, received.remaining()));
        return index < 0 ? -1 : position + index;
    }

    private static ByteBuffer create() {
        final byte[] bytes = new byte[2 * PERIOD];
        final SplittableRandom random = new SplittableRandom(0x5EED);
        for (int i = 0; i < PERIOD; i++) {
            bytes[i] = (byte) random.nextInt();
        }
        System.arraycopy(bytes, 0, bytes, PERIOD, PERIOD);
        return ByteBuffer.wrap(bytes).asReadOnlyBuffer();
    }
}
