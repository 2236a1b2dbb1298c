package io.rdmachannel.channel.cm;

import java.net.SocketAddress;

/**
 * Makes the local endpoint for an incoming request that passed the filter.
 */
@FunctionalInterface
public interface CmEndpointFactory {
    /**
     * A new endpoint for one incoming connection.
     *
     * @param remoteAddress the requester's address.
     * @return the endpoint.
     */
    CmEndpoint newEndpoint(SocketAddress remoteAddress);
}
