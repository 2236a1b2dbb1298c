package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.ByteOrder;
import java.util.HexFormat;

class ImmediateDataTest {
    @Test
    void shouldEncodeTheFixtures() {
        assertEquals(0x000003E8, ImmediateData.data(1000));
        assertEquals(0x80000300, ImmediateData.sgl((384 + 384) & 0xFFFF));
        assertEquals(0xE0000002, ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN));
        assertEquals(0xE0000000, ImmediateData.ctrl(ImmediateData.CTRL_DISCONNECT));
        assertEquals(0xC0000000, ImmediateData.iomapSgl(0));
        assertEquals(0x1FFFFFFF, ImmediateData.data(ImmediateData.MAX_OPERAND));
    }

    @Test
    void shouldPutTheFixturesOnTheWireBigEndian() {
        final UnsafeBuffer wire = new UnsafeBuffer(new byte[16]);
        wire.putInt(0, ImmediateData.data(1000), ByteOrder.BIG_ENDIAN);
        wire.putInt(4, ImmediateData.sgl(768), ByteOrder.BIG_ENDIAN);
        wire.putInt(8, ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN), ByteOrder.BIG_ENDIAN);
        wire.putInt(12, ImmediateData.iomapSgl(0), ByteOrder.BIG_ENDIAN);

        assertEquals("000003e8" + "80000300" + "e0000002" + "c0000000", HexFormat.of().formatHex(wire.byteArray()));
    }

    @Test
    void shouldDecodeOpAndOperand() {
        assertEquals(ImmediateData.DATA, ImmediateData.op(0x000003E8));
        assertEquals(1000, ImmediateData.operand(0x000003E8));
        assertEquals(ImmediateData.SGL, ImmediateData.op(0x80000300));
        assertEquals(768, ImmediateData.creditLimit(0x80000300));
        assertEquals(ImmediateData.CTRL, ImmediateData.op(0xE0000002));
        assertEquals(ImmediateData.CTRL_SHUTDOWN, ImmediateData.operand(0xE0000002));
        assertEquals(ImmediateData.IOMAP_SGL, ImmediateData.op(0xC0000000));
        assertEquals(0, ImmediateData.iomapIndex(0xC0000000));
        assertEquals("SGL|768", ImmediateData.toString(0x80000300));
    }

    @Test
    void shouldTruncateAnSglOperandToSixteenBits() {
        final int fromC = ImmediateData.encode(ImmediateData.SGL, 0xFFFE + 0xFFFE);

        assertEquals(0x8001FFFC, fromC);
        assertEquals(0xFFFC, ImmediateData.creditLimit(fromC));
        assertEquals(0x8000FFFC, ImmediateData.sgl(0x1FFFC));
    }

    @ParameterizedTest(name = "0x{0}")
    @CsvSource({"00000000", "000003e8", "1fffffff", "80000300", "8001fffc", "c0000000", "c0010003",
        "e0000000", "e0000001", "e0000002"})
    void shouldAcceptWhatAConformingPeerSends(final String hex) throws ProtocolException {
        final int immediate = HexFormat.fromHexDigits(hex);

        assertTrue(ImmediateData.isValidInbound(immediate));
        assertEquals(ImmediateData.op(immediate), ImmediateData.checkInbound(immediate));
    }

    @ParameterizedTest(name = "0x{0}")
    @CsvSource({
        "20000005, 1, RSVD_DATA_MORE",
        "40000010, 2, WRITE",
        "60000000, 3, RSVD_DRA_MORE",
        "a0000400, 5, RSVD",
    })
    void shouldRefuseReservedAndLocalOps(final String hex, final int op, final String name) {
        final int immediate = HexFormat.fromHexDigits(hex);

        assertFalse(ImmediateData.isValidInbound(immediate));
        final ProtocolException ex = assertThrows(ProtocolException.class, () -> ImmediateData.checkInbound(immediate));
        assertEquals("message op not allowed on the wire: op=" + op + " (" + name + "), immediate=0x" + hex,
            ex.getMessage());
    }

    @Test
    void shouldRefuseAnUnknownControlOperand() {
        assertFalse(ImmediateData.isValidInbound(0xE0000003));
        final ProtocolException ex =
            assertThrows(ProtocolException.class, () -> ImmediateData.checkInbound(0xE0000003));
        assertEquals("unknown control message: operand=3, immediate=0xe0000003", ex.getMessage());
    }

    @Test
    void shouldRefuseAControlOperandWithHighBits() {
        final ProtocolException ex =
            assertThrows(ProtocolException.class, () -> ImmediateData.checkInbound(0xF0000000));
        assertEquals("unknown control message: operand=268435456, immediate=0xf0000000", ex.getMessage());
    }

    @Test
    void shouldRefuseToEncodeWhatDoesNotFit() {
        assertEquals("DATA length must be in [0, 536870911]: length=536870912",
            assertThrows(IllegalArgumentException.class, () -> ImmediateData.data(1 << 29)).getMessage());
        assertEquals("DATA length must be in [0, 536870911]: length=-1",
            assertThrows(IllegalArgumentException.class, () -> ImmediateData.data(-1)).getMessage());
        assertEquals("iomap index must be in [0, 65535]: index=65536",
            assertThrows(IllegalArgumentException.class, () -> ImmediateData.iomapSgl(65536)).getMessage());
        assertEquals("unknown control operand: control=3",
            assertThrows(IllegalArgumentException.class, () -> ImmediateData.ctrl(3)).getMessage());
    }
}
