package io.rdmachannel.nio;

/**
 * Which path a connection may take: the value of {@link RdmaSocketOptions#RDMA_PATH_POLICY}, and the actions of the
 * drop-in's destination rules ({@code rdma}, {@code rdma-only}, {@code tcp}; see {@link RdmaSelectorProvider}).
 */
public enum RdmaPathPolicy {
    /**
     * RDMA only: a connect that RDMA cannot make fails; a server channel listens for RDMA peers only. The default of
     * the channels opened explicitly ({@link RdmaSocketChannel#open()}, {@link RdmaServerSocketChannel#open()}).
     */
    RDMA_ONLY,

    /**
     * RDMA first, TCP when the peer cannot speak RDMA: a connect tries RDMA (bounded by
     * {@code rdmachannel.fallback.timeoutMillis}) and continues over TCP, in the same channel, when RDMA finds no
     * device, no route, no listener or a listener of another protocol; a server channel listens for RDMA and TCP
     * peers on the same address and port. The default of the drop-in when no rules are given.
     */
    RDMA_PREFERRED,

    /**
     * TCP only, through the platform's channels: the channel behaves as the JDK's own.
     */
    TCP_ONLY
}
