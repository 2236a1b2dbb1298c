package io.rdmachannel.channel.spi;

/**
 * Asynchronous events of a queue pair, with the ibverbs codes ({@code enum ibv_event_type}): what the device reports
 * about a queue pair outside its completions.
 */
public enum QueuePairEvent {
    /** A local error moved the queue pair to ERROR ({@code IBV_EVENT_QP_FATAL}). */
    FATAL(1),
    /** The peer reported an invalid request ({@code IBV_EVENT_QP_REQ_ERR}). */
    REQUEST_ERROR(2),
    /** The peer reported a protection error ({@code IBV_EVENT_QP_ACCESS_ERR}). */
    ACCESS_ERROR(3),
    /** The first message arrived in READY_TO_RECEIVE ({@code IBV_EVENT_COMM_EST}). */
    COMMUNICATION_ESTABLISHED(4),
    /**
     * A queue pair that takes its receives from a shared receive queue is in ERROR and will consume no more of them
     * ({@code IBV_EVENT_QP_LAST_WQE_REACHED}): its users may destroy it.
     */
    LAST_WORK_REQUEST_REACHED(16);

    private final int code;

    QueuePairEvent(final int code) {
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
     * Whether the event reports an error that failed the queue pair.
     *
     * @return true for {@link #FATAL}, {@link #REQUEST_ERROR} and {@link #ACCESS_ERROR}.
     */
    public boolean isError() {
        return this == FATAL || this == REQUEST_ERROR || this == ACCESS_ERROR;
    }

    /**
     * The event with an ibverbs code.
     *
     * @param code the code.
     * @return the event.
     * @throws IllegalArgumentException if no queue-pair event has that code.
     */
    public static QueuePairEvent fromCode(final int code) {
        for (final QueuePairEvent event : values()) {
            if (event.code == code) {
                return event;
            }
        }
        throw new IllegalArgumentException("no queue pair event has code=" + code);
    }
}
