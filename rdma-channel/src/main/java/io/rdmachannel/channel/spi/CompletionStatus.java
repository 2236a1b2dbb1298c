package io.rdmachannel.channel.spi;

/**
 * The status of a work completion, with the ibverbs codes ({@code enum ibv_wc_status}).
 */
public enum CompletionStatus {
    /** The operation completed. */
    SUCCESS(0, "success"),
    /** A received message was longer than the receive buffer posted for it. */
    LOCAL_LENGTH_ERROR(1, "local length error"),
    /** An internal consistency error at the queue pair, e.g. an inline payload beyond the limit. */
    LOCAL_QP_OPERATION_ERROR(2, "local QP operation error"),
    /** Reserved for the EE context; never produced. */
    LOCAL_EEC_OPERATION_ERROR(3, "local EE context operation error"),
    /** A local buffer was outside its memory region, had a wrong lkey, or lacked the access it needed. */
    LOCAL_PROTECTION_ERROR(4, "local protection error"),
    /** The queue pair was in the error state: the request was not executed. */
    WORK_REQUEST_FLUSHED(5, "work request flushed"),
    /** A memory-window bind failed. */
    MEMORY_WINDOW_BIND_ERROR(6, "memory window bind error"),
    /** An unexpected transport response. */
    BAD_RESPONSE_ERROR(7, "bad response error"),
    /** A local access violation while executing a request from the peer. */
    LOCAL_ACCESS_ERROR(8, "local access error"),
    /** The responder refused the request, e.g. a SEND longer than its posted receive buffer. */
    REMOTE_INVALID_REQUEST(9, "remote invalid request error"),
    /** The remote memory was not registered with that rkey, out of its bounds, or lacked the access needed. */
    REMOTE_ACCESS_ERROR(10, "remote access error"),
    /** The responder could not complete the operation. */
    REMOTE_OPERATION_ERROR(11, "remote operation error"),
    /** The peer did not answer within the retry count: it is gone or unreachable. */
    TRANSPORT_RETRY_EXCEEDED(12, "transport retry counter exceeded"),
    /** The peer had no receive posted within the RNR retry count. */
    RNR_RETRY_EXCEEDED(13, "RNR retry counter exceeded"),
    /** Reserved for RD domains; never produced. */
    LOCAL_RDD_VIOLATION(14, "local RDD violation error"),
    /** Reserved for RD; never produced. */
    REMOTE_INVALID_RD_REQUEST(15, "remote invalid RD request"),
    /** The responder aborted the operation. */
    REMOTE_ABORTED(16, "operation aborted"),
    /** Reserved for the EE context; never produced. */
    INVALID_EEC_NUMBER(17, "invalid EE context number"),
    /** Reserved for the EE context; never produced. */
    INVALID_EEC_STATE(18, "invalid EE context state"),
    /** A fatal device error. */
    FATAL_ERROR(19, "fatal error"),
    /** The responder timed out. */
    RESPONSE_TIMEOUT(20, "response timeout error"),
    /** Any other error. */
    GENERAL_ERROR(21, "general error");

    private static final CompletionStatus[] BY_CODE;

    static {
        final CompletionStatus[] values = values();
        BY_CODE = new CompletionStatus[values[values.length - 1].code + 1];
        for (final CompletionStatus status : values) {
            BY_CODE[status.code] = status;
        }
    }

    private final int code;
    private final String description;

    CompletionStatus(final int code, final String description) {
        this.code = code;
        this.description = description;
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
     * The text {@code ibv_wc_status_str} gives for this status.
     *
     * @return the description.
     */
    public String description() {
        return description;
    }

    /**
     * The status for an ibverbs code; codes this SPI does not name map to {@link #GENERAL_ERROR}.
     *
     * @param code the code.
     * @return the status.
     */
    public static CompletionStatus fromCode(final int code) {
        return code >= 0 && code < BY_CODE.length ? BY_CODE[code] : GENERAL_ERROR;
    }
}
