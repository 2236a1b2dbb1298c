package io.rdmachannel.channel.shm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;
import java.util.HexFormat;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one Unix-domain socket of a connection between two queue pairs on different devices. It carries the
 * introduction, wake-ups (a completion for an armed completion queue, a receive posted for a waiting sender, an
 * error), and its end tells each side that the other is gone.
 *
 * <pre>
 *  frame (32 bytes, host byte order): type int, arg1 int, arg2 int, reserved int, gid 16 bytes
 *   HELLO       arg1 = sender's QP number, arg2 = receiver's QP number, reserved = the sender QP's generation,
 *               gid = sender's device GID
 *   WAKE_CQ     arg1 = completion queue id at the receiver
 *   RECV_POSTED arg1 = receiver's QP number (whose send queue may retry)
 *   QP_ERROR    arg1 = receiver's QP number (to move to ERROR)
 *   SRQ_LIMIT   arg1 = id of the receiver's shared receive queue whose armed limit a claim reached
 *   XRC_SRQ_LIMIT arg1 = id of an XRC shared receive queue of the receiver whose armed limit a claim reached
 *   RECYCLE     arg1 = sender's QP number, arg2 = receiver's QP number, gid[0..8) = the binding's index: the
 *               sender's queue pair let go of the link (closed or reset); the socket stays for the next binding
 * </pre>
 *
 * <p>A link outlives the connection it was introduced for: when a queue pair closes or is reset it lets go of its link
 * with RECYCLE instead of closing the socket, which the peer takes as the end of that connection (as it would take
 * the socket's end). The side that connected the socket keeps it in its agent's idle pool and introduces it with a new
 * HELLO to the next queue pair that connects to the same device; the other side waits on it for that HELLO. A
 * connection between two processes thus costs no socket of its own once one was made. Both sides count the HELLOs on
 * the socket (the stream keeps their order), and a RECYCLE names the binding it ends by that count, so that one that
 * crosses a new HELLO ends nothing.
 *
 * <p>The link of a device's XRC initiators to the device of XRC shared receive queues they deliver into is introduced
 * to queue pair {@link #XRC_LINK} (no queue pair has number 0) and bound to none at either end: one socket per pair of
 * devices, shared by all the initiators of the connecting device ({@link ShmAgent#acquireXrcLink}). The receiving end
 * takes WAKE_CQ and XRC_SRQ_LIMIT frames; its end tells every initiator using it that the device is gone.
 */
final class ShmLink {
    static final int FRAME_LENGTH = 32;
    static final int HELLO = 1;
    static final int WAKE_CQ = 2;
    static final int RECV_POSTED = 3;
    static final int QP_ERROR = 4;
    static final int SRQ_LIMIT = 5;
    static final int XRC_SRQ_LIMIT = 6;
    static final int RECYCLE = 7;
    /** The queue pair number an XRC initiator's link is introduced to. */
    static final int XRC_LINK = 0;

    private static final Logger LOG = LoggerFactory.getLogger(ShmLink.class);

    private final ShmAgent agent;
    private final SocketChannel channel;
    private final ByteBuffer readBuffer = ByteBuffer.allocate(FRAME_LENGTH * 64).order(ByteOrder.nativeOrder());
    private final ByteBuffer frame = ByteBuffer.allocate(FRAME_LENGTH).order(ByteOrder.nativeOrder());
    private ByteBuffer pending = ByteBuffer.allocate(FRAME_LENGTH * 16).order(ByteOrder.nativeOrder());
    private volatile ShmQueuePair queuePair;
    private volatile boolean closed;
    /** The peer's agent socket, for a link this side connected (it may go back to the idle pool), else null. */
    private final String peerSocket;
    /** The current binding: its index (HELLOs sent or received on the socket) and the peer's queue pair number. */
    private long bindings;
    private int remoteNumber = -1;

    /** An XRC initiators' link this side connected: bound to no queue pair, shared through the agent. */
    private final boolean xrc;

    /** The peer's end of a link the peer connected. */
    ShmLink(final ShmAgent agent, final SocketChannel channel) {
        this(agent, channel, null, false);
    }

    /** A link this side connected to {@code peerSocket}. */
    ShmLink(final ShmAgent agent, final SocketChannel channel, final String peerSocket) {
        this(agent, channel, peerSocket, false);
    }

    private ShmLink(final ShmAgent agent, final SocketChannel channel, final String peerSocket, final boolean xrc) {
        this.agent = agent;
        this.channel = channel;
        this.peerSocket = peerSocket;
        this.xrc = xrc;
    }

    /** The link of this device's XRC initiators to a peer device ({@link ShmAgent#acquireXrcLink}). */
    static ShmLink xrc(final ShmAgent agent, final SocketChannel channel) {
        return new ShmLink(agent, channel, null, true);
    }

    boolean isClosed() {
        return closed;
    }

    String peerSocket() {
        return peerSocket;
    }

    SocketChannel channel() {
        return channel;
    }

    /**
     * Bind the introduction just read to {@code local}; called by the queue pair under its link lock, which its
     * release of the link also holds, so a release that follows undoes exactly this binding.
     */
    synchronized void bind(final ShmQueuePair local) {
        this.queuePair = local;
    }

    ShmQueuePair queuePair() {
        return queuePair;
    }

    /**
     * Introduce the link to the peer's queue pair {@code toQueuePair} for {@code local}: binding, counting and the
     * HELLO in one step, so that a RECYCLE of the previous binding read meanwhile finds the new count and ends nothing
     * (bound first and counted after, it would end the new binding and pool the link while in use).
     */
    void introduce(final ShmQueuePair local, final byte[] gid, final int toQueuePair, final int generation)
        throws IOException {
        synchronized (this) {
            // an XRC link serves every initiator of the device: it is bound to none
            queuePair = xrc ? null : local;
            bindings++;
            remoteNumber = toQueuePair;
            frame.clear();
            frame.putInt(HELLO).putInt(local.number()).putInt(toQueuePair).putInt(generation).put(gid).flip();
            writeOrQueue();
        }
        if (hasPendingWrites()) {
            throw new IOException("shm peer socket did not take the introduction");
        }
    }

    /**
     * The bound queue pair {@code owner} lets go of the link (it closes or is reset): the peer hears RECYCLE, which
     * ends the connection there, and the socket stays: in the agent's idle pool if this side connected it, else open
     * for the peer's next HELLO. Nothing happens if the link is bound to another queue pair by now (the peer let go
     * first and the link serves a newer connection) or closed.
     */
    void release(final ShmQueuePair owner) {
        synchronized (this) {
            if (closed || queuePair != owner) {
                return;
            }
            queuePair = null;
            frame.clear();
            frame.putInt(RECYCLE).putInt(owner.number()).putInt(remoteNumber).putInt(0).putLong(bindings).putLong(0)
                .flip();
            try {
                writeOrQueue();
            } catch (final IOException ex) {
                LOG.debug("shm link {} cannot send its release", this, ex);
                close();
                return;
            }
        }
        if (peerSocket != null) {
            agent.offerIdle(this);
        }
    }

    /**
     * Send a wake-up for the queue pair {@code owner}, if the link is still bound to it: a queue pair whose peer let
     * go of the link does not reach the connection the link serves next.
     */
    void send(final ShmQueuePair owner, final int type, final int argument) {
        if (queuePair == owner) {
            send(type, argument);
        }
    }

    /**
     * Send a wake-up; never blocks. A frame the socket cannot take now is queued and flushed by the agent.
     */
    void send(final int type, final int argument) {
        if (closed) {
            return;
        }
        synchronized (this) {
            frame.clear();
            frame.putInt(type).putInt(argument).putInt(0).putInt(0).putLong(0).putLong(0).flip();
            try {
                writeOrQueue();
            } catch (final IOException ex) {
                LOG.debug("shm link {} cannot send", this, ex);
            }
        }
    }

    private void writeOrQueue() throws IOException {
        if (pending.position() == 0) {
            channel.write(frame);
            if (!frame.hasRemaining()) {
                return;
            }
        }
        if (pending.remaining() < frame.remaining()) {
            final ByteBuffer larger = ByteBuffer.allocate(pending.capacity() * 2).order(ByteOrder.nativeOrder());
            pending.flip();
            pending = larger.put(pending);
        }
        pending.put(frame);
        agent.interestInWrite(this);
    }

    synchronized boolean hasPendingWrites() {
        return pending.position() > 0;
    }

    /**
     * Write queued frames; called by the agent when the socket is writable.
     *
     * @return true when nothing is left.
     */
    synchronized boolean flush() throws IOException {
        pending.flip();
        try {
            channel.write(pending);
        } finally {
            pending.compact();
        }
        return pending.position() == 0;
    }

    /**
     * Read and dispatch whole frames.
     *
     * @return false at end of stream.
     */
    boolean read(final ShmDevice device) throws IOException {
        final int count = channel.read(readBuffer);
        if (count < 0) {
            return false;
        }
        readBuffer.flip();
        while (readBuffer.remaining() >= FRAME_LENGTH) {
            final int start = readBuffer.position();
            final int type = readBuffer.getInt(start);
            final int first = readBuffer.getInt(start + 4);
            final int second = readBuffer.getInt(start + 8);
            if (type == HELLO) {
                final byte[] gid = new byte[16];
                readBuffer.get(start + 16, gid);
                onHello(device, gid, first, second, readBuffer.getInt(start + 12));
            } else if (type == RECYCLE) {
                onRecycle(first, second, readBuffer.getLong(start + 16));
            } else {
                dispatch(device, type, first);
            }
            readBuffer.position(start + FRAME_LENGTH);
        }
        readBuffer.compact();
        return true;
    }

    private void onHello(final ShmDevice device, final byte[] gid, final int remote, final int local,
        final int generation) {
        synchronized (this) {
            bindings++;
            // before the queue pair can take the binding: a release racing with the rest of this introduction names
            // the peer's queue pair in its RECYCLE
            remoteNumber = remote;
        }
        if (queuePair != null) {
            // a new introduction before the current binding was let go of: the peer does not follow the protocol
            LOG.debug("shm link {} introduced again while bound", this);
            closed();
            return;
        }
        if (local == XRC_LINK) {
            LOG.debug("shm link from XRC initiator {}/{}", HexFormat.of().formatHex(gid), remote);
            return;
        }
        // a queue pair that takes the link binds it in acceptLink, under its link lock; binding it here, after, would
        // undo a release (a RESET or close) that ran meanwhile and leave the link bound to a connection that ended:
        // the peer's next HELLO would find it bound and close the socket, failing the next connection
        final ShmQueuePair target = device.queuePair(local);
        if (target == null || !target.acceptLink(this, gid, remote, generation)) {
            // the queue pair is gone (its connection may have ended before this introduction was read) or expects
            // another peer: that binding ends at once, and the socket stays for the next, as after a RECYCLE; closing
            // it would end whatever connection the peer introduces it to next
            LOG.debug("shm link introduced for unknown or unexpected queue pair {} from {}/{}", local,
                HexFormat.of().formatHex(gid), remote);
            refuse(local, remote);
        }
    }

    /** End the binding just introduced without taking it: RECYCLE back, as if its queue pair had let go at once. */
    private void refuse(final int local, final int remote) {
        synchronized (this) {
            if (closed) {
                return;
            }
            frame.clear();
            frame.putInt(RECYCLE).putInt(local).putInt(remote).putInt(0).putLong(bindings).putLong(0).flip();
            try {
                writeOrQueue();
            } catch (final IOException ex) {
                LOG.debug("shm link {} cannot refuse an introduction", this, ex);
                close();
            }
        }
    }

    /**
     * The peer let go of the binding {@code binding} (agent thread): the connection ends as if the socket had, and the
     * socket stays for the next binding. A RECYCLE of an earlier binding, or naming other queue pairs, ends nothing.
     */
    private void onRecycle(final int remote, final int local, final long binding) {
        final ShmQueuePair bound;
        synchronized (this) {
            bound = queuePair;
            if (bound == null || binding != bindings || remote != remoteNumber || bound.number() != local) {
                return;
            }
            queuePair = null;
        }
        if (peerSocket != null) {
            // free for the next connection before this one's end is told: one that follows at once finds it
            agent.offerIdle(this);
        }
        bound.onPeerFailure(this, 0, true);
    }

    private void dispatch(final ShmDevice device, final int type, final int argument) {
        final ShmQueuePair local = queuePair;
        switch (type) {
            case WAKE_CQ -> {
                final ShmCompletionQueue queue = device.completionQueue(argument);
                if (queue != null) {
                    queue.signal();
                }
            }
            case RECV_POSTED -> {
                if (local != null && local.number() == argument) {
                    local.progress();
                }
            }
            case QP_ERROR -> {
                if (local != null && local.number() == argument) {
                    local.onPeerFailure(this, 0, false);
                }
            }
            case SRQ_LIMIT -> {
                // only for the queue this link's queue pair takes its receives from: a peer reaches no other
                final ShmSharedReceiveQueue queue = local == null ? null : local.sharedReceiveQueue();
                if (queue != null && queue.id() == argument) {
                    queue.onLimitReached();
                }
            }
            case XRC_SRQ_LIMIT -> {
                // any XRC initiator may reach any XRC shared receive queue of the device, and no other kind
                final ShmSharedReceiveQueue queue = device.sharedReceiveQueue(argument);
                if (queue != null && queue.isXrc()) {
                    queue.onLimitReached();
                }
            }
            default -> LOG.debug("shm link {} ignores unknown frame type {}", this, type);
        }
    }

    /**
     * The socket ended or failed: the peer is gone.
     */
    void closed() {
        close();
        if (peerSocket != null) {
            agent.forgetIdle(this);
        }
        final ShmQueuePair local = queuePair;
        if (local != null) {
            local.onPeerFailure(this, 0, true);
        }
        if (xrc) {
            agent.xrcLinkEnded(this);
        }
    }

    void close() {
        closed = true;
        try {
            channel.close();
        } catch (final IOException ignore) {
            // nothing more to release
        }
    }

    @Override
    public String toString() {
        final ShmQueuePair local = queuePair;
        return "ShmLink{queuePair=" + (xrc ? "xrc" : local == null ? "unbound" : Integer.toString(local.number()))
            + ", closed=" + closed + '}';
    }
}
