package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.ByteOrder;
import java.util.HexFormat;

import org.agrona.concurrent.UnsafeBuffer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class MessageSendDescriptorTest {
    @Test
    void shouldPutTheFixturesInTheSendersOrder() {
        final UnsafeBuffer little = new UnsafeBuffer(new byte[16]);
        MessageSendDescriptor.message(little, 0, ImmediateData.data(1000), ByteOrder.LITTLE_ENDIAN);
        MessageSendDescriptor.message(little, 4, ImmediateData.sgl(384), ByteOrder.LITTLE_ENDIAN);
        MessageSendDescriptor.message(little, 8, ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN),
            ByteOrder.LITTLE_ENDIAN);
        MessageSendDescriptor.message(little, 12, ImmediateData.ctrl(ImmediateData.CTRL_DISCONNECT),
            ByteOrder.LITTLE_ENDIAN);
        // an x86 or ARM rsocket copies its uint32_t as it is: no htobe32 on this path
        assertEquals("e8030000" + "80010080" + "020000e0" + "000000e0", HexFormat.of().formatHex(little.byteArray()));

        final UnsafeBuffer big = new UnsafeBuffer(new byte[4]);
        MessageSendDescriptor.message(big, 0, ImmediateData.sgl(384), ByteOrder.BIG_ENDIAN);
        assertEquals("80000180", HexFormat.of().formatHex(big.byteArray()));
    }

    @Test
    void shouldReadInThePeersOrder() {
        final UnsafeBuffer wire = new UnsafeBuffer(HexFormat.of().parseHex("e8030000" + "80000180"));
        assertEquals(ImmediateData.data(1000), MessageSendDescriptor.message(wire, 0, ByteOrder.LITTLE_ENDIAN));
        assertEquals(ImmediateData.sgl(384), MessageSendDescriptor.message(wire, 4, ByteOrder.BIG_ENDIAN));
    }

    @Test
    void shouldGiveEachReceiveItsOwnBuffer() {
        assertEquals(0, MessageSendDescriptor.bufferOffset(0));
        assertEquals(4, MessageSendDescriptor.bufferOffset(1));
        assertEquals(4 * 387, MessageSendDescriptor.bufferOffset(387));
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 3, 5, 16, -1})
    void shouldRefuseAnyOtherLengthThanFour(final int byteLength) {
        final ProtocolException refused = assertThrows(ProtocolException.class,
            () -> MessageSendDescriptor.checkLength(byteLength));
        assertEquals("a message must be a 4-byte SEND in message mode: byteLength=" + Integer.toUnsignedString(
            byteLength), refused.getMessage());
        assertDoesNotThrow(() -> MessageSendDescriptor.checkLength(4));
    }
}
