package io.rdmachannel.channel.stream;

/**
 * Ready-operation bits of endpoints; the values equal {@link java.nio.channels.SelectionKey}'s so the NIO face can
 * pass them through.
 */
public final class StreamReadiness {
    /** Bytes, end of stream, or an error can be read. */
    public static final int READ = 1;
    /** Bytes can be written, or a write would fail at once. */
    public static final int WRITE = 1 << 2;
    /** A connection attempt finished, successfully or not. */
    public static final int CONNECT = 1 << 3;
    /** A connection waits to be accepted, or the listener failed. */
    public static final int ACCEPT = 1 << 4;

    private StreamReadiness() {
    }
}
