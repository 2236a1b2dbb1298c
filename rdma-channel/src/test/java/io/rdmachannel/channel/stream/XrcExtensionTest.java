package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HexFormat;
import java.util.function.Consumer;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;

class XrcExtensionTest {
    private static final int SRQ = 0x123456;
    private static final int INITIATOR = 0x00ABCD;
    private static final int CONNECTED = 0xFEDCBA;
    private static final int OFFERED = 0x000777;
    private static final int PEER_TARGET = 0x000999;
    private static final long DOMAIN_LOW = 0x0102030405060708L;
    private static final long DOMAIN_HIGH = 0x1112131415161718L;
    /** Largest private data of a request on rdma_cm over IP, and of a reply. */
    private static final int MAX_REQUEST = 56;
    private static final int MAX_REPLY = 196;

    @Test
    void shouldFillTheRequestPrivateDataRdmaCmCarriesExactly() {
        assertEquals(MAX_REQUEST, XrcExtension.OFFSET + XrcExtension.REQUEST_LENGTH);
        assertEquals(72, XrcExtension.OFFSET + XrcExtension.REPLY_LENGTH);
        assertTrue(XrcExtension.OFFSET + XrcExtension.REPLY_LENGTH <= MAX_REPLY);
    }

    @Test
    void shouldWriteARequestWithANewInitiatorByteForByte() throws ProtocolException {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[MAX_REQUEST]);
        assertEquals(MAX_REQUEST, XrcExtension.writeRequest(buffer, 0, SRQ, INITIATOR, 0, OFFERED));
        assertEquals("01123456" + "0100abcd" + "00000000" + "00000777", hex(buffer, XrcExtension.OFFSET, 16));

        final XrcExtension.Peer peer = XrcExtension.validateRequest(buffer, 0, MAX_REQUEST);
        assertEquals(new XrcExtension.Peer(SRQ, INITIATOR, true, 0, OFFERED, 0, 0), peer);
    }

    @Test
    void shouldWriteARequestReusingAnInitiatorAtTheAfIbOffset() throws ProtocolException {
        final int offset = ConnectionDataDescriptor.AF_IB_REQUEST_OFFSET;
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[offset + MAX_REQUEST]);
        XrcExtension.writeRequest(buffer, offset, SRQ, INITIATOR, CONNECTED, OFFERED);
        assertEquals("01123456" + "0000abcd" + "00fedcba" + "00000777", hex(buffer, offset + XrcExtension.OFFSET, 16));

        final XrcExtension.Peer peer = XrcExtension.validateRequest(buffer, offset, offset + MAX_REQUEST);
        assertEquals(new XrcExtension.Peer(SRQ, INITIATOR, false, CONNECTED, OFFERED, 0, 0), peer);
    }

    @Test
    void shouldWriteAReplyWithItsDomainIdentity() throws ProtocolException {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[MAX_REPLY]);
        assertEquals(72, XrcExtension.writeReply(buffer, 0, SRQ, INITIATOR, true, OFFERED, PEER_TARGET, DOMAIN_LOW,
            DOMAIN_HIGH));
        assertEquals("01123456" + "0100abcd" + "00000777" + "00000999" + "0102030405060708" + "1112131415161718",
            hex(buffer, XrcExtension.OFFSET, 32));

        assertEquals(new XrcExtension.Peer(SRQ, INITIATOR, true, OFFERED, PEER_TARGET, DOMAIN_LOW, DOMAIN_HIGH),
            XrcExtension.validateReply(buffer, 0, 72, OFFERED));

        XrcExtension.writeReply(buffer, 0, SRQ, INITIATOR, false, CONNECTED, PEER_TARGET, DOMAIN_LOW, DOMAIN_HIGH);
        assertEquals(new XrcExtension.Peer(SRQ, INITIATOR, false, CONNECTED, PEER_TARGET, DOMAIN_LOW, DOMAIN_HIGH),
            XrcExtension.validateReply(buffer, 0, 72, OFFERED));
    }

    @Test
    void shouldRefuseEveryBadFieldOfARequestNamingIt() {
        assertRequestRefused(b -> { }, MAX_REQUEST - 1,
            "private data too short for the XRC extension of a request at offset 0: privateDataLength=55, needed=56");
        assertRequestRefused(b -> b.putByte(XrcExtension.SRQ_OFFSET, (byte) 2), MAX_REQUEST,
            "unsupported XRC extension version: xrcVersion=2");
        assertRequestRefused(b -> putNumber(b, XrcExtension.SRQ_OFFSET, 0), MAX_REQUEST,
            "peer named no XRC SRQ: sharedReceiveQueue=0");
        assertRequestRefused(b -> b.putByte(XrcExtension.INITIATOR_OFFSET, (byte) 0x03), MAX_REQUEST,
            "unknown XRC initiator flags: initiatorFlags=0x3");
        assertRequestRefused(b -> putNumber(b, XrcExtension.INITIATOR_OFFSET, 0), MAX_REQUEST,
            "peer named no initiator queue pair: initiator=0");
        assertRequestRefused(b -> putNumber(b, XrcExtension.CONNECTED_TARGET_OFFSET, CONNECTED), MAX_REQUEST,
            "a request's initiator flagged new names no connected target, and one not new names one: "
                + "newInitiator=true, connectedTarget=16702650");
        assertRequestRefused(b -> b.putByte(XrcExtension.INITIATOR_OFFSET, (byte) 0), MAX_REQUEST,
            "a request's initiator flagged new names no connected target, and one not new names one: "
                + "newInitiator=false, connectedTarget=0");
        assertRequestRefused(b -> putNumber(b, XrcExtension.OFFERED_TARGET_OFFSET, 0), MAX_REQUEST,
            "a request offers a target: offeredTarget=0, initiator=43981");
    }

    @Test
    void shouldIgnoreTheReservedBytes() throws ProtocolException {
        final UnsafeBuffer buffer = request();
        buffer.putByte(XrcExtension.CONNECTED_TARGET_OFFSET, (byte) 0x5A);
        buffer.putByte(XrcExtension.OFFERED_TARGET_OFFSET, (byte) 0xA5);
        assertEquals(new XrcExtension.Peer(SRQ, INITIATOR, true, 0, OFFERED, 0, 0),
            XrcExtension.validateRequest(buffer, 0, MAX_REQUEST));
    }

    @Test
    void shouldRefuseEveryBadFieldOfAReplyNamingIt() {
        assertReplyRefused(b -> { }, 71,
            "private data too short for the XRC extension of a reply at offset 0: privateDataLength=71, needed=72");
        assertReplyRefused(b -> putNumber(b, XrcExtension.CONNECTED_TARGET_OFFSET, 0), 72,
            "a reply's initiator must name its target, the one offered if it is new: newInitiator=true, "
                + "connectedTarget=0, offeredTarget=1911");
        assertReplyRefused(b -> putNumber(b, XrcExtension.CONNECTED_TARGET_OFFSET, CONNECTED), 72,
            "a reply's initiator must name its target, the one offered if it is new: newInitiator=true, "
                + "connectedTarget=16702650, offeredTarget=1911");
        assertReplyRefused(b -> putNumber(b, XrcExtension.OFFERED_TARGET_OFFSET, 0), 72,
            "a reply names the target our initiator connects to: peerTarget=0");
        assertReplyRefused(b -> b.setMemory(XrcExtension.DOMAIN_OFFSET, XrcExtension.DOMAIN_LENGTH, (byte) 0), 72,
            "peer's XRC domain identity is all zero");
        assertReplyRefused(b -> b.putByte(XrcExtension.SRQ_OFFSET, (byte) 0), 72,
            "unsupported XRC extension version: xrcVersion=0");
    }

    @Test
    void shouldRefuseToWriteNumbersThatDoNotFit() {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[MAX_REPLY]);
        assertEquals("sharedReceiveQueue must be in [1, 16777215]: sharedReceiveQueue=16777216",
            assertThrows(IllegalArgumentException.class,
                () -> XrcExtension.writeRequest(buffer, 0, 1 << 24, INITIATOR, 0, OFFERED)).getMessage());
        assertEquals("initiator must be in [1, 16777215]: initiator=0", assertThrows(IllegalArgumentException.class,
            () -> XrcExtension.writeRequest(buffer, 0, SRQ, 0, 0, OFFERED)).getMessage());
        assertEquals("connectedTarget must be in [0, 16777215]: connectedTarget=-1",
            assertThrows(IllegalArgumentException.class,
                () -> XrcExtension.writeRequest(buffer, 0, SRQ, INITIATOR, -1, OFFERED)).getMessage());
        assertEquals("offeredTarget must be in [1, 16777215]: offeredTarget=0",
            assertThrows(IllegalArgumentException.class,
                () -> XrcExtension.writeRequest(buffer, 0, SRQ, INITIATOR, 0, 0)).getMessage());
        assertEquals("connectedTarget must be in [1, 16777215]: connectedTarget=0",
            assertThrows(IllegalArgumentException.class,
                () -> XrcExtension.writeReply(buffer, 0, SRQ, INITIATOR, false, 0, PEER_TARGET, 1, 1)).getMessage());
        assertEquals("peerTarget must be in [1, 16777215]: peerTarget=0",
            assertThrows(IllegalArgumentException.class,
                () -> XrcExtension.writeReply(buffer, 0, SRQ, INITIATOR, false, CONNECTED, 0, 1, 1)).getMessage());
        assertEquals("a domain identity must not be all zero", assertThrows(IllegalArgumentException.class,
            () -> XrcExtension.writeReply(buffer, 0, SRQ, INITIATOR, false, CONNECTED, PEER_TARGET, 0, 0))
                .getMessage());
    }

    private static UnsafeBuffer request() {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[MAX_REQUEST]);
        XrcExtension.writeRequest(buffer, 0, SRQ, INITIATOR, 0, OFFERED);
        return buffer;
    }

    private static void assertRequestRefused(final Consumer<UnsafeBuffer> change, final int length,
        final String message) {
        final UnsafeBuffer buffer = request();
        change.accept(buffer);
        assertEquals(message, assertThrows(ProtocolException.class,
            () -> XrcExtension.validateRequest(buffer, 0, length)).getMessage());
    }

    private static void assertReplyRefused(final Consumer<UnsafeBuffer> change, final int length,
        final String message) {
        final UnsafeBuffer buffer = new UnsafeBuffer(new byte[MAX_REPLY]);
        XrcExtension.writeReply(buffer, 0, SRQ, INITIATOR, true, OFFERED, PEER_TARGET, DOMAIN_LOW, DOMAIN_HIGH);
        change.accept(buffer);
        assertEquals(message, assertThrows(ProtocolException.class,
            () -> XrcExtension.validateReply(buffer, 0, length, OFFERED)).getMessage());
    }

    /** Replace the u24 number of a field, keeping its first byte. */
    private static void putNumber(final UnsafeBuffer buffer, final int index, final int number) {
        buffer.putByte(index + 1, (byte) (number >>> 16));
        buffer.putByte(index + 2, (byte) (number >>> 8));
        buffer.putByte(index + 3, (byte) number);
    }

    private static String hex(final UnsafeBuffer buffer, final int index, final int length) {
        final byte[] bytes = new byte[length];
        buffer.getBytes(index, bytes);
        return HexFormat.of().formatHex(bytes);
    }
}
