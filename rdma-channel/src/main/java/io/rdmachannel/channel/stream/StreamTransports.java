package io.rdmachannel.channel.stream;

/**
 * Finds the stream transport the NIO face uses by default.
 *
 * <p>TEMPORARY: a placeholder until the stream engine is merged; it is replaced by the real lookup.
 */
public final class StreamTransports {
    private StreamTransports() {
    }

    /**
     * The default transport.
     *
     * @return never, yet.
     * @throws UnsupportedOperationException always, until the stream engine is merged.
     */
    public static StreamTransport defaultTransport() {
        throw new UnsupportedOperationException("the stream engine is not merged yet");
    }
}
