package io.rdmachannel.demo.bench;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class SessionHeaderTest {
    @Test
    void shouldDecodeWhatItEncodes() {
        final SessionHeader header = new SessionHeader(Workload.BANDWIDTH, Mode.BUSY_POLL, 65536, 1000, 1L << 30,
            1L << 38);
        final ByteBuffer buffer = ByteBuffer.allocate(SessionHeader.LENGTH);

        header.encode(buffer);

        assertEquals(SessionHeader.LENGTH, buffer.position());
        assertEquals(header, SessionHeader.decode(buffer.flip()));
    }

    @Test
    void shouldRejectBytesThatAreNotAHeader() {
        final ByteBuffer buffer = ByteBuffer.allocate(SessionHeader.LENGTH).order(ByteOrder.LITTLE_ENDIAN)
            .putInt(0, 0x47455420);

        assertEquals("not a benchmark session: magic=47455420", assertThrows(IllegalArgumentException.class,
            () -> SessionHeader.decode(buffer)).getMessage());
    }

    @Test
    void shouldPutFixedCodesOnTheWire() {
        final ByteBuffer buffer = ByteBuffer.allocate(SessionHeader.LENGTH);

        new SessionHeader(Workload.LATENCY, Mode.SELECTOR, 64, 1, 0, 1).encode(buffer);

        assertEquals(1, buffer.getShort(4));
        assertEquals(2, buffer.getShort(6));
    }

    @Test
    void shouldRejectAnUnknownMode() {
        final ByteBuffer buffer = ByteBuffer.allocate(SessionHeader.LENGTH);
        new SessionHeader(Workload.LATENCY, Mode.BLOCKING, 64, 1, 0, 1).encode(buffer);
        buffer.putShort(6, (short) 9).flip();

        assertEquals("bad session header: workload=1 mode=9", assertThrows(IllegalArgumentException.class,
            () -> SessionHeader.decode(buffer)).getMessage());
    }
}
