package io.rdmachannel.channel.spi;

/**
 * A shared receive queue of an XRC domain ({@link XrcDomain#createSharedReceiveQueue}): an XRC initiator addresses
 * it by {@link #number()} ({@code ibv_get_srq_num}) in each send, and the message is received here whichever target
 * queue pair of the domain it arrived on.
 */
public interface XrcSharedReceiveQueue extends SharedReceiveQueue {
    /**
     * The number a remote XRC initiator puts into its sends to reach this queue.
     *
     * @return the SRQ number, 24 bits, unique in the domain.
     */
    int number();

    /**
     * The domain the queue belongs to.
     *
     * @return the handle it was created through.
     */
    XrcDomain xrcDomain();

    /**
     * The queue its receive completions go to.
     *
     * @return the completion queue.
     */
    CompletionQueue completionQueue();

    /**
     * Whether, after {@link #close()}, no remote initiator's request can reach this host's memory through the queue
     * any more, none being under way either: then memory that peers wrote through it (a stream's receive ring) may
     * be given to another connection. False while open, and where the provider cannot tell.
     *
     * @return true once closed and quiescent.
     */
    default boolean peerAccessEnded() {
        return false;
    }

    /**
     * Close without waiting for a remote initiator's request under way: for a queue whose peer is known to have let
     * go or died (one that died in a request never ends it). {@link #peerAccessEnded()} then says whether one was.
     * A provider whose {@link #close()} does not wait just closes. Idempotent, as {@link #close()}.
     */
    default void abandon() {
        close();
    }
}
