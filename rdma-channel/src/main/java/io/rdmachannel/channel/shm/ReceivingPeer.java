package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;

/**
 * Where a queue pair's requests land, as the executing side sees it: the connected RC peer queue pair
 * ({@link RemotePeer}), or for an XRC initiator the XRC shared receive queue a request names, reached through the
 * target queue pair ({@link XrcReceivePeer}). Every value read from the peer is validated before use, and its
 * memory is touched only between {@link #enter} and {@link #exit}.
 */
interface ReceivingPeer {
    /**
     * Start an access to the peer's shared memory.
     *
     * @return false if the peer is gone: touch nothing.
     */
    boolean enter();

    void exit();

    /**
     * Whether the peer takes requests now (READY_TO_RECEIVE or READY_TO_SEND).
     */
    boolean canReceive();

    /**
     * Whether the peer is gone or in ERROR.
     */
    boolean isGone();

    /**
     * The mappings of the peer device's files and memory regions.
     */
    PeerNode node();

    /**
     * The protection domain handle remote keys and receive buffers must belong to.
     */
    int protectionDomain();

    /**
     * The remote access the peer allows.
     */
    int accessFlags();

    /**
     * The receive queue (own or shared) a request that needs a receive consumes.
     */
    ReceiveQueue receiveQueue();

    /**
     * The device's id of the shared receive queue receives come from, or -1 with a queue pair's own.
     */
    int sharedReceiveQueueId();

    int completionQueueId();

    /**
     * The number of the queue pair the peer's completions name: the peer queue pair, or the XRC target.
     */
    int queuePairNumber();

    /**
     * The peer's RNR NAK timer code.
     */
    int minRnrTimer();

    /**
     * Publish a receive completion; inside an access.
     *
     * @return false if the peer's ring was full, which a well-behaved peer never allows.
     */
    boolean publish(long workRequestId, int slot, CompletionStatus status, CompletionOpcode opcode, int byteLength,
        int flags, int immediate);

    /**
     * Disarm the peer's completion queue for an event and wake its waiting thread; inside an access.
     *
     * @return true if the peer's readiness source must be sent a wake-up.
     */
    boolean disarmCompletionQueue(boolean solicited);

    /**
     * Move the peer to ERROR unless it is gone.
     */
    void setError();
}
