package io.rdmachannel.demo;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkCompletion;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HexFormat;
import java.util.concurrent.TimeUnit;
import java.util.zip.CRC32C;

/**
 * One end of the demo: a device, a connected RC queue pair with busy-polled completion queues, and one region.
 *
 * <pre>
 *  region: | ring: RING_SLOTS pieces of PIECE bytes (bandwidth target/source) | inbox | outbox |
 * </pre>
 *
 * The peer RDMA-writes pings and pongs into the inbox with an immediate, which consumes one of the receives this side
 * keeps posted; the bandwidth run writes into the ring.
 */
final class Peer implements AutoCloseable {
    static final int PIECE = 64 * 1024;
    static final int RING_SLOTS = 256;
    static final int END_OF_RUN = -1;
    private static final int QUEUE_DEPTH = 64;
    private static final int SPINS_BEFORE_YIELD = 1000;
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final int ACCESS = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE;

    private final RdmaDevice device;
    private final int messageSize;
    private final long inbox;
    private final long outbox;
    private ProtectionDomain domain;
    private CompletionQueue sendQueue;
    private CompletionQueue receiveQueue;
    private QueuePair queuePair;
    private MemoryRegion region;
    private SendWorkRequest send;
    private ReceiveWorkRequest receive;
    private Endpoint remote;
    private long sendsOutstanding;
    private int lastImmediate;

    /**
     * What a peer needs to reach this one, exchanged as one line of text.
     */
    record Endpoint(byte[] gid, int queuePairNumber, long address, int remoteKey, long length) {
        String format() {
            return "gid=" + HexFormat.of().formatHex(gid) + " qpn=" + queuePairNumber + " addr="
                + Long.toHexString(address) + " rkey=" + Integer.toHexString(remoteKey) + " len=" + length;
        }

        static Endpoint parse(final String line) {
            final String[] words = line == null ? new String[0] : line.trim().split(" ");
            if (words.length != 5) {
                throw new IllegalArgumentException("malformed connection line: " + line);
            }
            return new Endpoint(HexFormat.of().parseHex(value(words[0], "gid")),
                Integer.parseInt(value(words[1], "qpn")), Long.parseUnsignedLong(value(words[2], "addr"), 16),
                Integer.parseUnsignedInt(value(words[3], "rkey"), 16), Long.parseLong(value(words[4], "len")));
        }

        private static String value(final String word, final String key) {
            if (!word.startsWith(key + "=")) {
                throw new IllegalArgumentException("expected " + key + "=... in the connection line, got " + word);
            }
            return word.substring(key.length() + 1);
        }
    }

    private Peer(final RdmaDevice device, final int messageSize) {
        this.device = device;
        this.messageSize = messageSize;
        this.inbox = (long) RING_SLOTS * PIECE;
        this.outbox = inbox + messageSize;
    }

    static Peer open(final RdmaProvider provider, final int messageSize) throws IOException {
        final Peer peer = new Peer(provider.openDevice(null), messageSize);
        try {
            peer.domain = peer.device.allocateProtectionDomain();
            peer.sendQueue = peer.device.createCompletionQueue(2 * QUEUE_DEPTH, null, 0);
            peer.receiveQueue = peer.device.createCompletionQueue(2 * QUEUE_DEPTH, null, 0);
            peer.queuePair = peer.domain.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(peer.sendQueue).receiveCompletionQueue(peer.receiveQueue)
                .maxSendWorkRequests(QUEUE_DEPTH).maxReceiveWorkRequests(QUEUE_DEPTH));
            peer.region = peer.domain.allocate(peer.outbox + messageSize, ACCESS);
            peer.send = peer.queuePair.createSendWorkRequest();
            peer.receive = peer.queuePair.createReceiveWorkRequest();
            return peer;
        } catch (final IOException | RuntimeException ex) {
            peer.close();
            throw ex;
        }
    }

    RdmaDevice device() {
        return device;
    }

    Endpoint endpoint() throws IOException {
        return new Endpoint(device.queryGid(1, 0), queuePair.number(), region.address(), region.remoteKey(),
            region.length());
    }

    /**
     * Connect to the peer (INIT, READY_TO_RECEIVE, READY_TO_SEND) with every receive posted.
     */
    void connect(final Endpoint peer) throws IOException {
        if (peer.length() != region.length()) {
            throw new IllegalArgumentException("the peer's region has " + peer.length() + " bytes, not "
                + region.length() + ": was it started with another --size?");
        }
        remote = peer;
        queuePair.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(ACCESS));
        for (int i = 0; i < QUEUE_DEPTH; i++) {
            queuePair.postReceive(receive.reset().id(i));
        }
        queuePair.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(peer.gid())
            .remoteQueuePairNumber(peer.queuePairNumber()));
        queuePair.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes());
    }

    QueuePairState state() {
        return queuePair.state();
    }

    // ----- ping-pong -----

    /**
     * Send pings numbered from 0 and wait for each echo; returns each round trip in nanoseconds.
     */
    long[] ping(final int count) {
        final long[] roundTrips = new long[count];
        for (int i = 0; i < count; i++) {
            final long start = System.nanoTime();
            region.segment().set(ValueLayout.JAVA_LONG, outbox, i);
            writeMessage(i);
            final int echoed = awaitImmediate();
            roundTrips[i] = System.nanoTime() - start;
            if (echoed != i || region.segment().get(ValueLayout.JAVA_LONG, inbox) != i) {
                throw new IllegalStateException("ping " + i + " came back as " + echoed + " with payload "
                    + region.segment().get(ValueLayout.JAVA_LONG, inbox));
            }
        }
        return roundTrips;
    }

    /**
     * Echo {@code count} pings: copy each message from the inbox to the outbox and write it back.
     */
    void pong(final int count) {
        for (int i = 0; i < count; i++) {
            final int number = awaitImmediate();
            MemorySegment.copy(region.segment(), inbox, region.segment(), outbox, messageSize);
            writeMessage(number);
        }
    }

    private void writeMessage(final int immediate) {
        awaitSendSlot();
        send.reset().id(immediate).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
            .immediate(immediate).remote(remote.address() + inbox, remote.remoteKey())
            .sge(0, region.address() + outbox, messageSize, region.localKey());
        post();
    }

    /**
     * Busy-poll for one RDMA WRITE WITH IMM, repost its receive, and return the immediate.
     */
    int awaitImmediate() {
        final long deadline = System.nanoTime() + WAIT_NANOS;
        for (int spins = 0; receiveQueue.poll(this::onReceive, 1) == 0; spins++) {
            sendQueue.poll(this::onSend, QUEUE_DEPTH);
            spin(deadline, "a message from the peer", spins);
        }
        queuePair.postReceive(receive.reset().id(lastImmediate));
        return lastImmediate;
    }

    private void onReceive(final WorkCompletion completion) {
        if (completion.status() != CompletionStatus.SUCCESS || !completion.hasImmediate()) {
            throw new IllegalStateException("receive failed: " + completion + "; queue pair " + queuePair.state());
        }
        lastImmediate = completion.immediate();
    }

    // ----- bandwidth -----

    /**
     * RDMA WRITE {@code pieces} pieces round the peer's ring, then an empty WRITE WITH IMM {@link #END_OF_RUN}.
     *
     * @return the nanoseconds from the first post to the last completion.
     */
    long writeRing(final long pieces) {
        for (long i = 0; i < RING_SLOTS * (long) PIECE / Long.BYTES; i++) {
            region.segment().set(ValueLayout.JAVA_LONG, i * Long.BYTES, i * 0x9E3779B97F4A7C15L);
        }
        final long start = System.nanoTime();
        for (long i = 0; i < pieces; i++) {
            final long offset = (i % RING_SLOTS) * PIECE;
            awaitSendSlot();
            send.reset().id(i).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(remote.address() + offset, remote.remoteKey())
                .sge(0, region.address() + offset, PIECE, region.localKey());
            post();
        }
        awaitSends();
        final long elapsed = System.nanoTime() - start;
        awaitSendSlot();
        send.reset().id(END_OF_RUN).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
            .immediate(END_OF_RUN);
        post();
        awaitSends();
        return elapsed;
    }

    String ringChecksum() {
        final CRC32C crc = new CRC32C();
        crc.update(region.segment().asSlice(0, (long) RING_SLOTS * PIECE).asByteBuffer());
        return Long.toHexString(crc.getValue());
    }

    // ----- send queue -----

    private void post() {
        queuePair.postSend(send);
        sendsOutstanding++;
    }

    private void awaitSendSlot() {
        final long deadline = System.nanoTime() + WAIT_NANOS;
        for (int spins = 0; sendsOutstanding >= QUEUE_DEPTH; spins++) {
            if (sendQueue.poll(this::onSend, QUEUE_DEPTH) == 0) {
                spin(deadline, "a free send slot", spins);
            }
        }
    }

    private void awaitSends() {
        final long deadline = System.nanoTime() + WAIT_NANOS;
        for (int spins = 0; sendsOutstanding > 0; spins++) {
            if (sendQueue.poll(this::onSend, QUEUE_DEPTH) == 0) {
                spin(deadline, "send completions", spins);
            }
        }
    }

    private void onSend(final WorkCompletion completion) {
        if (completion.status() != CompletionStatus.SUCCESS) {
            throw new IllegalStateException("send failed: " + completion + "; queue pair " + queuePair.state());
        }
        sendsOutstanding--;
    }

    /**
     * Busy-wait one step. After a while it yields: on a host with fewer free cores than spinning threads the peer
     * process may need this core to answer.
     */
    private void spin(final long deadline, final String what, final int spins) {
        if (spins < SPINS_BEFORE_YIELD) {
            Thread.onSpinWait();
            return;
        }
        if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException("no " + what + " within " + TimeUnit.NANOSECONDS.toSeconds(WAIT_NANOS)
                + " s; queue pair " + queuePair.state());
        }
        Thread.yield();
    }

    @Override
    public void close() {
        final AutoCloseable[] owned = {queuePair, region, receiveQueue, sendQueue, domain, device};
        queuePair = null;
        region = null;
        receiveQueue = null;
        sendQueue = null;
        domain = null;
        for (final AutoCloseable closeable : owned) {
            if (closeable != null) {
                try {
                    closeable.close();
                } catch (final Exception ex) {
                    throw new IllegalStateException("cannot close " + closeable, ex);
                }
            }
        }
    }
}
