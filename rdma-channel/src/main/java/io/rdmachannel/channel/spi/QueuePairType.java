package io.rdmachannel.channel.spi;

/**
 * Queue-pair transport types, with the ibverbs codes ({@code enum ibv_qp_type}).
 */
public enum QueuePairType {
    /** Reliable connected. */
    RC(2),
    /** XRC initiator: sends to XRC targets of a remote XRC domain. */
    XRC_SEND(9),
    /** XRC target: receives into shared receive queues of an XRC domain. */
    XRC_RECV(10);

    private final int code;

    QueuePairType(final int code) {
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
}
