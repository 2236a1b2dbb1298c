package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.ReadinessSource;
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
 * One side of a two-process test, run by the test JVM and by {@link ShmProcessChild} alike: an shm device, a
 * protection domain, an RC queue pair with a send and a receive completion queue (the latter on a readiness source),
 * and one region the peer may write and read. The bulk operations move a region prefix in {@link #PIECE} pieces
 * with a bounded window, and fail with this side's state when a completion is not a SUCCESS.
 */
final class ShmProcessPeer implements AutoCloseable {
    static final int PIECE = 64 * 1024;
    static final int SEND_DEPTH = 32;
    static final int RECEIVE_DEPTH = 64;
    static final long RECEIVE_QUEUE_TOKEN = 1;
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);
    private static final long PATTERN_MULTIPLIER = 0x9E3779B97F4A7C15L;
    private static final int REMOTE_ACCESS = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE
        | AccessFlags.REMOTE_READ;

    private final RdmaDevice device;
    private ProtectionDomain domain;
    private ReadinessSource readiness;
    private CompletionQueue sendQueue;
    private CompletionQueue receiveQueue;
    private QueuePair queuePair;
    private MemoryRegion region;
    private SendWorkRequest send;
    private ReceiveWorkRequest receive;
    private Endpoint remote;
    private long sendsPosted;
    private long sendsCompleted;
    private long receivesPosted;
    private long receivesCompleted;
    private boolean receivingImmediates;
    private String lastCompletion = "none";
    private volatile boolean closed;

    private ShmProcessPeer(final RdmaDevice device) {
        this.device = device;
    }

    /**
     * The connection details exchanged out of band, one line each way.
     */
    record Endpoint(byte[] gid, int queuePairNumber, long address, int remoteKey, long length) {
        String format() {
            return "gid=" + HexFormat.of().formatHex(gid) + " qpn=" + queuePairNumber + " addr="
                + Long.toHexString(address) + " rkey=" + Integer.toHexString(remoteKey) + " len=" + length;
        }

        static Endpoint parse(final String line) {
            final String[] words = line.trim().split(" ");
            if (words.length != 5) {
                throw new IllegalArgumentException("malformed endpoint line: " + line);
            }
            return new Endpoint(HexFormat.of().parseHex(value(words[0], "gid")),
                Integer.parseInt(value(words[1], "qpn")),
                Long.parseUnsignedLong(value(words[2], "addr"), 16),
                Integer.parseUnsignedInt(value(words[3], "rkey"), 16),
                Long.parseLong(value(words[4], "len")));
        }

        private static String value(final String word, final String key) {
            if (!word.startsWith(key + "=")) {
                throw new IllegalArgumentException("expected " + key + "=... but got " + word);
            }
            return word.substring(key.length() + 1);
        }
    }

    /**
     * Open a device in the directory {@code rdmachannel.shm.dir} names and create everything in it.
     */
    static ShmProcessPeer open(final long regionLength) throws IOException {
        final ShmProcessPeer peer = new ShmProcessPeer(RdmaProviders.byName("shm").openDevice(null));
        try {
            peer.domain = peer.device.allocateProtectionDomain();
            peer.readiness = peer.device.createReadinessSource();
            peer.sendQueue = peer.device.createCompletionQueue(2 * SEND_DEPTH, null, 0);
            peer.receiveQueue = peer.device.createCompletionQueue(2 * RECEIVE_DEPTH, peer.readiness,
                RECEIVE_QUEUE_TOKEN);
            peer.queuePair = peer.domain.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(peer.sendQueue).receiveCompletionQueue(peer.receiveQueue)
                .maxSendWorkRequests(SEND_DEPTH).maxReceiveWorkRequests(RECEIVE_DEPTH));
            peer.region = peer.domain.allocate(regionLength, REMOTE_ACCESS);
            peer.send = peer.queuePair.createSendWorkRequest();
            peer.receive = peer.queuePair.createReceiveWorkRequest();
            return peer;
        } catch (final IOException | RuntimeException ex) {
            peer.close();
            throw ex;
        }
    }

    Endpoint endpoint() throws IOException {
        return new Endpoint(device.queryGid(1, 0), queuePair.number(), region.address(), region.remoteKey(),
            region.length());
    }

    RdmaDevice device() {
        return device;
    }

    QueuePair queuePair() {
        return queuePair;
    }

    CompletionQueue receiveQueue() {
        return receiveQueue;
    }

    ReadinessSource readiness() {
        return readiness;
    }

    MemorySegment memory() {
        return region.segment();
    }

    /**
     * Move the queue pair through INIT and READY_TO_RECEIVE to READY_TO_SEND, connected to the remote one.
     */
    void connect(final Endpoint peer) throws IOException {
        remote = peer;
        queuePair.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(REMOTE_ACCESS));
        queuePair.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(peer.gid())
            .remoteQueuePairNumber(peer.queuePairNumber()));
        queuePair.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes());
    }

    // ----- bulk operations -----

    /**
     * RDMA WRITE (or WRITE WITH IMM, the immediate being the piece index) of the local prefix to the peer's.
     */
    void write(final WorkRequestOpcode opcode, final long length) {
        for (long offset = 0; offset < length; offset += PIECE) {
            final int bytes = (int) Math.min(PIECE, length - offset);
            awaitSendSlot();
            send.reset().id(offset / PIECE).opcode(opcode).flags(SendFlags.SIGNALED).immediate((int) (offset / PIECE))
                .remote(remote.address() + offset, remote.remoteKey())
                .sge(0, region.address() + offset, bytes, region.localKey());
            postSend();
        }
        awaitSends();
    }

    /**
     * RDMA READ of the peer's prefix into the local one.
     */
    void read(final long length) {
        for (long offset = 0; offset < length; offset += PIECE) {
            final int bytes = (int) Math.min(PIECE, length - offset);
            awaitSendSlot();
            send.reset().id(offset / PIECE).opcode(WorkRequestOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .remote(remote.address() + offset, remote.remoteKey())
                .sge(0, region.address() + offset, bytes, region.localKey());
            postSend();
        }
        awaitSends();
    }

    /**
     * SEND the local prefix, one message per piece.
     */
    void sendMessages(final long length) {
        for (long offset = 0; offset < length; offset += PIECE) {
            final int bytes = (int) Math.min(PIECE, length - offset);
            awaitSendSlot();
            send.reset().id(offset / PIECE).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
                .sge(0, region.address() + offset, bytes, region.localKey());
            postSend();
        }
        awaitSends();
    }

    /**
     * Take the receives of a {@link #sendMessages} (each piece lands at its offset) or of a {@link #write} with
     * immediates (each carries its piece index), checking that they arrive in order, none twice and none missing.
     */
    void receive(final long length, final boolean immediates) {
        final long pieces = (length + PIECE - 1) / PIECE;
        final long first = receivesCompleted;
        receivingImmediates = immediates;
        final long deadline = System.nanoTime() + WAIT_NANOS;
        while (receivesCompleted - first < pieces) {
            while (receivesPosted - first < pieces && receivesPosted - receivesCompleted < RECEIVE_DEPTH) {
                final long piece = receivesPosted - first;
                if (immediates) {
                    postReceive(receivesPosted, 0, 0);
                } else {
                    postReceive(receivesPosted, piece * PIECE, (int) Math.min(PIECE, length - piece * PIECE));
                }
            }
            if (receiveQueue.poll(c -> onReceive(c, first, length), 16) == 0) {
                idle(deadline, "receive completions");
            }
        }
    }

    private void onReceive(final WorkCompletion completion, final long first, final long length) {
        lastCompletion = completion.toString();
        final long expected = receivesCompleted;
        final long piece = expected - first;
        final int pieceLength = (int) Math.min(PIECE, length - piece * PIECE);
        final CompletionOpcode opcode = receivingImmediates ? CompletionOpcode.RECV_RDMA_WITH_IMM
            : CompletionOpcode.RECV;
        if (completion.status() != CompletionStatus.SUCCESS || completion.workRequestId() != expected
            || completion.opcode() != opcode || receivingImmediates != completion.hasImmediate()
            || receivingImmediates && completion.immediate() != (int) piece
            || !receivingImmediates && completion.byteLength() != pieceLength) {
            throw new IllegalStateException("unexpected receive completion " + completion + " for piece " + piece
                + " (wrId " + expected + ", " + opcode + ") on " + this);
        }
        receivesCompleted++;
    }

    /**
     * Post one receive: no entry for an immediate, else {@code length} bytes of the region at {@code offset}.
     */
    void postReceive(final long id, final long offset, final int length) {
        receive.reset().id(id);
        if (length > 0) {
            receive.sge(0, region.address() + offset, length, region.localKey());
        }
        queuePair.postReceive(receive);
        receivesPosted++;
    }

    /**
     * Stream RDMA WRITE WITH IMM until something fails: message {@code n} carries immediate {@code n} and fills
     * piece {@code n % slots} of the peer's region with {@link #fill} pattern {@code n}.
     */
    void stream(final int slots) {
        for (long sequence = 0; ; sequence++) {
            final long offset = (sequence % slots) * PIECE;
            awaitSendSlot();
            fill(region.segment(), offset, PIECE, sequence);
            send.reset().id(sequence).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
                .immediate((int) sequence).remote(remote.address() + offset, remote.remoteKey())
                .sge(0, region.address() + offset, PIECE, region.localKey());
            postSend();
        }
    }

    private void postSend() {
        queuePair.postSend(send);
        sendsPosted++;
    }

    private void awaitSendSlot() {
        final long deadline = System.nanoTime() + WAIT_NANOS;
        while (sendsPosted - sendsCompleted >= SEND_DEPTH) {
            if (sendQueue.poll(this::onSend, 16) == 0) {
                idle(deadline, "a free send slot");
            }
        }
    }

    private void awaitSends() {
        final long deadline = System.nanoTime() + WAIT_NANOS;
        while (sendsCompleted < sendsPosted) {
            if (sendQueue.poll(this::onSend, 16) == 0) {
                idle(deadline, "send completions");
            }
        }
    }

    private void onSend(final WorkCompletion completion) {
        lastCompletion = completion.toString();
        if (completion.status() != CompletionStatus.SUCCESS) {
            throw new IllegalStateException("send completion failed: " + completion + " on " + this);
        }
        sendsCompleted++;
    }

    private void idle(final long deadline, final String what) {
        if (System.nanoTime() - deadline > 0) {
            throw new IllegalStateException("timed out waiting for " + what + " on " + this);
        }
        if (Thread.currentThread().isInterrupted()) {
            throw new IllegalStateException("interrupted while waiting for " + what + " on " + this);
        }
        // two cores host both JVMs and their agents: give them the processor while nothing is there
        Thread.yield();
    }

    // ----- data -----

    /**
     * Fill {@code length} bytes (a multiple of 8) at {@code offset} with longs {@code (seed + 1) * K + i}.
     */
    static void fill(final MemorySegment memory, final long offset, final long length, final long seed) {
        final long base = (seed + 1) * PATTERN_MULTIPLIER;
        for (long i = 0; i < length / Long.BYTES; i++) {
            memory.set(ValueLayout.JAVA_LONG, offset + i * Long.BYTES, base + i);
        }
    }

    /**
     * The byte offset of the first long that differs from the {@link #fill} pattern, or -1.
     */
    static long mismatch(final MemorySegment memory, final long offset, final long length, final long seed) {
        final long base = (seed + 1) * PATTERN_MULTIPLIER;
        for (long i = 0; i < length / Long.BYTES; i++) {
            if (memory.get(ValueLayout.JAVA_LONG, offset + i * Long.BYTES) != base + i) {
                return i * Long.BYTES;
            }
        }
        return -1;
    }

    static String checksum(final MemorySegment memory, final long length) {
        final CRC32C crc = new CRC32C();
        crc.update(memory.asSlice(0, length).asByteBuffer());
        return Long.toHexString(crc.getValue());
    }

    /**
     * Close the region and allocate one of the same length in its place: the pool gives it the same file, zeroed,
     * under a new key. A peer still holding the old key and address is a stale peer.
     */
    void reallocateRegion() throws IOException {
        final long length = region.length();
        region.close();
        region = domain.allocate(length, REMOTE_ACCESS);
    }

    MemoryRegion region() {
        return region;
    }

    // ----- lifetime -----

    /**
     * Destroy the queue pair only: the peer sees the connection end.
     */
    void closeQueuePair() {
        if (queuePair != null) {
            queuePair.close();
            queuePair = null;
        }
    }

    @Override
    public void close() {
        closed = true;
        closeQueuePair();
        for (final AutoCloseable closeable : new AutoCloseable[] {region, receiveQueue, sendQueue, readiness,
            domain, device}) {
            if (closeable != null) {
                try {
                    closeable.close();
                } catch (final Exception ex) {
                    throw new IllegalStateException("cannot close " + closeable + " of " + this, ex);
                }
            }
        }
        region = null;
        receiveQueue = null;
        sendQueue = null;
        readiness = null;
        domain = null;
    }

    @Override
    public String toString() {
        if (closed) {
            return "ShmProcessPeer{closed, sendsPosted=" + sendsPosted + ", receivesCompleted=" + receivesCompleted
                + ", lastCompletion=" + lastCompletion + '}';
        }
        return "ShmProcessPeer{device=" + device + ", queuePair=" + queuePair + ", sendQueue=" + sendQueue
            + ", receiveQueue=" + receiveQueue + ", sendsPosted=" + sendsPosted + ", sendsCompleted="
            + sendsCompleted + ", receivesPosted=" + receivesPosted + ", receivesCompleted=" + receivesCompleted
            + ", lastCompletion=" + lastCompletion + ", remote=" + (remote == null ? "none" : remote.format()) + '}';
    }
}
