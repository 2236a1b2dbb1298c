package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.CmConnection;

import java.io.IOException;

/**
 * An active connection attempt: finished when the connection manager reports the connection established or failed.
 */
final class RsocketConnector implements StreamConnector {
    private final RsocketConnection connection;
    private final CmConnection attempt;
    private boolean handedOver;
    private boolean closed;

    RsocketConnector(final RsocketConnection connection, final CmConnection attempt) {
        this.connection = connection;
        this.attempt = attempt;
    }

    @Override
    public synchronized StreamConnection finish() throws IOException {
        if (closed) {
            throw new IOException("the connection attempt was closed");
        }
        if (connection.isFailed()) {
            closed = true;
            throw connection.failure();
        }
        if (!connection.isEstablished()) {
            return null;
        }
        handedOver = true;
        return connection;
    }

    @Override
    public int readyOps() {
        return connection.isEstablished() || connection.isFailed() ? StreamReadiness.CONNECT : 0;
    }

    @Override
    public void arm() {
        connection.arm();
    }

    @Override
    public synchronized void close() {
        if (closed || handedOver) {
            return;
        }
        closed = true;
        // the connection manager may be establishing it right now: the connection closes itself once it is
        connection.abandon();
        attempt.close();
    }
}
