package io.rdmachannel.channel.stream;

import java.io.IOException;
import java.io.Serial;

/**
 * A peer broke the rsockets wire protocol: it sent connection data or a message that a conforming peer never sends,
 * or a value that would make us read or write outside what it advertised. The connection cannot continue.
 *
 * <p>The message names the offending value as {@code name=value}.
 */
public class ProtocolException extends IOException {
    @Serial
    private static final long serialVersionUID = 1L;

    /**
     * Create an exception with a message naming the offending value.
     *
     * @param message what was wrong, with the value as {@code name=value}.
     */
    public ProtocolException(final String message) {
        super(message);
    }
}
