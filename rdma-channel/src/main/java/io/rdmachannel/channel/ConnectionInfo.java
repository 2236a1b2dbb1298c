package io.rdmachannel.channel;

/**
 * One live RDMA stream connection, as {@link RdmaTransportMXBean#getConnections()} lists it.
 *
 * @param provider      the verbs provider, {@code shm} or {@code native}.
 * @param mode          what carries it: {@code RC} (a queue pair and receive queue of its own), {@code SRQ} (its
 *                      receives from its device's shared receive queue) or {@code XRC} (an XRC initiator, target and
 *                      shared receive queue).
 * @param state         {@code ESTABLISHED}, {@code OUTPUT_SHUTDOWN} (we ended our output), {@code PEER_SHUTDOWN} (the
 *                      peer ended its), {@code PEER_CLOSED}, {@code CLOSING} or {@code FAILED}.
 * @param localAddress  the local address, as {@code 192.0.2.1:7471} or {@code [fe80::1]:7471}.
 * @param remoteAddress the peer's address, in the same form.
 * @param error         what failed the connection, or null.
 * @param statistics    what it has done so far.
 */
public record ConnectionInfo(String provider, String mode, String state, String localAddress, String remoteAddress,
    String error, ConnectionStatistics statistics) {
}
