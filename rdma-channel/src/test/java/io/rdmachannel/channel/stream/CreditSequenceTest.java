package io.rdmachannel.channel.stream;

import static io.rdmachannel.channel.stream.CreditSequence.checkCreditLimit;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class CreditSequenceTest {
    private static final int CREDITS = 384;

    @Test
    void shouldWrapAtSixteenBits() {
        assertEquals(0, CreditSequence.next(0xFFFF));
        assertEquals(1, CreditSequence.add(0xFFFF, 2));
        assertEquals(0x7F, CreditSequence.grantLimit(0xFFFF, 0x80));
        assertEquals(768, CreditSequence.grantLimit(384, 384));
    }

    @Test
    void shouldComputeTheWindowAcrossTheWrap() {
        assertEquals(384, CreditSequence.window(0, 384));
        assertEquals(10, CreditSequence.window(0xFFFA, 4));
        assertEquals(0, CreditSequence.window(0x1234, 0x1234));
        assertEquals(0xFFFF, CreditSequence.window(1, 0));
    }

    @Test
    void shouldHaveCreditWhileSentDiffersFromLimit() {
        assertTrue(CreditSequence.hasCredit(0, 384));
        assertTrue(CreditSequence.hasCredit(0xFFFF, 0));
        assertFalse(CreditSequence.hasCredit(384, 384));
        assertFalse(CreditSequence.hasCredit(0x10000, 0));
    }

    @Test
    void shouldAcceptAGrantOfTheFullWindow() throws ProtocolException {
        assertEquals(300 + CREDITS, checkCreditLimit(300, CREDITS, 300 + CREDITS, CREDITS));
    }

    @Test
    void shouldAcceptARepeatedLimit() throws ProtocolException {
        assertEquals(CREDITS, checkCreditLimit(100, CREDITS, CREDITS, CREDITS));
    }

    @Test
    void shouldAcceptAGrantAcrossTheWrap() throws ProtocolException {
        assertEquals(0x0010, checkCreditLimit(0xFF00, 0xFFF0, 0x0010, CREDITS));
    }

    @Test
    void shouldTruncateTheReceivedLimit() throws ProtocolException {
        assertEquals(0x0010, checkCreditLimit(0xFF00, 0xFFF0, 0x10010, CREDITS));
    }

    @Test
    void shouldRefuseALimitMovingBackwards() {
        final ProtocolException ex =
            assertThrows(ProtocolException.class, () -> checkCreditLimit(100, 400, 399, CREDITS));
        assertEquals("credit limit moved backwards: creditLimit=399, currentLimit=400, sent=100", ex.getMessage());
    }

    @Test
    void shouldRefuseALimitMovingBackwardsBehindWhatWasSent() {
        final ProtocolException ex =
            assertThrows(ProtocolException.class, () -> checkCreditLimit(100, 400, 90, CREDITS));
        assertEquals("credit limit moved backwards: creditLimit=90, currentLimit=400, sent=100", ex.getMessage());
    }

    @Test
    void shouldRefuseALimitMovingBackwardsAcrossTheWrap() {
        final ProtocolException ex =
            assertThrows(ProtocolException.class, () -> checkCreditLimit(0xFFF0, 0x0010, 0xFFFF, CREDITS));
        assertEquals("credit limit moved backwards: creditLimit=65535, currentLimit=16, sent=65520", ex.getMessage());
    }

    @Test
    void shouldRefuseALimitBeyondTheWindow() {
        final ProtocolException ex =
            assertThrows(ProtocolException.class, () -> checkCreditLimit(100, 400, 100 + CREDITS + 1, CREDITS));
        assertEquals("credit limit beyond the peer's receive window: creditLimit=485, sent=100, receiveWindow=384",
            ex.getMessage());
    }

    @Test
    void shouldRefuseALimitBeyondTheWindowAcrossTheWrap() {
        final ProtocolException ex =
            assertThrows(ProtocolException.class, () -> checkCreditLimit(0xFFF0, 0x0010, 0x0200, CREDITS));
        assertEquals("credit limit beyond the peer's receive window: creditLimit=512, sent=65520, receiveWindow=384",
            ex.getMessage());
    }

    @Test
    void shouldRefuseASentCountPastTheCurrentLimit() {
        final IllegalArgumentException ex =
            assertThrows(IllegalArgumentException.class, () -> checkCreditLimit(500, CREDITS, 884, CREDITS));
        assertEquals("sent must be at most receiveWindow behind currentLimit: sent=500, currentLimit=384, "
            + "receiveWindow=384", ex.getMessage());
    }
}
