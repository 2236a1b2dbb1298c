package io.rdmachannel.interop.dropin;

import java.nio.ByteBuffer;

/**
 * The bytes the echo programs send: byte {@code i} of the stream is {@code (i * 31 + i / 251) & 0xFF}, so a lost,
 * duplicated or reordered byte shows at its position.
 */
final class EchoPattern {
    private EchoPattern() {
    }

    static byte at(final long position) {
        return (byte) (position * 31 + position / 251);
    }

    /**
     * Fill {@code buffer} (position to limit) with the stream's bytes from {@code position}.
     */
    static void fill(final ByteBuffer buffer, final long position) {
        for (int i = buffer.position(); i < buffer.limit(); i++) {
            buffer.put(i, at(position + i - buffer.position()));
        }
    }

    /**
     * Check the bytes of {@code buffer} (position to limit) against the stream's from {@code position}.
     *
     * @return -1 if they match, else the stream position of the first wrong byte.
     */
    static long check(final ByteBuffer buffer, final long position) {
        for (int i = buffer.position(); i < buffer.limit(); i++) {
            if (buffer.get(i) != at(position + i - buffer.position())) {
                return position + i - buffer.position();
            }
        }
        return -1;
    }
}
