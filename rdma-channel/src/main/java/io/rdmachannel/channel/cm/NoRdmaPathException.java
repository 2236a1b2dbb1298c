package io.rdmachannel.channel.cm;

import java.net.ConnectException;
import java.util.Objects;

/**
 * A connect failed because the peer cannot be reached over RDMA at all, as opposed to a peer that refused this
 * connection: no RDMA listener at that address and port, a listener that does not speak the stream protocol, an
 * address another host has where the provider reaches only this one, no usable RDMA device. The NIO face's drop-in
 * falls back to TCP on these failures when its rules allow it. The message is the one a TCP connect would give where
 * there is one ("Connection refused" for no listener).
 */
public class NoRdmaPathException extends ConnectException {
    private static final long serialVersionUID = 1L;

    /**
     * Why RDMA cannot reach the peer.
     */
    public enum Reason {
        /** No RDMA listener at the address and port. */
        NO_LISTENER,
        /** The listener does not speak the stream protocol (e.g. an unknown version). */
        UNSUPPORTED_PROTOCOL,
        /** The address is another host's, and the provider reaches only this host (shm). */
        NOT_LOCAL,
        /** No RDMA device can be used here. */
        NO_DEVICE
    }

    /** The reason. */
    private final Reason reason;

    /**
     * An exception with a message.
     *
     * @param reason why RDMA cannot reach the peer.
     * @param message the message.
     */
    public NoRdmaPathException(final Reason reason, final String message) {
        super(message);
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    /**
     * Why RDMA cannot reach the peer.
     *
     * @return the reason.
     */
    public Reason reason() {
        return reason;
    }
}
