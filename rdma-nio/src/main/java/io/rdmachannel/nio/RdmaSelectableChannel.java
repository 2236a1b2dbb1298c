package io.rdmachannel.nio;

/**
 * What {@link RdmaSelector} needs from a channel (the JDK's SelChImpl).
 */
interface RdmaSelectableChannel {
    /**
     * The relay the channel's endpoint reports to.
     */
    ReadinessRelay relay();

    /**
     * The operations of {@code interestOps} that are ready now, as SelectionKey bits.
     */
    int translateReadyOps(int interestOps);

    /**
     * How long a selector with this channel's key spins before it parks ({@code RDMA_BUSY_POLL}); 0 for none.
     */
    default long busyPollNanos() {
        return 0;
    }

    /**
     * Arm the current endpoint so the relay is called when its readiness may change.
     */
    void armEndpoint();

    /**
     * Release the endpoint of a closed channel once the last selector has dropped its key.
     */
    void kill();
}
