package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.ByteOrder;
import java.util.HexFormat;

class ConnectionDataFlyweightTest {
    /**
     * A little-endian host (NET clear, IOMAP set), 384 credits, no iomap entries, target SGL of 2 entries at
     * 0x00007f0012340000 key 0x1234, first receive region at 0x00007f0012350000 key 0xabcd of 64 KiB.
     */
    static final String LITTLE_ENDIAN_FIXTURE = ""
        + "01" + "02" + "0180" + "000000" + "00"
        + "00007f0012340000" + "00001234" + "00000002"
        + "00007f0012350000" + "0000abcd" + "00010000";

    /**
     * A big-endian host (NET and IOMAP), 16 credits, 512 iomap entries (scale 0x82), target SGL of 2 entries at
     * 0xffffffff00001000 key 0xdeadbeef, first receive region at 0x200000 key 0x80000001 of 512 KiB.
     */
    static final String BIG_ENDIAN_FIXTURE = ""
        + "01" + "03" + "0010" + "000000" + "82"
        + "ffffffff00001000" + "deadbeef" + "00000002"
        + "0000000000200000" + "80000001" + "00080000";

    /** An AF_IB connect request: a 36-byte ib_connect_hdr, then {@link #LITTLE_ENDIAN_FIXTURE}. */
    static final String AF_IB_REQUEST_FIXTURE = ""
        + "00" + "40" + "1d2f"
        + "fe800000000000000002c9030001f001"
        + "fe800000000000000002c9030001f002"
        + LITTLE_ENDIAN_FIXTURE;

    private final ConnectionDataFlyweight flyweight = new ConnectionDataFlyweight();

    static UnsafeBuffer bufferOf(final String hex) {
        return new UnsafeBuffer(HexFormat.of().parseHex(hex));
    }

    static String hexOf(final UnsafeBuffer buffer, final int offset, final int length) {
        final byte[] bytes = new byte[length];
        buffer.getBytes(offset, bytes);
        return HexFormat.of().formatHex(bytes);
    }

    @Test
    void shouldHaveTheLayoutOfRsConnData() {
        assertEquals(40, ConnectionDataDescriptor.LENGTH);
        assertEquals(8, ConnectionDataDescriptor.TARGET_SGL_OFFSET);
        assertEquals(20, ConnectionDataDescriptor.TARGET_SGL_ENTRIES_OFFSET);
        assertEquals(24, ConnectionDataDescriptor.DATA_BUFFER_OFFSET);
        assertEquals(36, ConnectionDataDescriptor.DATA_BUFFER_LENGTH_OFFSET);
        assertEquals(36, ConnectionDataDescriptor.AF_IB_REQUEST_OFFSET);
        assertEquals(80, LITTLE_ENDIAN_FIXTURE.length());
        assertEquals(80, BIG_ENDIAN_FIXTURE.length());
        assertEquals(152, AF_IB_REQUEST_FIXTURE.length());
    }

    @Test
    void shouldEncodeTheLittleEndianFixture() {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[ConnectionDataDescriptor.LENGTH]);
        buffer.setMemory(0, ConnectionDataDescriptor.LENGTH, (byte) 0x5A);

        flyweight.wrap(buffer, 0)
            .header(ConnectionDataDescriptor.localFlags(ByteOrder.LITTLE_ENDIAN), 384)
            .iomapEntries(0)
            .targetSgl(0x00007f0012340000L, 0x1234, 2)
            .dataBuffer(0x00007f0012350000L, 0xabcd, 65536);

        assertEquals(LITTLE_ENDIAN_FIXTURE, hexOf(buffer, 0, ConnectionDataDescriptor.LENGTH));
    }

    @Test
    void shouldEncodeTheBigEndianFixture() {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[ConnectionDataDescriptor.LENGTH]);

        flyweight.wrap(buffer, 0)
            .header(ConnectionDataDescriptor.localFlags(ByteOrder.BIG_ENDIAN), 16)
            .iomapEntries(512)
            .targetSgl(0xffffffff00001000L, 0xdeadbeef, 2)
            .dataBuffer(0x200000L, 0x80000001, 512 * 1024);

        assertEquals(BIG_ENDIAN_FIXTURE, hexOf(buffer, 0, ConnectionDataDescriptor.LENGTH));
    }

    @Test
    void shouldDecodeTheLittleEndianFixture() {
        flyweight.wrap(bufferOf(LITTLE_ENDIAN_FIXTURE), 0);

        assertEquals(1, flyweight.version());
        assertEquals(0x02, flyweight.flags());
        assertEquals(384, flyweight.credits());
        assertEquals(0, flyweight.iomapScale());
        assertEquals(0, flyweight.iomapEntries());
        assertEquals(0x00007f0012340000L, flyweight.targetSglAddress());
        assertEquals(0x1234, flyweight.targetSglKey());
        assertEquals(2L, flyweight.targetSglEntries());
        assertEquals(0x00007f0012350000L, flyweight.dataBufferAddress());
        assertEquals(0xabcd, flyweight.dataBufferKey());
        assertEquals(65536L, flyweight.dataBufferLength());
        assertEquals(ByteOrder.LITTLE_ENDIAN, ConnectionDataDescriptor.byteOrder(flyweight.flags()));
    }

    @Test
    void shouldDecodeTheBigEndianFixtureWithUnsignedValues() {
        flyweight.wrap(bufferOf(BIG_ENDIAN_FIXTURE), 0);

        assertEquals(0x03, flyweight.flags());
        assertEquals(16, flyweight.credits());
        assertEquals(0x82, flyweight.iomapScale());
        assertEquals(512, flyweight.iomapEntries());
        assertEquals(0xffffffff00001000L, flyweight.targetSglAddress());
        assertEquals(0xdeadbeef, flyweight.targetSglKey());
        assertEquals(0x80000001, flyweight.dataBufferKey());
        assertEquals(512L * 1024, flyweight.dataBufferLength());
        assertEquals(ByteOrder.BIG_ENDIAN, ConnectionDataDescriptor.byteOrder(flyweight.flags()));
    }

    @Test
    void shouldReadUnsignedMaximaOfCreditsAndLengths() {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[ConnectionDataDescriptor.LENGTH]);
        flyweight.wrap(buffer, 0).credits(0xFFFF).targetSgl(-1L, -1, 0xFFFF_FFFFL).dataBuffer(-1L, -1, 0xFFFF_FFFFL);

        assertEquals(0xFFFF, flyweight.credits());
        assertEquals(0xFFFF_FFFFL, flyweight.targetSglEntries());
        assertEquals(0xFFFF_FFFFL, flyweight.dataBufferLength());
    }

    @Test
    void shouldReadAndWriteAfterTheIbConnectHeader() {
        final UnsafeBuffer request = bufferOf(AF_IB_REQUEST_FIXTURE);
        flyweight.wrap(request, ConnectionDataDescriptor.AF_IB_REQUEST_OFFSET);

        assertEquals(1, flyweight.version());
        assertEquals(384, flyweight.credits());
        assertEquals(0x00007f0012350000L, flyweight.dataBufferAddress());

        final UnsafeBuffer encoded = new UnsafeBuffer(new byte[AF_IB_REQUEST_FIXTURE.length() / 2]);
        encoded.putBytes(0, request, 0, ConnectionDataDescriptor.IB_CONNECT_HEADER_LENGTH);
        flyweight.wrap(encoded, ConnectionDataDescriptor.AF_IB_REQUEST_OFFSET)
            .header(ConnectionDataDescriptor.FLAG_IOMAP, 384)
            .iomapEntries(0)
            .targetSgl(0x00007f0012340000L, 0x1234, 2)
            .dataBuffer(0x00007f0012350000L, 0xabcd, 65536);
        assertEquals(AF_IB_REQUEST_FIXTURE, hexOf(encoded, 0, encoded.capacity()));
    }

    @Test
    void shouldAdvertiseTheHostByteOrderAndAlwaysIomap() {
        assertEquals(0x02, ConnectionDataDescriptor.localFlags(ByteOrder.LITTLE_ENDIAN));
        assertEquals(0x03, ConnectionDataDescriptor.localFlags(ByteOrder.BIG_ENDIAN));
    }

    @Test
    void shouldReportUndefinedFlagBitsOnly() {
        assertEquals(0, ConnectionDataDescriptor.unknownFlags(0x03));
        assertEquals(0, ConnectionDataDescriptor.unknownFlags(0xC7));
        assertEquals(0x38, ConnectionDataDescriptor.unknownFlags(0xFF));
        assertEquals(0x08, ConnectionDataDescriptor.unknownFlags(0x0A));
    }
}
