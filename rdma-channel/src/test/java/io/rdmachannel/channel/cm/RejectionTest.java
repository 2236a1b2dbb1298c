package io.rdmachannel.channel.cm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import java.net.ConnectException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/**
 * The rejection a listener sends and a requester reads: code, length, UTF-8 detail; what a peer sends is never
 * trusted beyond what arrived.
 */
class RejectionTest {

    private static ByteBuffer encoded(final Rejection rejection) {
        final ByteBuffer out = ByteBuffer.allocate(Rejection.MAX_ENCODED_BYTES);
        rejection.encode(out);
        return out.flip();
    }

    @Test
    void shouldCarryTheReasonAndItsWords() {
        final Rejection sent = new Rejection(RejectReason.POLICY, "port 4711 is closed to 10.0.0.0/8");
        final ByteBuffer wire = encoded(sent);
        assertEquals(2 + 33, wire.remaining());
        assertEquals(RejectReason.POLICY.code(), wire.get(0));
        assertEquals(sent, Rejection.decode(wire));
        final ConnectException exception = sent.exception();
        assertEquals("Connection refused by policy: port 4711 is closed to 10.0.0.0/8", exception.getMessage());
    }

    @Test
    void shouldReadTheReasonAloneFromOneByteOrAZeroPaddedRej() {
        assertEquals(Rejection.of(RejectReason.BACKLOG_FULL),
            Rejection.decode(ByteBuffer.wrap(new byte[] {(byte) RejectReason.BACKLOG_FULL.code()})));
        // an InfiniBand or RoCE REJ arrives padded with zeros to 148 bytes
        final byte[] padded = new byte[148];
        encoded(new Rejection(RejectReason.POLICY, "no")).get(padded, 0, 4);
        assertEquals(new Rejection(RejectReason.POLICY, "no"), Rejection.decode(ByteBuffer.wrap(padded)));
        assertEquals("Connection refused: backlog full", Rejection.of(RejectReason.BACKLOG_FULL).exception()
            .getMessage());
    }

    @Test
    void shouldCutALongDetailAtACharacterBoundary() {
        // 59 two-byte characters and one more: 120 bytes hold 60 of them exactly, a 3-byte one after 119 does not fit
        final String detail = "\u00e9".repeat(59) + "x" + "\u20ac";
        final Rejection decoded = Rejection.decode(encoded(new Rejection(RejectReason.POLICY, detail)));
        assertEquals("\u00e9".repeat(59) + "x", decoded.detail());
        final String euros = "\u20ac".repeat(41);
        assertEquals("\u20ac".repeat(40), Rejection.decode(encoded(new Rejection(RejectReason.POLICY, euros)))
            .detail());
    }

    @Test
    void shouldLeaveOutADetailThatIsNotWellFormed() {
        // a length past what arrived
        assertEquals(Rejection.of(RejectReason.POLICY),
            Rejection.decode(ByteBuffer.wrap(new byte[] {(byte) RejectReason.POLICY.code(), 9, 'a', 'b'})));
        // a length past the limit
        final byte[] tooLong = new byte[2 + 200];
        tooLong[0] = (byte) RejectReason.POLICY.code();
        tooLong[1] = (byte) 200;
        assertEquals(Rejection.of(RejectReason.POLICY), Rejection.decode(ByteBuffer.wrap(tooLong)));
        // bytes that are not UTF-8
        assertEquals(Rejection.of(RejectReason.POLICY), Rejection.decode(ByteBuffer.wrap(
            new byte[] {(byte) RejectReason.POLICY.code(), 2, (byte) 0xC3, (byte) 0x28})));
        // an unknown code reads as no listener, as before
        assertInstanceOf(NoRdmaPathException.class, Rejection.decode(ByteBuffer.wrap(new byte[] {99})).exception());
    }

    @Test
    void shouldKeepNoControlCharacters() {
        final byte[] text = "line\none\u0007\t".getBytes(StandardCharsets.UTF_8);
        final ByteBuffer wire = ByteBuffer.allocate(2 + text.length).put((byte) RejectReason.POLICY.code())
            .put((byte) text.length).put(text).flip();
        assertEquals("lineone", Rejection.decode(wire).detail());
        assertEquals("", new Rejection(RejectReason.POLICY, null).detail());
    }
}
