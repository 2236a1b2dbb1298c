package io.rdmachannel.nio;

import java.nio.channels.SelectableChannel;

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
     * The platform channel that carries this channel's I/O in part or whole (a TCP connection, a TCP listener), which
     * a selector waits on in its platform selector with the key's interest; its ready operations are this channel's.
     * It may appear after registration (a connect that falls back to TCP); the channel then reports readiness.
     *
     * @return the platform channel, non-blocking while this channel is registered, or null.
     */
    default SelectableChannel platformChannel() {
        return null;
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
