package io.rdmachannel.channel.cm;

import java.net.SocketAddress;
import java.nio.ByteBuffer;

/**
 * A connection request as a listener's {@link ConnectionRequestFilter} sees it, before anything is allocated for it.
 *
 * @param remoteAddress the requester's address.
 * @param localAddress  the address it connected to.
 * @param deviceName    the local device the request arrived on (a verbs device name such as {@code rxe0}, or the
 *                      shm device's name).
 * @param privateData   the request's private data, read-only (for a stream connection: the connection data of the
 *                      rsockets protocol).
 */
public record ConnectionRequest(SocketAddress remoteAddress, SocketAddress localAddress, String deviceName,
    ByteBuffer privateData) {
}
