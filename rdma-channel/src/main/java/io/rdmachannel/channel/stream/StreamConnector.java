package io.rdmachannel.channel.stream;

import java.io.IOException;

/**
 * A connection attempt in progress.
 */
public interface StreamConnector extends AutoCloseable {
    /**
     * Finish the attempt if it is done.
     *
     * @return the connection (owned by the caller from then on) once established, or {@code null} while pending.
     * @throws java.net.ConnectException if the peer refused or no listener was found ("Connection refused").
     * @throws java.net.NoRouteToHostException if the address cannot be reached.
     * @throws java.net.SocketTimeoutException if the attempt timed out.
     * @throws IOException for other failures; the attempt is over after any exception.
     */
    StreamConnection finish() throws IOException;

    /**
     * {@link StreamReadiness#CONNECT} when {@link #finish()} would not return {@code null}, else 0.
     *
     * @return ready bits.
     */
    int readyOps();

    /**
     * Call the observer once when {@link #readyOps()} may have changed.
     */
    void arm();

    /**
     * Abandon the attempt and release everything it holds; a connection established meanwhile is closed.
     * Idempotent; does nothing after {@link #finish()} returned a connection.
     */
    @Override
    void close();
}
