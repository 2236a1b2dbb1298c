package io.rdmachannel.channel.cm;

import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaDevice;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;

/**
 * The local side of one connection, as the connection manager drives it. Callbacks run one at a time, in this
 * order: {@link #prepare}, {@link #bind}, then {@link #established} or {@link #failed} (with
 * {@link #peerKnown} before {@link #bind} on a passive side and before {@link #established} on an active one, for an
 * endpoint that makes its own queue pairs, where {@link ConnectionManager#supportsOwnQueuePairs} says the CM
 * allows it); {@link #failed} may also come
 * at any earlier point, after which the endpoint releases what it allocated. They run on the CM's event thread, except
 * that an active side's {@link #prepare} and {@link #bind} may run on the thread that called
 * {@link ConnectionManager#connect} before it returns (the shm CM sends the request from there); the CM hands the
 * attempt to its event thread after them, and if that thread has stopped meanwhile (the CM stopping), {@link #failed}
 * runs on the connecting thread too, before {@code connect} returns.
 */
public interface CmEndpoint {
    /**
     * The device is known: allocate completion queues and memory, and say how to create the queue pair.
     *
     * @param device the device the connection runs on.
     * @return the protection domain and attributes for the queue pair.
     * @throws IOException if resources cannot be allocated; the CM then fails (or rejects) the connection.
     */
    QueuePairSetup prepare(RdmaDevice device) throws IOException;

    /**
     * The passive side's {@link #prepare}: the request's private data is known, so the endpoint can choose its form
     * from what the peer asks for (the XRC mode answers a plain request with a queue pair from the CM).
     *
     * @param device the device the connection runs on.
     * @param requestPrivateData the request's private data, read-only; the same comes again in {@link #bind}.
     * @return the protection domain and attributes for the queue pair, or {@link QueuePairSetup#ownQueuePairs}.
     * @throws IOException if resources cannot be allocated; the CM then rejects the request.
     */
    default QueuePairSetup prepare(final RdmaDevice device, final ByteBuffer requestPrivateData) throws IOException {
        return prepare(device);
    }

    /**
     * The queue pair exists (in INIT): post the receives and return the private data to send.
     *
     * @param queuePair the queue pair, owned by the endpoint from now on; {@code null} for
     *     {@link QueuePairSetup#ownQueuePairs}.
     * @param peerPrivateData on the passive side, the request's private data; {@code null} on the active side.
     * @return the private data to send with the request or reply.
     * @throws IOException to refuse (the passive side then rejects; the active side fails).
     */
    ByteBuffer bind(QueuePair queuePair, ByteBuffer peerPrivateData) throws IOException;

    /**
     * The queue pair is READY_TO_SEND and the peer knows it.
     *
     * @param peerPrivateData on the active side the reply's private data; on the passive side the request's again.
     * @param localAddress the connection's local address.
     * @param remoteAddress the connection's remote address.
     * @throws IOException if the peer's private data is unacceptable; the CM then disconnects.
     */
    void established(ByteBuffer peerPrivateData, SocketAddress localAddress, SocketAddress remoteAddress)
        throws IOException;

    /**
     * Passive side, with the CM's queue pair, where the CM offers it (the shm CM): take the connection as established
     * as soon as the reply has gone out, before the requester's last handshake message (its RTU), as rsockets'
     * {@code raccept} returns at the reply. The connection may then be handed to the application at once, but the
     * endpoint must send nothing until it heard {@link #confirmed} or received the requester's first message: until
     * then the requester's queue pair may not be ready to receive. If the RTU never comes (the requester refused the
     * reply or died, the attempt timed out, the CM stopped), the endpoint hears {@link #peerGone} instead, once.
     *
     * @param peerPrivateData the request's private data again.
     * @param localAddress the connection's local address.
     * @param remoteAddress the connection's remote address.
     * @return true if the endpoint took the connection now; false to be told {@link #established} at the RTU.
     * @throws IOException if the peer's private data is unacceptable; the CM then fails the attempt.
     */
    default boolean establishedAtReply(final ByteBuffer peerPrivateData, final SocketAddress localAddress,
        final SocketAddress remoteAddress) throws IOException {
        return false;
    }

    /**
     * After {@link #establishedAtReply} returned true: the requester's RTU arrived, its queue pair is ready to
     * receive, and the endpoint may send. On the CM's thread, at most once.
     */
    default void confirmed() {
    }

    /**
     * The attempt failed or was cancelled; release everything allocated.
     *
     * @param cause a {@link java.net.ConnectException} for a rejection, a {@link java.net.SocketTimeoutException}
     *     for a timeout, another IOException otherwise.
     */
    void failed(IOException cause);

    /**
     * For an endpoint whose {@link #prepare} returned {@link QueuePairSetup#ownQueuePairs}: the peer is known, and
     * {@code path} moves the endpoint's own queue pairs toward it. The passive side hears this before {@link #bind},
     * the active side after the reply and before {@link #established}, which on that side then runs before the peer
     * hears that the handshake is over (the peer's first message may follow that at once, so what it will use must
     * be ready when {@code established} returns). Endpoints whose queue pair the CM creates never hear it.
     *
     * @param path the way to the peer: its moves until {@link #established} or {@link #failed} returns, then the
     *     connection's lifeline until the endpoint closes it ({@link PeerPath#close}).
     * @throws IOException if the endpoint cannot connect; the CM then fails the attempt (a passive side rejects).
     */
    default void peerKnown(final PeerPath path) throws IOException {
        throw new UnsupportedOperationException("this endpoint makes no queue pairs of its own");
    }

    /**
     * After {@link #establishedAtReply} took the connection, the requester's RTU did not come (see there). For an
     * endpoint with its own queue pairs, after {@link #established}: the connection's lifeline ended from the
     * peer's side (it closed the connection, or its process died). The CM keeps one per such connection because
     * nothing else tells: its queue pairs are not the CM's to fail, and an XRC target learns nothing when a remote
     * initiator's process dies. What the peer sent before it left may still be in the endpoint's queues. Called at
     * most once, on the CM's thread; not when the endpoint closed the lifeline itself or the CM stopped.
     *
     * @param cause what ended it, for the endpoint's own error.
     */
    default void peerGone(final IOException cause) {
    }

    /**
     * What the CM knows of the peer of one attempt, for an endpoint that makes its own queue pairs (the XRC mode:
     * an initiator shared with other connections, a target queue pair offered to the peer). Each CM moves them as
     * it moves its own: the peer's address, packet sequence numbers and the retry counts of the
     * {@link QueuePairSetup}.
     */
    interface PeerPath {
        /**
         * Move {@code queuePair}, the endpoint's and in INIT on the attempt's device, to READY_TO_RECEIVE toward the
         * peer's queue pair {@code remoteQueuePairNumber}; for an XRC target that is the peer's initiator.
         *
         * @param queuePair the queue pair to move.
         * @param remoteQueuePairNumber the peer's queue pair, 0 to 2^24 - 1.
         * @throws IOException if the move fails.
         */
        void readyToReceive(QueuePair queuePair, int remoteQueuePairNumber) throws IOException;

        /**
         * Move {@code queuePair}, moved by {@link #readyToReceive}, on to READY_TO_SEND.
         *
         * @param queuePair the queue pair to move.
         * @throws IOException if the move fails.
         */
        void readyToSend(QueuePair queuePair) throws IOException;

        /**
         * End the connection's lifeline (its socket, on shm and oob): the endpoint released the connection. The peer
         * hears {@link CmEndpoint#peerGone}, this endpoint no more of it. Before {@link CmEndpoint#established} the
         * attempt's socket is the CM's, which closes it when the attempt ends: a close then only says that no lifeline
         * is wanted. Idempotent.
         */
        void close();
    }

    /**
     * What {@link #prepare} returns: either the queue pair the CM creates, moves and hands to {@link #bind}, or
     * ({@link #ownQueuePairs}) none, for an endpoint that makes and moves its own through {@link #peerKnown}.
     *
     * @param protectionDomain the domain to create the queue pair in; {@code null} for {@link #ownQueuePairs}.
     * @param attributes its queues and limits; {@code null} for {@link #ownQueuePairs}.
     * @param accessFlags the remote access the queue pair allows ({@link io.rdmachannel.channel.spi.AccessFlags}).
     * @param retryCount the transport retry count for READY_TO_SEND, 0 to 7.
     * @param rnrRetryCount the RNR retry count for READY_TO_SEND, 0 to 7 (7 retries forever).
     * @param advertisedQueuePairNumber for {@link #ownQueuePairs}, the queue pair number the request or reply
     *     carries where it carries the CM's queue pair's; {@link #CM_QUEUE_PAIR} when the CM creates one.
     */
    record QueuePairSetup(ProtectionDomain protectionDomain, QueuePairInitAttributes attributes, int accessFlags,
        int retryCount, int rnrRetryCount, int advertisedQueuePairNumber) {
        /** The {@link #advertisedQueuePairNumber} of a setup whose queue pair the CM creates. */
        public static final int CM_QUEUE_PAIR = -1;

        /**
         * Checks that a setup is one form or the other.
         */
        public QueuePairSetup {
            if (attributes != null && (protectionDomain == null || advertisedQueuePairNumber != CM_QUEUE_PAIR)) {
                throw new IllegalArgumentException("a queue pair the CM creates needs a protection domain and "
                    + "advertises its own number");
            }
            if (attributes == null && (protectionDomain != null || advertisedQueuePairNumber < 0
                || advertisedQueuePairNumber > 0xFFFFFF)) {
                throw new IllegalArgumentException("an endpoint's own queue pairs need no protection domain here "
                    + "and a queue pair number of 24 bits to advertise, not " + advertisedQueuePairNumber);
            }
            if (retryCount < 0 || retryCount > 7 || rnrRetryCount < 0 || rnrRetryCount > 7) {
                throw new IllegalArgumentException("retry counts are 0 to 7: retryCount=" + retryCount
                    + ", rnrRetryCount=" + rnrRetryCount);
            }
        }

        /**
         * A queue pair the CM creates in {@code protectionDomain}, moves and hands to {@link #bind}.
         *
         * @param protectionDomain the domain to create the queue pair in.
         * @param attributes its queues and limits.
         * @param accessFlags the remote access the queue pair allows.
         * @param retryCount the transport retry count for READY_TO_SEND, 0 to 7.
         * @param rnrRetryCount the RNR retry count for READY_TO_SEND, 0 to 7.
         */
        public QueuePairSetup(final ProtectionDomain protectionDomain, final QueuePairInitAttributes attributes,
            final int accessFlags, final int retryCount, final int rnrRetryCount) {
            this(protectionDomain, requireAttributes(attributes), accessFlags, retryCount, rnrRetryCount,
                CM_QUEUE_PAIR);
        }

        /**
         * No queue pair from the CM: the endpoint makes its own and moves them through {@link #peerKnown}, and
         * {@link #bind} gets {@code null}.
         *
         * @param advertisedQueuePairNumber the number the request or reply carries as the connection's queue pair.
         * @param retryCount the transport retry count {@link PeerPath#readyToSend} sets, 0 to 7.
         * @param rnrRetryCount the RNR retry count it sets, 0 to 7.
         * @return the setup.
         */
        public static QueuePairSetup ownQueuePairs(final int advertisedQueuePairNumber, final int retryCount,
            final int rnrRetryCount) {
            return new QueuePairSetup(null, null, 0, retryCount, rnrRetryCount, advertisedQueuePairNumber);
        }

        /**
         * The attributes of a move to READY_TO_SEND with this setup's retry counts: how each CM moves a queue pair
         * there, its own or an endpoint's.
         *
         * @param sendPacketSequenceNumber this side's starting PSN.
         * @return new attributes.
         */
        public QueuePairAttributes readyToSend(final int sendPacketSequenceNumber) {
            return new QueuePairAttributes().sendPacketSequenceNumber(sendPacketSequenceNumber)
                .retryCount(retryCount).rnrRetry(rnrRetryCount);
        }

        /**
         * Whether the CM creates the queue pair.
         *
         * @return false for {@link #ownQueuePairs}.
         */
        public boolean createsQueuePair() {
            return attributes != null;
        }

        private static QueuePairInitAttributes requireAttributes(final QueuePairInitAttributes attributes) {
            if (attributes == null) {
                throw new IllegalArgumentException("a queue pair the CM creates needs its attributes");
            }
            return attributes;
        }
    }
}
