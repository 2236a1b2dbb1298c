package io.rdmachannel.channel.stream;

import java.io.IOException;
import java.net.SocketAddress;

/**
 * A listening endpoint. Connections are established by the engine as they arrive (up to the backlog) and wait here.
 */
public interface StreamListener extends AutoCloseable {
    /**
     * Take the next established connection.
     *
     * @param observer told when the connection's readiness may have changed after its {@code arm()}; the NIO face
     *     creates one per accepted channel (the listener's own observer is for the listener only).
     * @return the connection, owned by the caller, or {@code null} if none is waiting.
     * @throws IOException if the listener failed.
     */
    StreamConnection accept(ReadinessObserver observer) throws IOException;

    /**
     * {@link StreamReadiness#ACCEPT} when a connection is waiting or the listener failed, else 0.
     *
     * @return ready bits.
     */
    int readyOps();

    /**
     * Call the observer once when {@link #readyOps()} may have changed.
     */
    void arm();

    /**
     * The bound address, with the port chosen when 0 was asked for.
     *
     * @return the address.
     */
    SocketAddress localAddress();

    /**
     * Stop listening; waiting connections are closed. Idempotent.
     */
    @Override
    void close();
}
