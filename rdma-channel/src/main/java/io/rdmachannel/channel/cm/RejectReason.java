package io.rdmachannel.channel.cm;

import java.net.ConnectException;

/**
 * Why a connection request was rejected; carried to the requester, who sees a
 * {@link java.net.ConnectException} naming it.
 */
public enum RejectReason {
    /** No listener at the address. */
    NO_LISTENER(1, "Connection refused"),
    /** The listener's backlog is full. */
    BACKLOG_FULL(2, "Connection refused: backlog full"),
    /** The host policy refused the peer. */
    POLICY(3, "Connection refused by policy"),
    /** The request's private data is not understood (e.g. an unknown protocol version). */
    UNSUPPORTED_PROTOCOL(4, "Connection refused: unsupported protocol"),
    /** The listener could not allocate resources for the connection. */
    NO_RESOURCES(5, "Connection refused: no resources"),
    /** The listener is closing. */
    CLOSING(6, "Connection refused: listener closing");

    private final int code;
    private final String message;

    RejectReason(final int code, final String message) {
        this.code = code;
        this.message = message;
    }

    /**
     * The code carried on the wire.
     *
     * @return the code.
     */
    public int code() {
        return code;
    }

    /**
     * The message of the requester's {@link java.net.ConnectException}; starts with "Connection refused".
     *
     * @return the message.
     */
    public String message() {
        return message;
    }

    /**
     * The exception the requester sees: a {@link NoRdmaPathException} when the rejection means that RDMA cannot
     * reach the peer (no listener, a protocol it does not speak), else a plain {@link ConnectException}.
     *
     * @return a new exception with {@link #message()}.
     */
    public ConnectException exception() {
        return exception("");
    }

    /**
     * Like {@link #exception()}, with the listener's words after the message (for example the host policy's reason).
     *
     * @param detail the words; nothing is added when empty.
     * @return a new exception.
     */
    public ConnectException exception(final String detail) {
        final String text = detail.isEmpty() ? message : message + ": " + detail;
        return switch (this) {
            case NO_LISTENER -> new NoRdmaPathException(NoRdmaPathException.Reason.NO_LISTENER, text);
            case UNSUPPORTED_PROTOCOL -> new NoRdmaPathException(NoRdmaPathException.Reason.UNSUPPORTED_PROTOCOL,
                text);
            default -> new ConnectException(text);
        };
    }

    /**
     * The reason for a code; unknown codes map to {@link #NO_LISTENER}.
     *
     * @param code the code.
     * @return the reason.
     */
    public static RejectReason fromCode(final int code) {
        for (final RejectReason reason : values()) {
            if (reason.code == code) {
                return reason;
            }
        }
        return NO_LISTENER;
    }
}
