package io.rdmachannel.channel.cm;

import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaDevice;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;

/**
 * The local side of one connection, as the connection manager drives it. Callbacks run one at a time, in this
 * order: {@link #prepare}, {@link #bind}, then {@link #established} or {@link #failed}; {@link #failed} may also come
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
     * The queue pair exists (in INIT): post the receives and return the private data to send.
     *
     * @param queuePair the queue pair, owned by the endpoint from now on.
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
     * The attempt failed or was cancelled; release everything allocated.
     *
     * @param cause a {@link java.net.ConnectException} for a rejection, a {@link java.net.SocketTimeoutException}
     *     for a timeout, another IOException otherwise.
     */
    void failed(IOException cause);

    /**
     * What {@link #prepare} returns.
     *
     * @param protectionDomain the domain to create the queue pair in.
     * @param attributes its queues and limits.
     * @param accessFlags the remote access the queue pair allows ({@link io.rdmachannel.channel.spi.AccessFlags}).
     * @param retryCount the transport retry count for READY_TO_SEND, 0 to 7.
     * @param rnrRetryCount the RNR retry count for READY_TO_SEND, 0 to 7 (7 retries forever).
     */
    record QueuePairSetup(ProtectionDomain protectionDomain, QueuePairInitAttributes attributes, int accessFlags,
        int retryCount, int rnrRetryCount) {
    }
}
