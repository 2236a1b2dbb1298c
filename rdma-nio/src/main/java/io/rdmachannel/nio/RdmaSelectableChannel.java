package io.rdmachannel.nio;

import java.nio.channels.SelectableChannel;

import io.rdmachannel.channel.spi.WaitSet;
import io.rdmachannel.channel.stream.StreamConnection;

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
     * Whether the current endpoint can be waited on in a {@link WaitSet} ({@link #armEndpointDirect}): a connected
     * stream whose device lets a thread wait on its completion queues. A selector that waits directly leaves such a
     * key unarmed between its waits, and arms every other key through the relay, once, as always.
     *
     * @return false for listeners, connections in progress, platform fallbacks and devices without direct waits.
     */
    default boolean canWaitDirectly() {
        return false;
    }

    /**
     * Arm the current endpoint for a selector that waits on a {@link WaitSet} itself, woken directly by the event it
     * waits for (no relay, no thread in between): the endpoint's words for {@code interestOps} go into the set. The
     * selector reads the readiness again after arming, and calls the returned connection's
     * {@link StreamConnection#disarmDirect()} once after its wait. Changes that are not the endpoint's events (a close,
     * a shutdown) still reach the selector through the relay.
     *
     * @param interestOps the key's interest, as SelectionKey bits.
     * @param set the selector's set.
     * @return the connection armed, or null if this endpoint cannot be waited on in a set (then the selector arms it
     *     with {@link #armEndpoint()}).
     */
    default StreamConnection armEndpointDirect(final int interestOps, final WaitSet set) {
        return null;
    }

    /**
     * A new, empty set of the kind the current endpoint joins (shared-memory words, completion channels), for a
     * selector that has none yet.
     *
     * @return the set, which the selector closes; null if {@link #canWaitDirectly()} is false.
     */
    default WaitSet newWaitSet() {
        return null;
    }

    /**
     * Release the endpoint of a closed channel once the last selector has dropped its key.
     */
    void kill();
}
