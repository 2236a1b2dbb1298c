package io.rdmachannel.channel.stream;

/**
 * Codec of the rsockets message: one 32-bit word carried as the immediate of an RDMA WRITE WITH IMMEDIATE (the
 * payload of a 4-byte SEND on iWARP). Values here are host integers; the verbs provider puts the immediate on the
 * wire big-endian, as C's {@code htobe32} does.
 *
 * <pre>
 *   0                   1                   2                   3
 *   0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
 *  +-----+---------------------------------------------------------+
 *  | Op  |                    Operand (29 bits)                    |
 *  +-----+---------------------------------------------------------+
 * </pre>
 *
 * <table>
 *     <caption>Ops (bits 31..29)</caption>
 *     <tr><th>op</th><th>name</th><th>on the wire</th><th>operand</th></tr>
 *     <tr><td>0</td><td>{@link #DATA}</td><td>yes</td><td>bytes just written into the current target region;
 *     0 is never sent by C but tolerated</td></tr>
 *     <tr><td>1</td><td>{@link #RSVD_DATA_MORE}</td><td>refused</td><td>-</td></tr>
 *     <tr><td>2</td><td>{@link #WRITE}</td><td>refused: a local wr_id tag of riowrite</td><td>-</td></tr>
 *     <tr><td>3</td><td>{@link #RSVD_DRA_MORE}</td><td>refused</td><td>-</td></tr>
 *     <tr><td>4</td><td>{@link #SGL}</td><td>yes</td><td>absolute send credit limit; only the low 16 bits count
 *     ({@link #creditLimit(int)}): C sends the u16 sum {@code rseq_no + rq_size} unmasked, so bit 16 may be
 *     set</td></tr>
 *     <tr><td>5</td><td>{@link #RSVD}</td><td>refused</td><td>-</td></tr>
 *     <tr><td>6</td><td>{@link #IOMAP_SGL}</td><td>yes</td><td>index of the iomap entry just written, in bits
 *     15..0; bits 28..16 are reserved and ignored</td></tr>
 *     <tr><td>7</td><td>{@link #CTRL}</td><td>yes</td><td>{@link #CTRL_DISCONNECT}, {@link #CTRL_KEEPALIVE} or
 *     {@link #CTRL_SHUTDOWN}; any other operand is refused</td></tr>
 * </table>
 *
 * A C receiver treats ops 1, 3 and 5 as DATA and queues their operand as a byte count, and ignores op 2: we never
 * emit them, and receiving one is a protocol error, because a conforming peer never sends them.
 */
public final class ImmediateData {
    /** Position of the op in the word. */
    public static final int OP_SHIFT = 29;
    /** Bits of the operand. */
    public static final int OPERAND_MASK = 0x1FFF_FFFF;
    /** Largest operand, also the largest DATA length. */
    public static final int MAX_OPERAND = OPERAND_MASK;
    /** Bits of an SGL operand that carry the credit limit, and of an IOMAP_SGL operand that carry the index. */
    public static final int SEQUENCE_MASK = 0xFFFF;

    /** Data written into the receiver's current target region ({@code RS_OP_DATA}). */
    public static final int DATA = 0;
    /** Reserved ({@code RS_OP_RSVD_DATA_MORE}); never on the wire. */
    public static final int RSVD_DATA_MORE = 1;
    /** riowrite's plain write ({@code RS_OP_WRITE}); a local tag only, never on the wire. */
    public static final int WRITE = 2;
    /** Reserved ({@code RS_OP_RSVD_DRA_MORE}); never on the wire. */
    public static final int RSVD_DRA_MORE = 3;
    /** A credit limit, possibly with a new SGE written into the target SGL ({@code RS_OP_SGL}). */
    public static final int SGL = 4;
    /** Reserved ({@code RS_OP_RSVD}); never on the wire. */
    public static final int RSVD = 5;
    /** An iomap entry was written into the receiver's iomap table ({@code RS_OP_IOMAP_SGL}). */
    public static final int IOMAP_SGL = 6;
    /** A control message ({@code RS_OP_CTRL}). */
    public static final int CTRL = 7;

    /** Control operand: the sender will neither send nor receive any more ({@code RS_CTRL_DISCONNECT}). */
    public static final int CTRL_DISCONNECT = 0;
    /** Control operand: keepalive ({@code RS_CTRL_KEEPALIVE}); C sends it as a plain write the peer never sees. */
    public static final int CTRL_KEEPALIVE = 1;
    /** Control operand: the sender will send no more, a half close ({@code RS_CTRL_SHUTDOWN}). */
    public static final int CTRL_SHUTDOWN = 2;

    /** Ops a conforming peer may send: DATA, SGL, IOMAP_SGL and CTRL. */
    private static final int INBOUND_OPS = (1 << DATA) | (1 << SGL) | (1 << IOMAP_SGL) | (1 << CTRL);

    private static final String[] OP_NAMES = {
        "DATA", "RSVD_DATA_MORE", "WRITE", "RSVD_DRA_MORE", "SGL", "RSVD", "IOMAP_SGL", "CTRL"
    };

    private ImmediateData() {
    }

    /**
     * Build a message without checks: the op's low 3 bits and the operand's low 29 bits.
     *
     * @param op      the op, in [0, 7].
     * @param operand the operand, in [0, {@link #MAX_OPERAND}].
     * @return the message.
     */
    public static int encode(final int op, final int operand) {
        return (op << OP_SHIFT) | (operand & OPERAND_MASK);
    }

    /**
     * A DATA message.
     *
     * @param length bytes written, in [0, {@link #MAX_OPERAND}].
     * @return the message.
     * @throws IllegalArgumentException if the length does not fit the operand.
     */
    public static int data(final int length) {
        if ((length & ~OPERAND_MASK) != 0) {
            throw new IllegalArgumentException("DATA length must be in [0, " + MAX_OPERAND + "]: length=" + length);
        }
        return encode(DATA, length);
    }

    /**
     * An SGL message granting credits up to an absolute limit.
     *
     * @param creditLimit the receiver's {@code rseq_no + rq_size}; truncated to 16 bits.
     * @return the message.
     */
    public static int sgl(final int creditLimit) {
        return encode(SGL, creditLimit & SEQUENCE_MASK);
    }

    /**
     * An IOMAP_SGL message.
     *
     * @param index the iomap entry just written, in [0, 0xFFFF].
     * @return the message.
     * @throws IllegalArgumentException if the index does not fit 16 bits.
     */
    public static int iomapSgl(final int index) {
        if ((index & ~SEQUENCE_MASK) != 0) {
            throw new IllegalArgumentException("iomap index must be in [0, 65535]: index=" + index);
        }
        return encode(IOMAP_SGL, index);
    }

    /**
     * A CTRL message.
     *
     * @param control {@link #CTRL_DISCONNECT}, {@link #CTRL_KEEPALIVE} or {@link #CTRL_SHUTDOWN}.
     * @return the message.
     * @throws IllegalArgumentException if the operand is not a known control.
     */
    public static int ctrl(final int control) {
        if (control < CTRL_DISCONNECT || control > CTRL_SHUTDOWN) {
            throw new IllegalArgumentException("unknown control operand: control=" + control);
        }
        return encode(CTRL, control);
    }

    /**
     * The op of a message.
     *
     * @param immediate the message.
     * @return in [0, 7].
     */
    public static int op(final int immediate) {
        return immediate >>> OP_SHIFT;
    }

    /**
     * The operand of a message.
     *
     * @param immediate the message.
     * @return in [0, {@link #MAX_OPERAND}].
     */
    public static int operand(final int immediate) {
        return immediate & OPERAND_MASK;
    }

    /**
     * The credit limit of an SGL message, as the u16 the sender compares its sequence with.
     *
     * @param immediate an SGL message.
     * @return in [0, 0xFFFF].
     */
    public static int creditLimit(final int immediate) {
        return immediate & SEQUENCE_MASK;
    }

    /**
     * The entry index of an IOMAP_SGL message.
     *
     * @param immediate an IOMAP_SGL message.
     * @return in [0, 0xFFFF].
     */
    public static int iomapIndex(final int immediate) {
        return immediate & SEQUENCE_MASK;
    }

    /**
     * Whether a received message is one a conforming peer may send: DATA (any length), SGL, IOMAP_SGL, or CTRL with
     * a known operand.
     *
     * @param immediate the received message.
     * @return false for ops 1, 2, 3, 5 and for an unknown CTRL operand.
     */
    public static boolean isValidInbound(final int immediate) {
        final int op = op(immediate);
        return (INBOUND_OPS & (1 << op)) != 0 && (op != CTRL || operand(immediate) <= CTRL_SHUTDOWN);
    }

    /**
     * Classify a received message, refusing what a conforming peer never sends.
     *
     * @param immediate the received message.
     * @return its op: {@link #DATA}, {@link #SGL}, {@link #IOMAP_SGL} or {@link #CTRL}.
     * @throws ProtocolException for ops 1, 2, 3 and 5, and for a CTRL with an unknown operand.
     */
    public static int checkInbound(final int immediate) throws ProtocolException {
        final int op = op(immediate);
        if ((INBOUND_OPS & (1 << op)) == 0) {
            throw new ProtocolException("message op not allowed on the wire: op=" + op + " (" + OP_NAMES[op]
                + "), immediate=0x" + Integer.toHexString(immediate));
        }
        if (op == CTRL && operand(immediate) > CTRL_SHUTDOWN) {
            throw new ProtocolException("unknown control message: operand=" + operand(immediate)
                + ", immediate=0x" + Integer.toHexString(immediate));
        }
        return op;
    }

    /**
     * The name of an op.
     *
     * @param op in [0, 7].
     * @return its rsockets name without the {@code RS_OP_} prefix.
     */
    public static String opName(final int op) {
        return OP_NAMES[op & 7];
    }

    /**
     * Describe a message for logs and errors, e.g. {@code SGL|768}.
     *
     * @param immediate the message.
     * @return op name and operand.
     */
    public static String toString(final int immediate) {
        return opName(op(immediate)) + "|" + operand(immediate);
    }
}
