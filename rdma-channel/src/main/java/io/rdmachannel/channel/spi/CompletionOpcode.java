package io.rdmachannel.channel.spi;

/**
 * What a work completion completed, with the ibverbs codes ({@code enum ibv_wc_opcode}).
 */
public enum CompletionOpcode {
    /** A SEND or SEND WITH IMMEDIATE at the sender. */
    SEND(0),
    /** An RDMA WRITE or RDMA WRITE WITH IMMEDIATE at the sender. */
    RDMA_WRITE(1),
    /** An RDMA READ at the requester. */
    RDMA_READ(2),
    /** A receive consumed by a SEND. */
    RECV(128),
    /** A receive consumed by an RDMA WRITE WITH IMMEDIATE; the data went to the address the writer chose. */
    RECV_RDMA_WITH_IMM(129);

    private final int code;

    CompletionOpcode(final int code) {
        this.code = code;
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
     * The opcode for an ibverbs code.
     *
     * @param code the code.
     * @return the opcode.
     * @throws IllegalArgumentException for a code this SPI does not use.
     */
    public static CompletionOpcode fromCode(final int code) {
        return switch (code) {
            case 0 -> SEND;
            case 1 -> RDMA_WRITE;
            case 2 -> RDMA_READ;
            case 128 -> RECV;
            case 129 -> RECV_RDMA_WITH_IMM;
            default -> throw new IllegalArgumentException("unknown completion opcode: code=" + code);
        };
    }
}
