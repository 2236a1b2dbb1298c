package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.CmConnection;
import io.rdmachannel.channel.cm.CmEndpoint;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.cm.ConnectionRequestFilter;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkCompletion;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * The other side of an rsockets connection, played with the raw verbs SPI so that a test can send what the engine
 * never would: a {@link CmEndpoint} whose connection data each test edits, and whose messages each test posts, from
 * well-formed DATA to reserved ops. Driven by the test thread alone (its completion queue is only polled); the
 * connection manager's callbacks only allocate, bind and record the outcome.
 *
 * <p>Its receive ring is one registered region: a guard, window 0, a guard, window 1, a guard, every byte filled
 * with {@link #GUARD_BYTE} except the data the engine wrote into the regions this peer advertised. The connection
 * data advertises all of window 0; {@link #advertise(int, int, int)} publishes a region inside a window into the
 * engine's target SGL. {@link #receive(ByteBuffer)} checks after every DATA message that it fits the region the
 * engine must be filling, that it came within the credits granted, and that the ring holds guard bytes outside the
 * advertised regions and data in every byte received so far; the caller compares the data with what the engine
 * wrote, which proves it landed in order.
 *
 * <p>On a device without RDMA WRITE WITH IMMEDIATE (the shm provider emulating iWARP) it speaks message mode as the
 * engine must: every message a 4-byte SEND in this side's byte order, after an RDMA WRITE of the payload if there is
 * one; every receive posted with a 4-byte buffer of its own. It then insists that each message of the engine is a
 * 4-byte SEND without immediate data, and keeps the raw bytes of each ({@link #inboundBytes()}).
 */
final class HostilePeer implements CmEndpoint, AutoCloseable {
    /** Credits this peer advertises. */
    static final int CREDITS = 64;
    /** The size of a window of the receive ring. */
    static final int WINDOW = 4096;
    /** The guard between and around the windows. */
    static final int GUARD = 4096;
    /** What every byte of the ring outside written data holds; {@link #streamByte} never produces it. */
    static final byte GUARD_BYTE = (byte) 0xA5;
    /** Entries of this peer's target SGL. */
    static final int TARGET_ENTRIES = 2;

    private static final int RECEIVES = CREDITS + 8;
    private static final int SEND_QUEUE = 64;
    private static final int RING_LENGTH = GUARD + WINDOW + GUARD + WINDOW + GUARD;
    private static final int STAGE_LENGTH = 1 << 20;
    /** Where a message-mode SEND is staged: after the payload area, so the WRITE before it keeps its bytes. */
    private static final int MESSAGE_STAGE = STAGE_LENGTH;
    private static final long SEND_ID = 1L << 40;
    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(20);

    /**
     * Edits the connection data this peer sends, after it was filled in with well-formed values.
     */
    @FunctionalInterface
    interface ConnectionDataEditor {
        /** Leave the connection data as it is. */
        ConnectionDataEditor NONE = (data, peer) -> {
        };

        void edit(ConnectionDataFlyweight data, HostilePeer peer);
    }

    private final ConnectionDataEditor editor;
    private final CompletableFuture<PeerConnectionData> outcome = new CompletableFuture<>();
    private final ArrayDeque<Integer> inbound = new ArrayDeque<>();
    private final List<byte[]> inboundBytes = new ArrayList<>();
    private final CompletionHandler handler = this::onCompletion;
    private CmConnection attempt;
    private CmListener cmListener;

    private ProtectionDomain domain;
    private CompletionQueue queue;
    private MemoryRegion ring;
    private MemoryRegion target;
    private MemoryRegion stage;
    private MemoryRegion messageBuffers;
    private boolean messageMode;
    private QueuePair pair;
    private SendWorkRequest send;
    private ReceiveWorkRequest receive;
    private UnsafeBuffer targetView;
    private PeerConnectionData engine;
    private int outstandingSends;
    private CompletionStatus sendFailure;

    // sender: the engine's receive regions, as it advertised them
    private final long[] slotAddress = new long[TARGET_ENTRIES];
    private final int[] slotKey = new int[TARGET_ENTRIES];
    private final int[] slotLength = new int[TARGET_ENTRIES];
    private int slot;
    private int sent;
    private int limit;

    // receiver: regions advertised inside each window, in the order the engine must fill them
    private final ArrayDeque<Integer> regions = new ArrayDeque<>();
    private final int[] regionOffset = new int[2];
    private final int[] regionLength = new int[2];
    private final int[] regionFilled = new int[2];
    private int engineSge = 1;
    private int consumed;
    private int granted = CREDITS;
    private boolean ended;

    private HostilePeer(final ConnectionDataEditor editor) {
        this.editor = editor;
    }

    /**
     * Connect to an engine listener.
     */
    static HostilePeer connect(final ConnectionManager cm, final SocketAddress remote,
        final ConnectionDataEditor editor) throws IOException {
        final HostilePeer peer = new HostilePeer(editor);
        peer.attempt = cm.connect(remote, null, peer);
        return peer;
    }

    /**
     * Listen for one engine connector; {@link #address()} is where it connects.
     */
    static HostilePeer listen(final ConnectionManager cm, final ConnectionDataEditor editor) throws IOException {
        final HostilePeer peer = new HostilePeer(editor);
        peer.cmListener = cm.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 4,
            ConnectionRequestFilter.ACCEPT_ALL, remote -> peer);
        return peer;
    }

    SocketAddress address() {
        return cmListener.localAddress();
    }

    // ----- the connection manager's side -----

    @Override
    public QueuePairSetup prepare(final RdmaDevice device) throws IOException {
        domain = device.allocateProtectionDomain();
        queue = device.createCompletionQueue(RECEIVES + SEND_QUEUE, null, 0);
        ring = domain.allocate(RING_LENGTH, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
        target = domain.allocate(TARGET_ENTRIES * SgeDescriptor.LENGTH, AccessFlags.LOCAL_WRITE
            | AccessFlags.REMOTE_WRITE);
        stage = domain.allocate(STAGE_LENGTH + 64, AccessFlags.LOCAL_WRITE);
        messageMode = !device.attributes().has(DeviceCapability.RDMA_WRITE_WITH_IMMEDIATE);
        if (messageMode) {
            messageBuffers = domain.allocate((long) RECEIVES * MessageSendDescriptor.LENGTH, AccessFlags.LOCAL_WRITE);
        }
        ring.segment().fill(GUARD_BYTE);
        targetView = new UnsafeBuffer(target.segment().address(), (int) target.length());
        return new QueuePairSetup(domain, new QueuePairInitAttributes().sendCompletionQueue(queue)
            .receiveCompletionQueue(queue).maxSendWorkRequests(SEND_QUEUE).maxReceiveWorkRequests(RECEIVES)
            .maxSendSge(1).maxReceiveSge(1).maxInlineData(0).signalAll(true), AccessFlags.REMOTE_WRITE,
            QueuePairAttributes.RNR_RETRY_INFINITE, QueuePairAttributes.RNR_RETRY_INFINITE);
    }

    @Override
    public ByteBuffer bind(final QueuePair queuePair, final ByteBuffer peerPrivateData) throws IOException {
        pair = queuePair;
        send = pair.createSendWorkRequest();
        receive = pair.createReceiveWorkRequest();
        for (int i = 0; i < RECEIVES; i++) {
            postReceive(i);
        }
        if (peerPrivateData != null) {
            engine = decode(peerPrivateData);
        }
        final ByteBuffer data = ByteBuffer.allocate(ConnectionDataDescriptor.LENGTH);
        final ConnectionDataFlyweight flyweight = new ConnectionDataFlyweight().wrap(new UnsafeBuffer(data), 0)
            .header(ConnectionDataDescriptor.localFlags(ByteOrder.nativeOrder()), CREDITS)
            .iomapEntries(0)
            .targetSgl(target.address(), target.remoteKey(), TARGET_ENTRIES)
            .dataBuffer(windowAddress(0), ring.remoteKey(), WINDOW);
        regionLength[0] = WINDOW;
        regions.add(0);
        editor.edit(flyweight, this);
        return data;
    }

    private static PeerConnectionData decode(final ByteBuffer privateData) throws ProtocolException {
        final ByteBuffer copy = ByteBuffer.allocate(privateData.remaining()).put(privateData.duplicate()).flip();
        return new ConnectionDataValidator().validate(new UnsafeBuffer(copy), 0, copy.remaining());
    }

    @Override
    public void established(final ByteBuffer peerPrivateData, final SocketAddress localAddress,
        final SocketAddress remoteAddress) throws IOException {
        if (engine == null) {
            engine = decode(peerPrivateData);
        }
        slotAddress[0] = engine.dataBufferAddress();
        slotKey[0] = engine.dataBufferKey();
        slotLength[0] = engine.dataBufferLength();
        limit = engine.credits();
        outcome.complete(engine);
    }

    @Override
    public void failed(final IOException cause) {
        outcome.completeExceptionally(cause);
    }

    /**
     * Wait until the connection is established.
     *
     * @return the engine's connection data.
     */
    PeerConnectionData awaitEstablished() throws Exception {
        return outcome.get(10, TimeUnit.SECONDS);
    }

    /**
     * Wait until the connection attempt failed.
     *
     * @return what {@link #failed(IOException)} was told.
     */
    Throwable awaitFailed() throws InterruptedException, TimeoutException {
        try {
            final PeerConnectionData data = outcome.get(10, TimeUnit.SECONDS);
            throw new AssertionError("the connection was established: " + data);
        } catch (final ExecutionException ex) {
            return ex.getCause();
        }
    }

    // ----- raw messages -----

    /**
     * Whether the engine and this peer speak message mode (no immediate data): each message a 4-byte SEND.
     */
    boolean messageMode() {
        return messageMode;
    }

    /**
     * Post an RDMA WRITE WITH IMMEDIATE of {@code payload} to the engine's memory and wait for its completion; in
     * message mode an RDMA WRITE of the payload (if any) and a SEND of the message.
     */
    void write(final int immediate, final long address, final int key, final byte[] payload) {
        final CompletionStatus status = tryWrite(immediate, address, key, payload);
        if (status != CompletionStatus.SUCCESS) {
            throw new AssertionError("our send completed with " + status);
        }
    }

    /**
     * Post a message without payload, as the engine posts its controls: a zero-length RDMA WRITE WITH IMMEDIATE, or
     * in message mode a 4-byte SEND.
     */
    void message(final int immediate) {
        write(immediate, 0, 0, new byte[0]);
    }

    /**
     * Post a zero-length SEND: a message without immediate data.
     */
    void plainSend() {
        send.reset().id(SEND_ID).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED);
        postAndAwait();
    }

    /**
     * Post a SEND of exactly these bytes and wait for its completion, which must succeed.
     */
    void sendBytes(final byte[] payload) {
        postSendBytes(payload);
        postAndAwait();
    }

    /**
     * Post a SEND of exactly these bytes and wait for its completion, whatever its status.
     *
     * @return the status of our SEND.
     */
    CompletionStatus trySendBytes(final byte[] payload) {
        postSendBytes(payload);
        return postAndReport();
    }

    /**
     * Post an RDMA WRITE WITH IMMEDIATE of {@code payload} (at most 1 MiB) to any address and key, and wait for its
     * completion, whatever its status; in message mode an RDMA WRITE of the payload (if any) and, if that succeeded,
     * a 4-byte SEND of the message in native order (the engine's own, on one host).
     *
     * @return the status of our WRITE, or of the first of the two that failed.
     */
    CompletionStatus tryWrite(final int immediate, final long address, final int key, final byte[] payload) {
        MemorySegment.copy(payload, 0, stage.segment(), ValueLayout.JAVA_BYTE, 0, payload.length);
        if (messageMode) {
            if (payload.length > 0) {
                send.reset().id(SEND_ID).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                    .remote(address, key).sge(0, stage.address(), payload.length, stage.localKey());
                final CompletionStatus written = postAndReport();
                if (written != CompletionStatus.SUCCESS) {
                    return written;
                }
            }
            final byte[] word = new byte[MessageSendDescriptor.LENGTH];
            MessageSendDescriptor.message(new UnsafeBuffer(word), 0, immediate, ByteOrder.nativeOrder());
            return trySendBytes(word);
        }
        send.reset().id(SEND_ID).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).flags(SendFlags.SIGNALED)
            .immediate(immediate).remote(address, key);
        if (payload.length > 0) {
            send.sge(0, stage.address(), payload.length, stage.localKey());
        }
        return postAndReport();
    }

    private CompletionStatus postAndReport() {
        post();
        await(() -> outstandingSends == 0, "the completion of our send");
        final CompletionStatus status = sendFailure == null ? CompletionStatus.SUCCESS : sendFailure;
        sendFailure = null;
        return status;
    }

    private void postSendBytes(final byte[] payload) {
        MemorySegment.copy(payload, 0, stage.segment(), ValueLayout.JAVA_BYTE, MESSAGE_STAGE, payload.length);
        send.reset().id(SEND_ID).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED);
        if (payload.length > 0) {
            send.sge(0, stage.address() + MESSAGE_STAGE, payload.length, stage.localKey());
        }
    }

    /**
     * Write an SGE into slot {@code index} of the engine's target SGL, in the engine's byte order, with a message.
     */
    void writeSge(final int index, final long address, final int key, final int length, final int immediate) {
        final byte[] entry = new byte[SgeDescriptor.LENGTH];
        new SgeFlyweight().wrap(new UnsafeBuffer(entry), 0, engine.byteOrder()).set(address, key,
            Integer.toUnsignedLong(length));
        write(immediate, engine.targetSglAddress() + (long) index * SgeDescriptor.LENGTH, engine.targetSglKey(),
            entry);
    }

    private void post() {
        pair.postSend(send);
        outstandingSends++;
    }

    private void postAndAwait() {
        post();
        await(() -> outstandingSends == 0, "the completion of our send");
        if (sendFailure != null) {
            throw new AssertionError("our send completed with " + sendFailure);
        }
    }

    /**
     * The engine's current receive region: address, key and length of the slot the next DATA goes to.
     */
    long slotAddress() {
        return slotAddress[slot];
    }

    int slotKey() {
        return slotKey[slot];
    }

    int slotLength() {
        return slotLength[slot];
    }

    PeerConnectionData engine() {
        return engine;
    }

    /**
     * The queue pair, for its state.
     */
    QueuePair queuePair() {
        return pair;
    }

    /**
     * The raw bytes of the engine's messages, SGL updates included, in order of arrival (message mode only).
     *
     * @param count wait until at least this many arrived; 0 polls once.
     * @return a copy of what arrived.
     */
    List<byte[]> awaitInboundBytes(final int count) {
        await(() -> inboundBytes.size() >= count, count + " messages from the engine");
        return List.copyOf(inboundBytes);
    }

    /**
     * Poll (posting a receive again for each message taken) until the engine's control message {@code control}
     * arrived.
     *
     * @return the immediates of the engine's messages not taken yet, credit updates left out, in order of arrival.
     */
    List<Integer> awaitControl(final int control) {
        final Integer wanted = ImmediateData.ctrl(control);
        await(() -> inbound.contains(wanted), "control message " + ImmediateData.toString(wanted));
        return List.copyOf(inbound);
    }

    /**
     * The length left in a slot of the engine's receive regions, as the engine advertised them.
     */
    int slotLength(final int index) {
        return slotLength[index];
    }

    // ----- a well-behaved sender -----

    /**
     * Send all of {@code data} as rsockets does: chunks that never cross the engine's current region, only while
     * credits last.
     */
    void sendData(final byte[] data) {
        int position = 0;
        while (position < data.length) {
            await(() -> CreditSequence.hasCredit(sent, limit) && slotLength[slot] != 0, "send credits and a region");
            final int chunk = Math.min(Math.min(data.length - position, slotLength[slot]), STAGE_LENGTH);
            final byte[] payload = Arrays.copyOfRange(data, position, position + chunk);
            write(ImmediateData.data(chunk), slotAddress[slot], slotKey[slot], payload);
            sent = CreditSequence.next(sent);
            slotAddress[slot] += chunk;
            slotLength[slot] -= chunk;
            if (slotLength[slot] == 0) {
                slot = (slot + 1) % TARGET_ENTRIES;
            }
            position += chunk;
        }
    }

    // ----- a well-behaved, watchful receiver -----

    /**
     * Advertise {@code [offset, offset + length)} of a window, which must hold no region now, into the engine's
     * next target SGL slot, granting credits up to what was consumed plus {@link #CREDITS}.
     */
    void advertise(final int window, final int offset, final int length) {
        regionOffset[window] = offset;
        regionLength[window] = length;
        regionFilled[window] = 0;
        regions.add(window);
        granted = CreditSequence.grantLimit(consumed, CREDITS);
        writeSge(engineSge, windowAddress(window) + offset, ring.remoteKey(), length, ImmediateData.sgl(granted));
        engineSge = (engineSge + 1) % engine.targetSglEntries();
    }

    /**
     * Take the next DATA message the engine wrote, check where it landed, and copy it into {@code dst}, which must
     * have room for it. Grants credits back as a C receiver does.
     *
     * @return the bytes taken, or -1 after a SHUTDOWN or DISCONNECT.
     */
    int receive(final ByteBuffer dst) {
        if (ended) {
            return -1;
        }
        await(() -> !inbound.isEmpty(), "a message from the engine");
        final int immediate = inbound.poll();
        if (ImmediateData.op(immediate) == ImmediateData.CTRL) {
            ended = true;
            return -1;
        }
        if (ImmediateData.op(immediate) != ImmediateData.DATA) {
            throw new AssertionError("unexpected message " + ImmediateData.toString(immediate));
        }
        final int length = ImmediateData.operand(immediate);
        if (!CreditSequence.hasCredit(consumed, granted)) {
            throw new AssertionError("the engine sent DATA beyond the credits granted: received=" + consumed
                + ", creditLimit=" + granted);
        }
        final Integer head = regions.peek();
        if (head == null) {
            throw new AssertionError("DATA of " + length + " bytes arrived with no region advertised");
        }
        final int window = head;
        if (regionFilled[window] + length > regionLength[window]) {
            throw new AssertionError("DATA of " + length + " bytes overflows the region of window " + window
                + ": offset=" + regionOffset[window] + ", length=" + regionLength[window] + ", filled="
                + regionFilled[window]);
        }
        final long regionStart = GUARD + (long) window * (WINDOW + GUARD) + regionOffset[window];
        dst.put(ring.segment().asSlice(regionStart + regionFilled[window], length).asByteBuffer());
        regionFilled[window] += length;
        checkRing();
        consumed = CreditSequence.next(consumed);
        if (regionFilled[window] == regionLength[window]) {
            regions.poll();
            ring.segment().asSlice(regionStart, regionFilled[window]).fill(GUARD_BYTE);
            regionFilled[window] = 0;
            regionLength[window] = 0;
        } else if (CreditSequence.window(consumed, granted) <= CREDITS / 2) {
            granted = CreditSequence.grantLimit(consumed, CREDITS);
            message(ImmediateData.sgl(granted));
        }
        return length;
    }

    /**
     * Whether a window holds no region: the engine filled the last one advertised there.
     */
    boolean isFree(final int window) {
        return regionLength[window] == 0;
    }

    /**
     * Check every byte of the ring: data in the part of each window's region already received, guard outside the
     * advertised regions. The rest of a region may already hold data whose completion was not polled yet.
     */
    void checkRing() {
        final MemorySegment memory = ring.segment();
        for (int window = 0; window < 2; window++) {
            final long base = GUARD + (long) window * (WINDOW + GUARD);
            final long regionStart = base + regionOffset[window];
            checkRange(memory, base - GUARD, regionStart, false);
            checkRange(memory, regionStart, regionStart + regionFilled[window], true);
            checkRange(memory, regionStart + regionLength[window], base + WINDOW, false);
        }
        checkRange(memory, RING_LENGTH - GUARD, RING_LENGTH, false);
    }

    private void checkRange(final MemorySegment memory, final long from, final long to, final boolean data) {
        for (long i = from; i < to; i++) {
            final byte value = memory.get(ValueLayout.JAVA_BYTE, i);
            if (data == (value == GUARD_BYTE)) {
                throw new AssertionError("ring byte " + i + " is 0x" + Integer.toHexString(value & 0xFF) + " but "
                    + (data ? "data" : "the guard") + " was expected there; regions " + describeRegions());
            }
        }
    }

    private String describeRegions() {
        return "window0=[" + regionOffset[0] + "+" + regionFilled[0] + "/" + regionLength[0] + "], window1=["
            + regionOffset[1] + "+" + regionFilled[1] + "/" + regionLength[1] + "]";
    }

    private long windowAddress(final int window) {
        return ring.address() + GUARD + (long) window * (WINDOW + GUARD);
    }

    /**
     * The byte at a position of a test stream: never {@link #GUARD_BYTE}, so data and guard cannot be mistaken.
     */
    static byte streamByte(final long position) {
        final byte value = (byte) (position * 31 + (position >>> 9) * 7 + 1);
        return value == GUARD_BYTE ? 0 : value;
    }

    // ----- completions -----

    /**
     * Poll until a condition holds, failing after a timeout.
     */
    void await(final BooleanSupplier condition, final String what) {
        final long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (true) {
            while (queue.poll(handler, 32) > 0) {
                // each completion was handled by onCompletion
            }
            if (condition.getAsBoolean()) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out waiting for " + what + ": " + this);
            }
            Thread.onSpinWait();
        }
    }

    private void onCompletion(final WorkCompletion completion) {
        if (completion.workRequestId() == SEND_ID) {
            outstandingSends--;
            if (completion.status() != CompletionStatus.SUCCESS) {
                sendFailure = completion.status();
            }
            return;
        }
        if (completion.status() != CompletionStatus.SUCCESS) {
            return;
        }
        final int immediate = messageMode ? sentMessage(completion) : immediateMessage(completion);
        if (ImmediateData.op(immediate) == ImmediateData.SGL) {
            limit = ImmediateData.creditLimit(immediate);
            adoptSlots();
        } else {
            inbound.add(immediate);
        }
        postReceive(completion.workRequestId());
    }

    private static int immediateMessage(final WorkCompletion completion) {
        if (!completion.hasImmediate()) {
            throw new AssertionError("the engine sent a message without immediate data");
        }
        return completion.immediate();
    }

    private int sentMessage(final WorkCompletion completion) {
        if (completion.hasImmediate() || completion.byteLength() != MessageSendDescriptor.LENGTH) {
            throw new AssertionError("in message mode the engine sent a message that is no 4-byte SEND: "
                + completion.opcode() + ", byteLength=" + completion.byteLength() + ", hasImmediate="
                + completion.hasImmediate());
        }
        final long offset = MessageSendDescriptor.bufferOffset((int) completion.workRequestId());
        final byte[] bytes = messageBuffers.segment().asSlice(offset, MessageSendDescriptor.LENGTH)
            .toArray(ValueLayout.JAVA_BYTE);
        inboundBytes.add(bytes);
        return MessageSendDescriptor.message(new UnsafeBuffer(bytes), 0, engine.byteOrder());
    }

    private void postReceive(final long id) {
        receive.reset().id(id);
        if (messageMode) {
            receive.sge(0, messageBuffers.address() + MessageSendDescriptor.bufferOffset((int) id),
                MessageSendDescriptor.LENGTH, messageBuffers.localKey());
        }
        pair.postReceive(receive);
    }

    private void adoptSlots() {
        for (int i = 0; i < TARGET_ENTRIES; i++) {
            final int offset = SgeDescriptor.entryOffset(i);
            final int length = targetView.getInt(offset + SgeDescriptor.LENGTH_OFFSET, ByteOrder.nativeOrder());
            if (slotLength[i] == 0 && length != 0) {
                slotAddress[i] = targetView.getLong(offset + SgeDescriptor.ADDRESS_OFFSET, ByteOrder.nativeOrder());
                slotKey[i] = targetView.getInt(offset + SgeDescriptor.KEY_OFFSET, ByteOrder.nativeOrder());
                slotLength[i] = length;
                targetView.putInt(offset + SgeDescriptor.LENGTH_OFFSET, 0, ByteOrder.nativeOrder());
            }
        }
    }

    @Override
    public void close() {
        if (attempt != null) {
            attempt.close();
        }
        if (cmListener != null) {
            cmListener.close();
        }
        if (pair != null) {
            pair.close();
        }
        for (final MemoryRegion region : new MemoryRegion[] {messageBuffers, stage, target, ring}) {
            if (region != null) {
                region.close();
            }
        }
        if (queue != null) {
            queue.close();
        }
        if (domain != null) {
            domain.close();
        }
    }

    @Override
    public String toString() {
        return "HostilePeer{qp=" + (pair == null ? "none" : pair.number() + "/" + pair.state()) + ", sent=" + sent
            + ", limit=" + limit + ", slot=" + slot + ", slotLength=" + slotLength[0] + "/" + slotLength[1]
            + ", consumed=" + consumed + ", granted=" + granted + ", inbound=" + inbound.size() + ", "
            + describeRegions() + ", sendFailure=" + sendFailure + '}';
    }
}
