package io.rdmachannel.channel.cm.oob;

import io.rdmachannel.channel.cm.CmConnection;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.internal.PlatformChannels;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairState;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.SocketTimeoutException;
import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.SocketChannel;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@code oob} handshake, active or passive, on a virtual thread of its own over a blocking TCP socket. The
 * queue pair then belongs to the endpoint; the socket stays open as the connection's lifeline (see {@link #watch}),
 * or closes when the handshake fails.
 *
 * <pre>
 *  frame: length u32 (of what follows), magic u32 "RDOB", type u8, then by type (big-endian):
 *   REQ 1: version u8, gid[16], qpn u32, psn u32, path MTU u32 (bytes), private data (len u16 + bytes)
 *   REP 2: gid[16], qpn u32, psn u32, path MTU u32, private data (len u16 + bytes)
 *   REJ 3: reason u8, the rejection with its words (len u16 + bytes, {@link Rejection#encode})
 *   RTU 4: nothing
 * </pre>
 *
 * Every value the peer sends is checked before use: frame length, magic, type, version, queue pair number and
 * packet sequence number (24 bits), MTU (a power of two from 256 to 4096), private data length, and on RoCE that
 * the peer's GID is the address its side channel comes from.
 */
final class OobHandshake implements CmConnection {
    static final int MAGIC = 0x52444f42;
    static final int VERSION = 1;
    static final int REQ = 1;
    static final int REP = 2;
    static final int REJ = 3;
    static final int RTU = 4;
    static final int MAX_FRAME = 2048;
    static final int MAX_PRIVATE_DATA = 1024;
    private static final Logger LOG = LoggerFactory.getLogger(OobHandshake.class);
    private static final int GID_LENGTH = 16;
    private static final int MIN_MTU = 256;
    private static final int MAX_MTU = 4096;

    private final OobConnectionManager manager;
    private final OobListener listener;
    private final long deadline;
    private final InetSocketAddress target;
    private final InetSocketAddress bindAddress;
    private final boolean gidAddressing;
    private CmEndpoint endpoint;
    private volatile SocketChannel socket;
    private volatile String cancelled;
    private volatile Thread thread;
    private volatile Thread watcher;
    /** Counted down when the handshake's thread, then the watcher, has done everything, endpoint calls included. */
    private final CountDownLatch ended = new CountDownLatch(1);
    private final CountDownLatch watchEnded = new CountDownLatch(1);
    private volatile boolean watching;
    /** The connection's owner let go of the side channel (closed its queue pair, or its path). */
    private volatile boolean queuePairClosed;
    /** The endpoint closed its path before the watch began. */
    private volatile boolean lifelineClosed;
    private DataInputStream in;
    private OobDevices.Local local;
    private QueuePair queuePair;
    private CmEndpoint.QueuePairSetup setup;
    private boolean bound;
    private int psn;

    private OobHandshake(final OobConnectionManager manager, final OobListener listener, final CmEndpoint endpoint,
        final SocketChannel socket, final InetSocketAddress target, final InetSocketAddress bindAddress,
        final boolean gidAddressing) {
        this.manager = manager;
        this.gidAddressing = gidAddressing;
        this.listener = listener;
        this.endpoint = endpoint;
        this.socket = socket;
        this.target = target;
        this.bindAddress = bindAddress;
        this.deadline = System.nanoTime() + manager.timeoutNanos();
    }

    static OobHandshake connector(final OobConnectionManager manager, final CmEndpoint endpoint,
        final InetSocketAddress sideTarget, final InetSocketAddress sideBind, final boolean gidAddressing) {
        return new OobHandshake(manager, null, endpoint, null, sideTarget, sideBind, gidAddressing);
    }

    static OobHandshake acceptor(final OobConnectionManager manager, final OobListener listener,
        final SocketChannel socket) {
        return new OobHandshake(manager, listener, null, socket, null, null, listener.gidAddressing());
    }

    void start() {
        // the thread is known before the manager sees the handshake, so that a stop waits for it
        final Runnable run = listener == null ? this::runActive : this::runPassive;
        thread = Thread.ofVirtual().name(listener == null ? "rdmachannel-oob-connect" : "rdmachannel-oob-accept")
            .unstarted(() -> {
                try {
                    run.run();
                } finally {
                    // only now: a failed attempt releases its endpoint after end(), and a stop must wait for that
                    manager.unregister(this);
                    ended.countDown();
                }
            });
        if (!manager.register(this)) {
            if (listener == null) {
                endpoint.failed(new IOException("the oob connection manager is closed"));
            } else {
                closeSocket();
            }
            return;
        }
        thread.start();
    }

    // ----- active side -----

    private void runActive() {
        try {
            final SocketChannel channel = PlatformChannels.provider().openSocketChannel();
            socket = channel;
            if (cancelled != null) {
                throw new IOException("connection attempt cancelled: " + cancelled);
            }
            if (bindAddress != null) {
                channel.bind(bindAddress);
            }
            try {
                channel.socket().connect(target, remainingMillis());
            } catch (final SocketTimeoutException ex) {
                throw new SocketTimeoutException("Connect timed out");
            } catch (final ConnectException ex) {
                throw RejectReason.NO_LISTENER.exception();
            }
            openInput();
            final InetSocketAddress localSide = (InetSocketAddress) channel.getLocalAddress();
            final InetSocketAddress remoteSide = (InetSocketAddress) channel.getRemoteAddress();
            local = manager.deviceFor(localSide.getAddress());
            createQueuePair(endpoint.prepare(local.device()));
            bound = true;
            final ByteBuffer privateData = endpoint.bind(queuePair, null);
            final ByteBuffer request = frame(REQ).put((byte) VERSION);
            putEndpoint(request, privateData);
            send(request);
            final ByteBuffer reply = receive();
            final int type = reply.get();
            if (type == REJ) {
                throw rejection(reply).exception();
            }
            if (type != REP) {
                throw new IOException("unexpected oob handshake message " + type + " at the connector");
            }
            final Peer peer = Peer.read(reply);
            checkPeerGid(peer, localSide, remoteSide);
            if (queuePair == null) {
                establishOwnQueuePairs(peer, localSide, remoteSide);
                return;
            }
            moveToReadyToSend(peer);
            send(frame(RTU));
            watch();
            end();
            endpoint.established(peer.privateData().asReadOnlyBuffer(), manager.rdmaAddress(localSide,
                gidAddressing), manager.rdmaAddress(remoteSide, gidAddressing));
        } catch (final IOException | RuntimeException ex) {
            failActive(ex);
        } finally {
            end();
        }
    }

    /**
     * Active side, for an endpoint's own queue pairs: it connects them and takes the connection before the listener
     * hears the handshake is over, since the listener may send at once. The side channel then stays as the
     * connection's lifeline, its end told to the endpoint ({@link CmEndpoint#peerGone}).
     */
    private void establishOwnQueuePairs(final Peer peer, final InetSocketAddress localSide,
        final InetSocketAddress remoteSide) throws IOException {
        endpoint.peerKnown(new Path(peer));
        endpoint.established(peer.privateData().asReadOnlyBuffer(), manager.rdmaAddress(localSide, gidAddressing),
            manager.rdmaAddress(remoteSide, gidAddressing));
        try {
            send(frame(RTU));
        } catch (final IOException ex) {
            // established already: the listener's side fails without its RTU
            endpoint.peerGone(new IOException("the RTU did not reach the listener: " + ex.getMessage(), ex));
            return;
        }
        watch();
    }

    private void failActive(final Exception ex) {
        end();
        if (!bound && queuePair != null) {
            queuePair.close();
        }
        endpoint.failed(failure(ex));
    }

    // ----- passive side -----

    private void runPassive() {
        final boolean admitted = listener.admit(this);
        try {
            openInput();
            // read the request whole before any answer: a socket closed with unread data resets the connection,
            // and the requester might lose the answer
            final ByteBuffer request = receive();
            if (request.get() != REQ) {
                throw new IOException("unexpected oob handshake message at the listener: expected a request");
            }
            if (!admitted) {
                reject(Rejection.of(RejectReason.BACKLOG_FULL));
                return;
            }
            if (request.get() != VERSION) {
                reject(Rejection.of(RejectReason.UNSUPPORTED_PROTOCOL));
                return;
            }
            final Peer peer = Peer.read(request);
            final InetSocketAddress remoteSide = (InetSocketAddress) socket.getRemoteAddress();
            final InetSocketAddress localSide = (InetSocketAddress) socket.getLocalAddress();
            final SocketAddress source = manager.rdmaAddress(remoteSide, gidAddressing);
            final SocketAddress here = manager.rdmaAddress(localSide, gidAddressing);
            if (listener.isClosed()) {
                reject(Rejection.of(RejectReason.CLOSING));
                return;
            }
            local = manager.deviceFor(localSide.getAddress());
            final String spoofed = gidProblem(peer, localSide, remoteSide);
            if (spoofed != null) {
                reject(new Rejection(RejectReason.POLICY, spoofed));
                return;
            }
            final Rejection refused = check(new ConnectionRequest(source, here, local.device().name(),
                peer.privateData().asReadOnlyBuffer()));
            if (refused != null) {
                reject(refused);
                return;
            }
            accept(peer, source, here);
        } catch (final IOException | RuntimeException ex) {
            failPassive(ex);
        } finally {
            end();
        }
    }

    private Rejection check(final ConnectionRequest request) {
        try {
            return listener.filter().check(request);
        } catch (final RuntimeException ex) {
            LOG.warn("oob listener {}: the connection request filter failed", listener.localAddress(), ex);
            return new Rejection(RejectReason.POLICY, "the listener's filter failed");
        }
    }

    private void accept(final Peer peer, final SocketAddress source, final SocketAddress here)
        throws IOException {
        endpoint = listener.factory().newEndpoint(source);
        try {
            createQueuePair(endpoint.prepare(local.device(), peer.privateData().asReadOnlyBuffer()));
        } catch (final IOException | RuntimeException ex) {
            rejectQuietly(Rejection.of(RejectReason.NO_RESOURCES));
            throw ex;
        }
        bound = true;
        final ByteBuffer privateData;
        try {
            if (queuePair == null) {
                endpoint.peerKnown(new Path(peer));
            }
            privateData = endpoint.bind(queuePair, peer.privateData().asReadOnlyBuffer());
        } catch (final IOException ex) {
            rejectQuietly(new Rejection(RejectReason.UNSUPPORTED_PROTOCOL, ex.getMessage()));
            throw ex;
        }
        if (queuePair != null) {
            moveToReadyToSend(peer);
        }
        send(putEndpoint(frame(REP), privateData));
        final ByteBuffer done = receive();
        if (done.get() != RTU) {
            throw new IOException("unexpected oob handshake message at the listener: expected RTU");
        }
        if (queuePair != null) {
            watch();
            end();
            endpoint.established(peer.privateData().asReadOnlyBuffer(), here, source);
            return;
        }
        // the endpoint's own queue pairs: the side channel becomes the lifeline once the endpoint took the
        // connection, so that its end is never told before the establishment
        watching = true;
        end();
        try {
            endpoint.established(peer.privateData().asReadOnlyBuffer(), here, source);
        } catch (final IOException | RuntimeException ex) {
            watching = false;
            closeSocket();
            throw ex;
        }
        watch();
    }

    private void failPassive(final Exception ex) {
        end();
        if (!bound && queuePair != null) {
            queuePair.close();
        }
        if (endpoint != null) {
            endpoint.failed(failure(ex));
        } else {
            LOG.debug("oob listener {}: a request failed before it was accepted", listener.localAddress(), ex);
        }
    }

    private void reject(final Rejection rejection) throws IOException {
        final ByteBuffer frame = frame(REJ).put((byte) rejection.reason().code());
        final ByteBuffer encoded = ByteBuffer.allocate(Rejection.MAX_ENCODED_BYTES);
        rejection.encode(encoded);
        putPrivateData(frame, encoded.flip());
        send(frame);
        LOG.debug("oob listener {} rejected a request: {}", listener.localAddress(), rejection);
    }

    private void rejectQuietly(final Rejection rejection) {
        try {
            reject(rejection);
        } catch (final IOException ignore) {
            // the requester is gone anyway
        }
    }

    // ----- queue pair -----

    /** Create the queue pair the setup asks for, if any (an endpoint may make its own). */
    private void createQueuePair(final CmEndpoint.QueuePairSetup queuePairSetup) throws IOException {
        this.setup = queuePairSetup;
        psn = OobConnectionManager.newPacketSequenceNumber();
        if (!queuePairSetup.createsQueuePair()) {
            return;
        }
        queuePair = queuePairSetup.protectionDomain().createQueuePair(queuePairSetup.attributes());
        queuePair.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(queuePairSetup.accessFlags())
            .portNumber(local.port()));
    }

    private void moveToReadyToSend(final Peer peer) throws IOException {
        final Path path = new Path(peer);
        path.readyToReceive(queuePair, peer.queuePair());
        path.readyToSend(queuePair);
    }

    /** The peer as this handshake knows it, for the queue pairs an endpoint makes itself (and the CM's own). */
    private final class Path implements CmEndpoint.PeerPath {
        private final Peer peer;

        Path(final Peer peer) {
            this.peer = peer;
        }

        @Override
        public void readyToReceive(final QueuePair target, final int remoteQueuePairNumber) throws IOException {
            target.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(peer.gid())
                .remoteQueuePairNumber(remoteQueuePairNumber).receivePacketSequenceNumber(peer.psn())
                .pathMtu(Math.min(localMtu(), peer.mtu())));
        }

        @Override
        public void readyToSend(final QueuePair target) throws IOException {
            target.modify(QueuePairState.READY_TO_SEND, setup.readyToSend(psn));
        }

        @Override
        public void close() {
            lifelineClosed = true;
            if (watching) {
                closeLifeline();
            }
        }
    }

    /** The owner let go of the connection: the side channel closes, and its end is not news to this side. */
    private void closeLifeline() {
        queuePairClosed = true;
        closeSocket();
    }

    private int localMtu() {
        final int active = local.device().attributes().activeMtu();
        return active < MIN_MTU ? MIN_MTU : Math.min(Integer.highestOneBit(active), MAX_MTU);
    }

    private ByteBuffer putEndpoint(final ByteBuffer frame, final ByteBuffer privateData) {
        frame.put(local.gid()).putInt(setup.createsQueuePair() ? queuePair.number()
            : setup.advertisedQueuePairNumber()).putInt(psn).putInt(localMtu());
        putPrivateData(frame, privateData);
        return frame;
    }

    /**
     * On RoCE, where the GID connected with is the side channel's address, the peer's GID must be the address its
     * side channel comes from: a peer cannot aim this queue pair at another host.
     */
    private String gidProblem(final Peer peer, final InetSocketAddress localSide, final InetSocketAddress peerSide) {
        if (!Arrays.equals(local.gid(), OobDevices.gidOf(localSide.getAddress()))) {
            return null;
        }
        final byte[] expected = OobDevices.gidOf(peerSide.getAddress());
        return Arrays.equals(peer.gid(), expected) ? null : "the requester's GID "
            + HexFormat.of().formatHex(peer.gid()) + " is not the address it connects from ("
            + peerSide.getAddress().getHostAddress() + ")";
    }

    private void checkPeerGid(final Peer peer, final InetSocketAddress localSide, final InetSocketAddress peerSide)
        throws IOException {
        final String problem = gidProblem(peer, localSide, peerSide);
        if (problem != null) {
            throw new IOException("the oob listener answered with a GID that is not its address: " + problem);
        }
    }

    // ----- frames -----

    private void openInput() throws IOException {
        in = new DataInputStream(socket.socket().getInputStream());
    }

    private static ByteBuffer frame(final int type) {
        return ByteBuffer.allocate(MAX_FRAME).putInt(0).putInt(MAGIC).put((byte) type);
    }

    private void send(final ByteBuffer frame) throws IOException {
        frame.putInt(0, frame.position() - Integer.BYTES).flip();
        while (frame.hasRemaining()) {
            socket.write(frame);
        }
    }

    /** The next frame after its magic, positioned at its type; within the handshake's deadline. */
    private ByteBuffer receive() throws IOException {
        socket.socket().setSoTimeout(remainingMillis());
        final int length;
        try {
            length = in.readInt();
            if (length < Integer.BYTES + 1 || length > MAX_FRAME - Integer.BYTES) {
                throw new IOException("malformed oob handshake frame: length=" + length);
            }
            final byte[] body = new byte[length];
            in.readFully(body);
            final ByteBuffer message = ByteBuffer.wrap(body);
            if (message.getInt() != MAGIC) {
                throw new IOException("not an oob connection manager peer (bad magic)");
            }
            return message;
        } catch (final EOFException ex) {
            throw new IOException("the peer closed the oob handshake socket", ex);
        } catch (final SocketTimeoutException ex) {
            throw new SocketTimeoutException("Connect timed out");
        }
    }

    private int remainingMillis() throws SocketTimeoutException {
        final long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new SocketTimeoutException("Connect timed out");
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, TimeUnit.NANOSECONDS.toMillis(left)));
    }

    private static void putPrivateData(final ByteBuffer frame, final ByteBuffer privateData) {
        if (privateData == null) {
            frame.putShort((short) 0);
            return;
        }
        if (privateData.remaining() > MAX_PRIVATE_DATA) {
            throw new IllegalArgumentException("private data too long: length=" + privateData.remaining());
        }
        frame.putShort((short) privateData.remaining()).put(privateData.duplicate());
    }

    static ByteBuffer readPrivateData(final ByteBuffer message) throws IOException {
        final int length = Short.toUnsignedInt(message.getShort());
        if (length > MAX_PRIVATE_DATA || length > message.remaining()) {
            throw new IOException("malformed private data in oob handshake: length=" + length);
        }
        final ByteBuffer data = ByteBuffer.allocate(length);
        message.get(data.array());
        return data;
    }

    /**
     * A REJ as the connector reads it: the reason, and the words when they are well formed and name the same reason.
     */
    private static Rejection rejection(final ByteBuffer message) {
        final RejectReason reason = RejectReason.fromCode(message.get());
        try {
            return Rejection.received(reason, readPrivateData(message));
        } catch (final IOException | BufferUnderflowException ex) {
            return Rejection.of(reason);
        }
    }

    /** What a REQ or REP says about the peer's queue pair, checked. */
    record Peer(byte[] gid, int queuePair, int psn, int mtu, ByteBuffer privateData) {
        static Peer read(final ByteBuffer message) throws IOException {
            try {
                final byte[] gid = new byte[GID_LENGTH];
                message.get(gid);
                final int queuePair = message.getInt();
                final int psn = message.getInt();
                final int mtu = message.getInt();
                if (Arrays.equals(gid, new byte[GID_LENGTH])) {
                    throw new IOException("malformed oob handshake: the peer's GID is zero");
                }
                if ((queuePair & ~0xFFFFFF) != 0 || (psn & ~0xFFFFFF) != 0) {
                    throw new IOException("malformed oob handshake: qpn=" + queuePair + ", psn=" + psn
                        + " do not fit 24 bits");
                }
                if (mtu < MIN_MTU || mtu > MAX_MTU || Integer.bitCount(mtu) != 1) {
                    throw new IOException("malformed oob handshake: path MTU " + mtu);
                }
                return new Peer(gid, queuePair, psn, mtu, readPrivateData(message));
            } catch (final BufferUnderflowException ex) {
                throw new IOException("malformed oob handshake: the message is truncated", ex);
            }
        }
    }

    // ----- after establishment -----

    /**
     * Keep the side channel as the connection's lifeline, as rdma_cm keeps its id: when the owner closes the queue
     * pair the socket closes, and when the peer's socket closes (its queue pair closed, its process died) or fails,
     * this queue pair moves to ERROR, so that the engine sees its work flushed as it does after a DREQ.
     */
    private void watch() {
        watching = true;
        watcher = Thread.ofVirtual().name("rdmachannel-oob-watch").unstarted(() -> {
            try {
                watchPeer();
            } finally {
                watchEnded.countDown();
            }
        });
        manager.watch(this);
        if (queuePair != null) {
            queuePair.whenClosed(this::closeLifeline);
        } else if (lifelineClosed) {
            // the endpoint closed its path while it was being established
            closeLifeline();
        }
        watcher.start();
    }

    private void watchPeer() {
        final ByteBuffer discard = ByteBuffer.allocate(16);
        String gone;
        try {
            // nothing is sent after RTU: whatever comes is read and dropped until the end
            int read;
            do {
                read = socket.read(discard.clear());
            } while (read >= 0);
            gone = "the peer closed the oob side channel";
        } catch (final ClosedChannelException ex) {
            gone = null;
        } catch (final IOException ex) {
            gone = "the oob side channel failed: " + ex.getMessage();
        }
        if (gone != null && !queuePairClosed && queuePair == null) {
            // the endpoint's own queue pairs: it decides what the end means
            endpoint.peerGone(new IOException(gone));
        } else if (gone != null && !queuePairClosed) {
            LOG.debug("oob connection {} {}: {}; its queue pair moves to ERROR", listener == null ? "to" : "on",
                listener == null ? target : listener.localAddress(), gone);
            try {
                queuePair.modify(QueuePairState.ERROR, new QueuePairAttributes());
            } catch (final IOException | RuntimeException ex) {
                // closed meanwhile: nothing left to flush
            }
        }
        closeSocket();
        manager.unwatch(this);
    }

    /** Stop watching (the manager closes): the socket closes, the watcher ends. */
    void stopWatching() {
        closeSocket();
    }

    // ----- end -----

    private IOException failure(final Exception ex) {
        if (cancelled != null) {
            return new IOException("connection attempt cancelled: " + cancelled, ex);
        }
        if (ex instanceof IOException io) {
            return io;
        }
        return new IOException("oob connection handshake failed: " + ex, ex);
    }

    /**
     * The handshake is over: the socket closes unless it watches the established connection, the listener forgets
     * the handshake (the manager does when its thread ends). Idempotent.
     */
    private void end() {
        if (!watching) {
            closeSocket();
        }
        if (listener != null) {
            listener.release(this);
        }
    }

    private void closeSocket() {
        final SocketChannel channel = socket;
        if (channel != null) {
            try {
                channel.close();
            } catch (final IOException ignore) {
                // nothing more to release
            }
        }
    }

    /** Fail the handshake if it is still running: its socket closes and its thread ends it. */
    void cancel(final String why) {
        cancelled = why;
        closeSocket();
    }

    /** Wait, at most until the deadline, for the handshake's thread to end. */
    void awaitEnd(final long deadlineNanos) {
        // the handshake's thread first: it is the one that may still start the watcher
        if (awaitEnd(thread, ended, deadlineNanos)) {
            awaitEnd(watcher, watchEnded, deadlineNanos);
        }
    }

    private static boolean awaitEnd(final Thread running, final CountDownLatch end, final long deadlineNanos) {
        if (running == null || running == Thread.currentThread()) {
            return true;
        }
        try {
            // a latch rather than a join: a thread registered but not started yet is waited for too
            end.await(Math.max(1, deadlineNanos - System.nanoTime()), TimeUnit.NANOSECONDS);
            return true;
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public void close() {
        cancel("connection attempt cancelled");
    }

    @Override
    public String toString() {
        return "OobHandshake{" + (listener == null ? "active, target=" + target : "passive, " + listener) + '}';
    }
}
