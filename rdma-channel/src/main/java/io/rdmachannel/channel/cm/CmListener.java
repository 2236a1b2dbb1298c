package io.rdmachannel.channel.cm;

import java.net.SocketAddress;

/**
 * A listening connection manager endpoint.
 */
public interface CmListener extends AutoCloseable {
    /**
     * The bound address, with the chosen port.
     *
     * @return the address.
     */
    SocketAddress localAddress();

    /**
     * Stop listening; requests in progress fail. Idempotent.
     */
    @Override
    void close();
}
