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
 * </pre>
 *
 * <p>An XRC initiator's link to the device of XRC shared receive queues it delivers into is introduced to queue pair
 * {@link #XRC_LINK} (no queue pair has number 0): the receiving end is bound to no queue pair and takes WAKE_CQ and
 * XRC_SRQ_LIMIT frames; its end tells the initiator that the device is gone.
 */
final class ShmLink {
    static final int FRAME_LENGTH = 32;
    static final int HELLO = 1;
    static final int WAKE_CQ = 2;
    static final int RECV_POSTED = 3;
    static final int QP_ERROR = 4;
    static final int SRQ_LIMIT = 5;
    static final int XRC_SRQ_LIMIT = 6;
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

    ShmLink(final ShmAgent agent, final SocketChannel channel) {
        this.agent = agent;
        this.channel = channel;
    }

    SocketChannel channel() {
        return channel;
    }

    void bind(final ShmQueuePair local) {
        this.queuePair = local;
    }

    ShmQueuePair queuePair() {
        return queuePair;
    }

    void sendHello(final byte[] gid, final int fromQueuePair, final int toQueuePair, final int generation)
        throws IOException {
        synchronized (this) {
            frame.clear();
            frame.putInt(HELLO).putInt(fromQueuePair).putInt(toQueuePair).putInt(generation).put(gid).flip();
            writeOrQueue();
        }
        if (hasPendingWrites()) {
            throw new IOException("shm peer socket did not take the introduction");
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
        if (local == XRC_LINK) {
            LOG.debug("shm link from XRC initiator {}/{}", HexFormat.of().formatHex(gid), remote);
            return;
        }
        final ShmQueuePair target = device.queuePair(local);
        if (target == null || !target.acceptLink(this, gid, remote, generation)) {
            LOG.debug("shm link introduced for unknown or unexpected queue pair {} from {}/{}", local,
                HexFormat.of().formatHex(gid), remote);
            close();
            return;
        }
        queuePair = target;
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
        final ShmQueuePair local = queuePair;
        if (local != null) {
            local.onPeerFailure(this, 0, true);
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
        return "ShmLink{queuePair=" + (local == null ? "unbound" : Integer.toString(local.number()))
            + ", closed=" + closed + '}';
    }
}
