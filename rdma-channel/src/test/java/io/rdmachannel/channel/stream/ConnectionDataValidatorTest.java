package io.rdmachannel.channel.stream;

import static io.rdmachannel.channel.stream.ConnectionDataFlyweightTest.AF_IB_REQUEST_FIXTURE;
import static io.rdmachannel.channel.stream.ConnectionDataFlyweightTest.BIG_ENDIAN_FIXTURE;
import static io.rdmachannel.channel.stream.ConnectionDataFlyweightTest.LITTLE_ENDIAN_FIXTURE;
import static io.rdmachannel.channel.stream.ConnectionDataFlyweightTest.bufferOf;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

import java.nio.ByteOrder;

class ConnectionDataValidatorTest {
    private final ConnectionDataValidator validator = new ConnectionDataValidator();
    private final UnsafeBuffer buffer = bufferOf(LITTLE_ENDIAN_FIXTURE);
    private final ConnectionDataFlyweight flyweight = new ConnectionDataFlyweight().wrap(buffer, 0);

    private String refusal() {
        return assertThrows(ProtocolException.class, () -> validator.validate(buffer, 0, buffer.capacity()))
            .getMessage();
    }

    @Test
    void shouldAcceptAndDecodeTheLittleEndianFixture() throws ProtocolException {
        final PeerConnectionData data = validator.validate(buffer, 0, 40);

        assertEquals(new PeerConnectionData(0x02, 384, 0, 0x00007f0012340000L, 0x1234, 2,
            0x00007f0012350000L, 0xabcd, 65536, 384), data);
        assertEquals(ByteOrder.LITTLE_ENDIAN, data.byteOrder());
        assertTrue(data.hasIomap());
        assertEquals(0x00007f0012340020L, data.iomapTableAddress());
        assertEquals(0, data.extensionFlags());
        assertEquals(0, data.unknownFlags());
    }

    @Test
    void shouldAcceptAndDecodeTheBigEndianFixture() throws ProtocolException {
        final PeerConnectionData data = validator.validate(bufferOf(BIG_ENDIAN_FIXTURE), 0, 40);

        assertEquals(new PeerConnectionData(0x03, 16, 512, 0xffffffff00001000L, 0xdeadbeef, 2,
            0x200000L, 0x80000001, 512 * 1024, 16), data);
        assertEquals(ByteOrder.BIG_ENDIAN, data.byteOrder());
    }

    @Test
    void shouldReadTheConnectionDataAfterTheIbConnectHeader() throws ProtocolException {
        final UnsafeBuffer request = bufferOf(AF_IB_REQUEST_FIXTURE);

        final PeerConnectionData data =
            validator.validate(request, ConnectionDataDescriptor.AF_IB_REQUEST_OFFSET, request.capacity());

        assertEquals(validator.validate(buffer, 0, 40), data);
    }

    @Test
    void shouldIgnoreTrailingPadding() throws ProtocolException {
        final UnsafeBuffer padded = new UnsafeBuffer(new byte[56]);
        padded.putBytes(0, buffer, 0, 40);
        padded.setMemory(40, 16, (byte) 0xFF);

        assertEquals(validator.validate(buffer, 0, 40), validator.validate(padded, 0, 56));
    }

    @Test
    void shouldRefuseShortPrivateData() {
        final ProtocolException ex =
            assertThrows(ProtocolException.class, () -> validator.validate(buffer, 0, 39));
        assertEquals("private data too short for connection data at offset 0: privateDataLength=39", ex.getMessage());
    }

    @Test
    void shouldRefuseShortAfIbPrivateData() {
        final UnsafeBuffer request = bufferOf(AF_IB_REQUEST_FIXTURE);
        final ProtocolException ex = assertThrows(ProtocolException.class, () -> validator.validate(request, 36, 56));
        assertEquals("private data too short for connection data at offset 36: privateDataLength=56", ex.getMessage());
    }

    @Test
    void shouldRefuseAnUnknownVersion() {
        flyweight.version(2);
        assertEquals("unsupported connection data version: version=2", refusal());
    }

    @Test
    void shouldRefuseVersionZero() {
        flyweight.version(0);
        assertEquals("unsupported connection data version: version=0", refusal());
    }

    @Test
    void shouldRefuseZeroCredits() {
        flyweight.credits(0);
        assertEquals("peer advertised no receive credits: credits=0", refusal());
    }

    @Test
    void shouldAcceptTheLargestCredits() throws ProtocolException {
        flyweight.credits(0xFFFF);
        assertEquals(0xFFFF, validator.validate(buffer, 0, 40).credits());
    }

    @Test
    void shouldRefuseZeroSglEntries() {
        flyweight.targetSgl(0x00007f0012340000L, 0x1234, 0);
        assertEquals("target SGL entries must be in [1, 256]: targetSglEntries=0", refusal());
    }

    @Test
    void shouldRefuseTooManySglEntries() {
        flyweight.targetSgl(0x00007f0012340000L, 0x1234, 257);
        assertEquals("target SGL entries must be in [1, 256]: targetSglEntries=257", refusal());
    }

    @Test
    void shouldRefuseAnSglEntryCountWithTheTopBitSet() {
        flyweight.targetSgl(0x00007f0012340000L, 0x1234, 0x8000_0002L);
        assertEquals("target SGL entries must be in [1, 256]: targetSglEntries=2147483650", refusal());
    }

    @Test
    void shouldAcceptTheConfiguredSglCap() throws ProtocolException {
        flyweight.targetSgl(0x00007f0012340000L, 0x1234, 1024);
        validator.maxTargetSglEntries(1024);
        assertEquals(1024, validator.validate(buffer, 0, 40).targetSglEntries());
    }

    @Test
    void shouldRefuseAZeroRing() {
        flyweight.dataBuffer(0x00007f0012350000L, 0xabcd, 0);
        assertEquals("data buffer length must be in [1, 1073741824]: dataBufferLength=0", refusal());
    }

    @Test
    void shouldRefuseAnOversizedRing() {
        flyweight.dataBuffer(0x00007f0012350000L, 0xabcd, (1L << 30) + 1);
        assertEquals("data buffer length must be in [1, 1073741824]: dataBufferLength=1073741825", refusal());
    }

    @Test
    void shouldRefuseARingOverTheConfiguredCap() {
        validator.maxDataBufferLength(65535);
        assertEquals("data buffer length must be in [1, 65535]: dataBufferLength=65536", refusal());
    }

    @Test
    void shouldRefuseARingAddressThatOverflows() {
        flyweight.dataBuffer(0xFFFF_FFFF_FFFF_0001L, 0xabcd, 65536);
        assertEquals("remote range wraps the 64-bit address space: dataBufferAddress=0xffffffffffff0001, "
            + "dataBufferLength=65536", refusal());
    }

    @Test
    void shouldRefuseARingEndingExactlyAtTwoToTheSixtyFour() {
        flyweight.dataBuffer(0xFFFF_FFFF_FFFF_0000L, 0xabcd, 65536);
        assertEquals("remote range wraps the 64-bit address space: dataBufferAddress=0xffffffffffff0000, "
            + "dataBufferLength=65536", refusal());
    }

    @Test
    void shouldAcceptARingEndingAtTheLastAddress() throws ProtocolException {
        flyweight.dataBuffer(0xFFFF_FFFF_FFFF_0000L, 0xabcd, 65535);
        assertEquals(0xFFFF_FFFF_FFFF_0000L, validator.validate(buffer, 0, 40).dataBufferAddress());
    }

    @Test
    void shouldRefuseATargetSglAddressThatOverflows() {
        flyweight.targetSgl(0xFFFF_FFFF_FFFF_FFF0L, 0x1234, 2);
        assertEquals("remote range wraps the 64-bit address space: targetSglAddress=0xfffffffffffffff0, "
            + "targetSglBytes=32", refusal());
    }

    @Test
    void shouldCountTheIomapTableInTheTargetSglRange() {
        flyweight.iomapScale(0xFF).targetSgl(0xFFFF_FFFF_FFF8_0000L, 0x1234, 2);
        assertEquals("remote range wraps the 64-bit address space: targetSglAddress=0xfffffffffff80000, "
            + "targetSglBytes=780320", refusal());
    }

    @Test
    void shouldIgnoreTheIomapScaleWithoutTheIomapFlag() throws ProtocolException {
        flyweight.flags(0).iomapScale(0xFF).targetSgl(0xFFFF_FFFF_FFF8_0000L, 0x1234, 2);

        final PeerConnectionData data = validator.validate(buffer, 0, 40);

        assertEquals(0, data.iomapEntries());
        assertFalse(data.hasIomap());
    }

    @Test
    void shouldAcceptAndReportUnknownAndExtensionFlags() throws ProtocolException {
        flyweight.flags(0xFA);

        final PeerConnectionData data = validator.validate(buffer, 0, 40);

        assertEquals(0x38, data.unknownFlags());
        assertEquals(ConnectionDataDescriptor.FLAG_XRC | ConnectionDataDescriptor.FLAG_ZERO_COPY_PLACEMENT,
            data.extensionFlags());
    }

    @Test
    void shouldRefuseUnknownFlagsWhenAskedTo() {
        validator.refuseUnknownFlags(true);
        flyweight.flags(0x0A);
        assertEquals("unknown connection data flags: flags=0xa", refusal());
    }

    @Test
    void shouldNotRefuseExtensionFlagsWhenRefusingUnknownOnes() throws ProtocolException {
        validator.refuseUnknownFlags(true);
        flyweight.flags(0xC2);
        assertEquals(0xC0, validator.validate(buffer, 0, 40).extensionFlags());
    }

    @Test
    void shouldTakeTheCreditWindowOnlyWithTheSharedCreditsFlag() throws ProtocolException {
        buffer.putShort(ConnectionDataDescriptor.CREDIT_WINDOW_OFFSET, (short) 1000,
            ConnectionDataDescriptor.BYTE_ORDER);
        assertEquals(384, validator.validate(buffer, 0, 40).creditWindow());

        flyweight.creditWindow(1000);

        final PeerConnectionData data = validator.validate(buffer, 0, 40);
        assertEquals(1000, data.creditWindow());
        assertEquals(384, data.credits());
        assertEquals(ConnectionDataDescriptor.FLAG_SHARED_CREDITS, data.extensionFlags());
    }

    @Test
    void shouldRefuseACreditWindowBelowTheCreditsOrBeyondHalfTheSequence() {
        flyweight.creditWindow(383);
        assertEquals("credit window must be in [credits, 32767]: creditWindow=383, credits=384", refusal());
        flyweight.creditWindow(0x8000);
        assertEquals("credit window must be in [credits, 32767]: creditWindow=32768, credits=384", refusal());
    }

    @Test
    void shouldIgnoreReservedBytes() throws ProtocolException {
        buffer.setMemory(ConnectionDataDescriptor.RESERVED_OFFSET, 3, (byte) 0x77);
        assertEquals(384, validator.validate(buffer, 0, 40).credits());
    }

    @Test
    void shouldRefuseBadLimits() {
        assertEquals("maxTargetSglEntries must be in [1, 65535]: maxTargetSglEntries=0",
            assertThrows(IllegalArgumentException.class, () -> validator.maxTargetSglEntries(0)).getMessage());
        assertEquals("maxDataBufferLength must be at least 1: maxDataBufferLength=0",
            assertThrows(IllegalArgumentException.class, () -> validator.maxDataBufferLength(0)).getMessage());
    }
}
