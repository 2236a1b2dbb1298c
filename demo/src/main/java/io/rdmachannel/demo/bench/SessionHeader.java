package io.rdmachannel.demo.bench;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * The first bytes the client writes on every connection: what the server is to do on it.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +---------------------------------------------------------------+
 *  |                            MAGIC                              |
 *  +---------------------------------------------------------------+
 *  |                  workload      |               mode           |
 *  +---------------------------------------------------------------+
 *  |                         message size                          |
 *  +---------------------------------------------------------------+
 *  |                       busy poll micros                        |
 *  +---------------------------------------------------------------+
 *  |        warm-up: messages (latency) or bytes (bandwidth)       |
 *  |                                                               |
 *  +---------------------------------------------------------------+
 *  |   count: timed messages (latency) or bytes (bandwidth)        |
 *  |                                                               |
 *  +---------------------------------------------------------------+
 * </pre>
 *
 * Little-endian. Latency: {@code warmUp + count} round trips. Bandwidth: the server acknowledges {@code warmUp}
 * bytes, then {@code count} more.
 *
 * @param workload       what to serve.
 * @param mode           how to wait for the channel.
 * @param size           message size in bytes.
 * @param busyPollMicros {@code RDMA_BUSY_POLL} for RDMA channels in busy-poll mode.
 * @param warmUp         untimed round trips or bytes.
 * @param count          timed round trips or bytes.
 */
record SessionHeader(Workload workload, Mode mode, int size, int busyPollMicros, long warmUp, long count) {
    static final int MAGIC = 0x52424e43;
    static final int LENGTH = 32;

    /**
     * Write this header into {@code buffer} from its position.
     */
    void encode(final ByteBuffer buffer) {
        buffer.order(ByteOrder.LITTLE_ENDIAN).putInt(MAGIC).putShort((short) workload.code())
            .putShort((short) mode.code()).putInt(size).putInt(busyPollMicros).putLong(warmUp).putLong(count);
    }

    /**
     * Read a header from {@code buffer}'s position.
     *
     * @throws IllegalArgumentException when it is not one.
     */
    static SessionHeader decode(final ByteBuffer buffer) {
        buffer.order(ByteOrder.LITTLE_ENDIAN);
        final int magic = buffer.getInt();
        if (magic != MAGIC) {
            throw new IllegalArgumentException("not a benchmark session: magic=" + Integer.toHexString(magic));
        }
        final int workload = buffer.getShort();
        final int mode = buffer.getShort();
        try {
            return new SessionHeader(Workload.ofCode(workload), Mode.ofCode(mode), buffer.getInt(), buffer.getInt(),
                buffer.getLong(), buffer.getLong());
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("bad session header: workload=" + workload + " mode=" + mode, ex);
        }
    }
}
