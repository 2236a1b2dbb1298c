package io.rdmachannel.channel.spi;

/**
 * Send work-request opcodes, with the ibverbs codes ({@code enum ibv_wr_opcode}).
 */
public enum WorkRequestOpcode {
    /** Write local bytes to a remote address; the peer is not told. */
    RDMA_WRITE(0, CompletionOpcode.RDMA_WRITE),
    /** Write local bytes to a remote address and consume one receive of the peer, carrying a 32-bit immediate. */
    RDMA_WRITE_WITH_IMM(1, CompletionOpcode.RDMA_WRITE),
    /** Send local bytes into the peer's next posted receive. */
    SEND(2, CompletionOpcode.SEND),
    /** Send local bytes into the peer's next posted receive, with a 32-bit immediate. */
    SEND_WITH_IMM(3, CompletionOpcode.SEND),
    /** Read remote bytes into local memory. */
    RDMA_READ(4, CompletionOpcode.RDMA_READ);

    private static final WorkRequestOpcode[] BY_CODE = values();

    private final int code;
    private final CompletionOpcode completionOpcode;

    WorkRequestOpcode(final int code, final CompletionOpcode completionOpcode) {
        this.code = code;
        this.completionOpcode = completionOpcode;
    }

    /**
     * The ibverbs code.
     *
     * @return the code.
     */
    public int code() {
        return code;
    }

    /**
     * The opcode the sender's completion of this request carries.
     *
     * @return the completion opcode.
     */
    public CompletionOpcode completionOpcode() {
        return completionOpcode;
    }

    /**
     * Whether the request consumes a receive at the peer.
     *
     * @return true for SEND, SEND WITH IMMEDIATE and RDMA WRITE WITH IMMEDIATE.
     */
    public boolean consumesReceive() {
        return this == SEND || this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM;
    }

    /**
     * Whether the request carries an immediate value.
     *
     * @return true for the two WITH_IMM opcodes.
     */
    public boolean hasImmediate() {
        return this == SEND_WITH_IMM || this == RDMA_WRITE_WITH_IMM;
    }

    /**
     * Whether the request addresses remote memory by address and rkey.
     *
     * @return true for RDMA WRITE, RDMA WRITE WITH IMMEDIATE and RDMA READ.
     */
    public boolean isRdma() {
        return this == RDMA_WRITE || this == RDMA_WRITE_WITH_IMM || this == RDMA_READ;
    }

    /**
     * The opcode for an ibverbs code.
     *
     * @param code the code.
     * @return the opcode.
     * @throws IllegalArgumentException for a code this SPI does not use.
     */
    public static WorkRequestOpcode fromCode(final int code) {
        if (code < 0 || code >= BY_CODE.length) {
            throw new IllegalArgumentException("unknown work request opcode: code=" + code);
        }
        return BY_CODE[code];
    }
}
