package io.rdmachannel.channel.cm;

import java.net.ConnectException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * A rejection of a connection request: why, and in words from the listener's host policy where it has some. Carried
 * to the requester, who sees a {@link ConnectException} naming both.
 *
 * <p>On the wire (the private data of a reject): the reason's code (1 byte), the detail's length in bytes (1 byte,
 * at most {@value #MAX_DETAIL_BYTES}), then the detail in UTF-8. A requester that reads only the first byte still
 * gets the reason; a reject of one byte, or with a length past what arrived, has no detail.
 *
 * @param reason the reason.
 * @param detail the listener's words, empty for none; control characters are not kept, and the detail is cut to
 *               {@value #MAX_DETAIL_BYTES} bytes of UTF-8 on the wire.
 */
public record Rejection(RejectReason reason, String detail) {
    /** Most bytes of detail a reject carries: an InfiniBand or RoCE REJ has 148 bytes of private data. */
    public static final int MAX_DETAIL_BYTES = 120;
    /** Length of the longest encoded rejection. */
    public static final int MAX_ENCODED_BYTES = 2 + MAX_DETAIL_BYTES;

    /**
     * A rejection with its detail cleaned: no control characters, none if null.
     */
    public Rejection {
        if (reason == null) {
            throw new NullPointerException("reason");
        }
        detail = clean(detail == null ? "" : detail);
    }

    /**
     * A rejection without detail.
     *
     * @param reason the reason.
     * @return the rejection.
     */
    public static Rejection of(final RejectReason reason) {
        return new Rejection(reason, "");
    }

    /**
     * The requester's exception: the reason's type and message, followed by the detail if there is one.
     *
     * @return a new exception.
     */
    public ConnectException exception() {
        return reason.exception(detail);
    }

    /**
     * Write this rejection as the private data of a reject; the detail is cut at a character boundary to fit.
     *
     * @param out where to write; needs {@link #MAX_ENCODED_BYTES} bytes of room.
     */
    public void encode(final ByteBuffer out) {
        final byte[] bytes = detail.getBytes(StandardCharsets.UTF_8);
        int length = Math.min(bytes.length, MAX_DETAIL_BYTES);
        while (length > 0 && length < bytes.length && (bytes[length] & 0xC0) == 0x80) {
            // do not split a character: back up to the start of the one that does not fit
            length--;
        }
        out.put((byte) reason.code()).put((byte) length).put(bytes, 0, length);
    }

    /**
     * Read a rejection from a reject's private data, as a peer sent it: anything but a well-formed detail is left
     * out, never trusted (a length past what arrived, bytes that are not UTF-8).
     *
     * @param in the private data, from its first byte; at least one byte.
     * @return the rejection.
     */
    public static Rejection decode(final ByteBuffer in) {
        final RejectReason reason = RejectReason.fromCode(in.get());
        if (!in.hasRemaining()) {
            return of(reason);
        }
        final int length = Byte.toUnsignedInt(in.get());
        if (length > MAX_DETAIL_BYTES || length > in.remaining()) {
            return of(reason);
        }
        final CharsetDecoder decoder = StandardCharsets.UTF_8.newDecoder()
            .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT);
        try {
            return new Rejection(reason, decoder.decode(in.slice(in.position(), length)).toString());
        } catch (final CharacterCodingException ex) {
            return of(reason);
        }
    }

    /**
     * What a requester makes of a rejection that came as a reason code with the encoded rejection beside it: the
     * rejection sent when it decodes and names the same reason, else the reason alone (a listener that sends no
     * words, or malformed ones).
     *
     * @param reason the reason the rejection's code names.
     * @param encoded what {@link #encode} wrote, possibly empty.
     * @return the rejection.
     */
    public static Rejection received(final RejectReason reason, final ByteBuffer encoded) {
        if (encoded.hasRemaining()) {
            try {
                final Rejection sent = decode(encoded);
                if (sent.reason() == reason) {
                    return sent;
                }
            } catch (final BufferUnderflowException ex) {
                // malformed words: the reason alone
            }
        }
        return of(reason);
    }

    private static String clean(final String text) {
        final StringBuilder kept = new StringBuilder(text.length());
        text.codePoints().filter(c -> !Character.isISOControl(c)).forEach(kept::appendCodePoint);
        return kept.toString().strip();
    }
}
