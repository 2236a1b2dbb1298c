package io.rdmachannel.channel.spi;

/**
 * Queue-pair states, with the ibverbs codes ({@code enum ibv_qp_state}). An RC queue pair moves
 * RESET, INIT, RTR (ready to receive), RTS (ready to send); any state may move to ERROR, and ERROR or any other state
 * back to RESET.
 */
public enum QueuePairState {
    /** Created; posts are refused. */
    RESET(0),
    /** Initialised: receives may be posted, sends are refused. */
    INIT(1),
    /** Ready to receive: connected to a remote queue pair; sends are still refused. */
    READY_TO_RECEIVE(2),
    /** Ready to send: fully operational. */
    READY_TO_SEND(3),
    /** Send queue drained; not used by this SPI. */
    SEND_QUEUE_DRAINED(4),
    /** Send queue error; not used for RC. */
    SEND_QUEUE_ERROR(5),
    /** Error: outstanding and new work requests complete with {@link CompletionStatus#WORK_REQUEST_FLUSHED}. */
    ERROR(6);

    private static final QueuePairState[] BY_CODE = values();

    private final int code;

    QueuePairState(final int code) {
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
     * The state for an ibverbs code.
     *
     * @param code the code.
     * @return the state.
     * @throws IllegalArgumentException for an unknown code.
     */
    public static QueuePairState fromCode(final int code) {
        if (code < 0 || code >= BY_CODE.length) {
            throw new IllegalArgumentException("unknown queue pair state: code=" + code);
        }
        return BY_CODE[code];
    }
}
