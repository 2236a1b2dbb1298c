package io.rdmachannel.interop.rstream;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RstreamVerifyPatternTest {

    @Test
    void shouldFillAnEightBitCounterThatRunsAcrossSends() {
        final VerifyPattern pattern = new VerifyPattern();
        final ByteBuffer buffer = ByteBuffer.allocate(300);

        pattern.fill(buffer, 16);
        for (int i = 0; i < 16; i++) {
            assertEquals((byte) i, buffer.get(i), "byte " + i);
        }
        pattern.fill(buffer, 300);
        for (int i = 0; i < 300; i++) {
            assertEquals((byte) (16 + i), buffer.get(i), "byte " + i);
        }
        assertEquals(316, pattern.bytesSent());
    }

    @Test
    void shouldCheckWhatAnotherProcessSentInPiecesOfAnySize() {
        final VerifyPattern sender = new VerifyPattern();
        final VerifyPattern receiver = new VerifyPattern();
        final ByteBuffer buffer = ByteBuffer.allocate(1000);

        for (final int length : new int[] {16, 1000, 1, 255, 16, 999}) {
            sender.fill(buffer, length);
            assertEquals(VerifyPattern.VERIFIED, receiver.check(buffer, length), "length " + length);
        }
        assertEquals(16 + 1000 + 1 + 255 + 16 + 999, receiver.bytesChecked());
    }

    @Test
    void shouldReportTheIndexOverAllBytesReceivedOfTheFirstMismatch() {
        final VerifyPattern sender = new VerifyPattern();
        final VerifyPattern receiver = new VerifyPattern();
        final ByteBuffer buffer = ByteBuffer.allocate(100);
        sender.fill(buffer, 16);
        assertEquals(VerifyPattern.VERIFIED, receiver.check(buffer, 16));

        sender.fill(buffer, 100);
        buffer.put(37, (byte) 0x5A);

        assertEquals(16 + 37, receiver.check(buffer, 100));
        assertEquals(16 + 37, receiver.bytesChecked());
    }

    @Test
    void shouldConsumeTheFailingBytesCounterValueAsRstreamDoes() {
        final VerifyPattern receiver = new VerifyPattern();
        final ByteBuffer buffer = ByteBuffer.allocate(4);
        buffer.put(0, (byte) 0).put(1, (byte) 9);
        assertEquals(1, receiver.check(buffer, 2));

        buffer.put(0, (byte) 2);

        assertEquals(VerifyPattern.VERIFIED, receiver.check(buffer, 1));
    }

    @Test
    void shouldCorruptExactlyTheRequestedSentByte() {
        final VerifyPattern sender = new VerifyPattern();
        final VerifyPattern receiver = new VerifyPattern();
        sender.corruptSentByte(3023);
        final ByteBuffer buffer = ByteBuffer.allocate(1000);
        sender.fill(buffer, 16);
        assertEquals(VerifyPattern.VERIFIED, receiver.check(buffer, 16));
        for (int i = 0; i < 3; i++) {
            sender.fill(buffer, 1000);
            assertEquals(VerifyPattern.VERIFIED, receiver.check(buffer, 1000));
        }

        sender.fill(buffer, 1000);

        assertEquals((byte) ~(3023 & 0xFF), buffer.get(7));
        assertEquals(3023, receiver.check(buffer, 1000));
    }
}
