package io.rdmachannel.channel.stream;

import static io.rdmachannel.channel.stream.ConnectionDataFlyweightTest.bufferOf;
import static io.rdmachannel.channel.stream.ConnectionDataFlyweightTest.hexOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.ByteOrder;

class SgeFlyweightTest {
    /** The second half of a 128 KiB ring at 0x00007f0012350000, key 0xabcd, for a little-endian peer. */
    private static final String LITTLE_ENDIAN_SGE = "00003612007f0000" + "cdab0000" + "00000100";
    /** The same SGE for a big-endian peer. */
    private static final String BIG_ENDIAN_SGE = "00007f0012360000" + "0000abcd" + "00010000";

    private final SgeFlyweight sge = new SgeFlyweight();

    @Test
    void shouldHaveTheLayoutOfRsSge() {
        assertEquals(16, SgeDescriptor.LENGTH);
        assertEquals(8, SgeDescriptor.KEY_OFFSET);
        assertEquals(12, SgeDescriptor.LENGTH_OFFSET);
        assertEquals(16, SgeDescriptor.entryOffset(1));
    }

    @Test
    void shouldEncodeForALittleEndianPeer() {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[16]);
        sge.wrap(buffer, 0, ConnectionDataDescriptor.byteOrder(ConnectionDataDescriptor.FLAG_IOMAP))
            .set(0x00007f0012360000L, 0xabcd, 65536);

        assertEquals(LITTLE_ENDIAN_SGE, hexOf(buffer, 0, 16));
    }

    @Test
    void shouldEncodeForABigEndianPeer() {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[16]);
        sge.wrap(buffer, 0, ConnectionDataDescriptor.byteOrder(ConnectionDataDescriptor.FLAG_NET))
            .set(0x00007f0012360000L, 0xabcd, 65536);

        assertEquals(BIG_ENDIAN_SGE, hexOf(buffer, 0, 16));
    }

    @Test
    void shouldDecodeInBothOrders() {
        sge.wrap(bufferOf(LITTLE_ENDIAN_SGE), 0, ByteOrder.LITTLE_ENDIAN);
        assertEquals(0x00007f0012360000L, sge.address());
        assertEquals(0xabcd, sge.key());
        assertEquals(65536L, sge.length());

        sge.wrap(bufferOf(BIG_ENDIAN_SGE), 0, ByteOrder.BIG_ENDIAN);
        assertEquals(0x00007f0012360000L, sge.address());
        assertEquals(0xabcd, sge.key());
        assertEquals(65536L, sge.length());
    }

    @Test
    void shouldWriteTheSlotOfATargetSgl() {
        final UnsafeBuffer table = new UnsafeBuffer(new byte[2 * SgeDescriptor.LENGTH]);
        sge.wrap(table, SgeDescriptor.entryOffset(1), ByteOrder.BIG_ENDIAN).set(0x00007f0012360000L, 0xabcd, 65536);

        assertEquals("00".repeat(16) + BIG_ENDIAN_SGE, hexOf(table, 0, 32));
        assertEquals(65536L, SgeFlyweight.length(table, 16, ByteOrder.BIG_ENDIAN));
        assertEquals(0L, SgeFlyweight.length(table, 0, ByteOrder.BIG_ENDIAN));
    }

    @Test
    void shouldReadTheLengthUnsigned() {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[16]);
        sge.wrap(buffer, 0, ByteOrder.LITTLE_ENDIAN).set(-1L, -1, 0xFFFF_FFFFL);

        assertEquals(0xFFFF_FFFFL, sge.length());
        assertEquals(-1L, SgeFlyweight.address(buffer, 0, ByteOrder.BIG_ENDIAN));
    }

    @Test
    void shouldRefuseAnIndexOutsideTheTable() {
        assertEquals("SGE index must be in [0, 2): index=2",
            assertThrows(IllegalArgumentException.class, () -> SgeDescriptor.checkIndex(2, 2)).getMessage());
    }

    @Test
    void shouldEncodeIomapEntriesInBothOrders() {
        assertEquals(24, IomapEntryDescriptor.LENGTH);
        assertEquals(16, IomapEntryDescriptor.KEY_OFFSET);
        assertEquals(0x00007f0012340020L, IomapEntryDescriptor.tableAddress(0x00007f0012340000L, 2));

        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[2 * IomapEntryDescriptor.LENGTH]);
        final IomapEntryFlyweight entry = new IomapEntryFlyweight();
        entry.wrap(buffer, 0, ByteOrder.BIG_ENDIAN).set(0, 0x00007f0020000000L, 0x11223344, 4096);
        entry.wrap(buffer, IomapEntryDescriptor.entryOffset(1), ByteOrder.LITTLE_ENDIAN)
            .set(0x1000, 0x00007f0020000000L, 0x11223344, 4096);

        assertEquals("0000000000000000" + "00007f0020000000" + "11223344" + "00001000"
            + "0010000000000000" + "00000020007f0000" + "44332211" + "00100000",
            hexOf(buffer, 0, 48));
        assertEquals(0x1000L, entry.mappingOffset());
        assertEquals(0x00007f0020000000L, entry.address());
        assertEquals(0x11223344, entry.key());
        assertEquals(4096L, entry.length());
    }
}
