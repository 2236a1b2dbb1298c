package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkCompletion;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.agrona.BufferUtil;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * The sending side of one connection: everything the writer owns. Each write is cut into chunks that never cross
 * the peer's current target region, copied into the send ring (or posted inline when small, or sent straight from the
 * caller's buffer when it is registered or the device reads any local memory) and posted as DATA messages, gated by
 * message credits ({@code sendSequence != sendLimit}), free send slots and ring space. Control messages (credit
 * grants, SHUTDOWN, DISCONNECT, keepalive) take the control slots, {@code controlWindow} of the send queue, so data
 * never starves them.
 *
 * <p>Locking: {@code sendLock} guards every field, every post on the queue pair's send queue and every poll of the
 * send completion queue. The writer holds it for a write. The receiver takes it after its own lock, and only to post
 * a credit grant ({@link #grant}), which is rare (per half ring or half the credits consumed): the one place where a
 * reader may wait for a writer. The sender never takes the receive lock.
 *
 * <p>The receiver hands over what the peer announced in SGL messages through {@link ConnectionState} (a credit
 * limit and a count of announcements); this side checks and adopts them under its lock: the limit against its own
 * sequence, new regions from the target SGL memory ({@link TargetRegions}). The receiver asks for that at once
 * ({@link #requestService()}) without waiting: if the lock is free it serves the request itself, else the holder
 * serves it before it lets go; a writer short of credits or regions also looks for announcements itself.
 */
final class SendPath {
    private static final int SPINS_BEFORE_YIELD = 1000;

    private final ReentrantLock sendLock = new ReentrantLock();
    private final ConnectionState state;
    private final CompletionHandler completionHandler = this::onCompletion;
    private final TargetRegions targets;
    private final ControlWindow control;
    private final int controlWindow;
    private final int maxTransfer;
    private final int startTransfer;
    private final int sendLowWater;
    private final boolean unsignaledSends;
    /**
     * How long a write waits for the sends it posted from the caller's buffer: they complete once the peer's
     * adapter has the bytes, which a live peer's transport retries bound well within this; a peer that granted
     * credits without posting receives for them (RNR retries are infinite) is cut off instead of hanging the write.
     */
    private final long sourceReleaseTimeoutNanos;
    private volatile boolean serviceRequested;
    private volatile boolean waitingForPeer;

    // from attach() until detach()
    private DeviceContext context;
    private QueuePair queuePair;
    private CompletionQueue completionQueue;
    private MessageProxy proxy;
    private ByteBuffer sendView;
    private long sendAddress;
    private int sendKey;
    private int sendBufferSize;
    private int inlineSize;
    private MemoryRegion processMemory;
    private int slotsPerMessage = 1;
    /** Whether every DATA message is signalled: in message mode, or with unsignalled sends turned off. */
    private boolean signalAll = true;
    private boolean synchronousTransfer;
    private UnsafeBuffer targetSgl;
    private PeerConnectionData peer;

    private int sendSequence;
    private int sendLimit;
    private int sendSlots;
    // a write polls the send completion queue before it starts only below this many slots (or half the ring)
    private int pollSlotsBelow;
    private int sendBufferFree;
    private int sendBufferHead;
    private int zeroCopyPending;
    private long zeroCopyBytes;
    private long directBytes;
    // statistics: plain fields under the lock, read by statistics() with the lock held
    private long bytesSent;
    private long messagesSent;
    /** Send completions polled, for diagnostics. */
    private long sendCompletions;
    private long creditStalls;
    private long bufferStalls;
    private long completionErrors;
    // the stall under way: since when (a write ended with bytes left), and whether for the peer's credits
    private final long stallEventNanos;
    private StallObserver stallObserver;
    private boolean stalled;
    private boolean stalledForPeer;
    private long stalledSince;
    private int seenAnnouncements;
    private CompletionStatus lastStatus;

    SendPath(final ConnectionState state, final StreamConfiguration configuration) {
        this.state = state;
        this.controlWindow = configuration.controlWindow();
        this.maxTransfer = configuration.maxTransferLength();
        this.startTransfer = configuration.transferStartLength();
        this.sendLowWater = configuration.sendLowWaterMark();
        this.unsignaledSends = configuration.unsignaledSends();
        this.sourceReleaseTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(configuration.sendCompletionTimeoutMillis());
        this.stallEventNanos = TimeUnit.MILLISECONDS.toNanos(configuration.stallEventMillis());
        this.targets = new TargetRegions(configuration.targetSglEntries(),
            configuration.peerMaxDataBufferLength());
        this.control = new ControlWindow(state, controlWindow);
    }

    // ----- life cycle: attach on the CM thread, start when established, detach under both locks -----

    void attach(final ConnectionResources resources) {
        context = resources.context;
        queuePair = resources.queuePair;
        completionQueue = resources.sendCompletionQueue;
        proxy = new MessageProxy(resources);
        sendView = resources.sendMemory.asByteBuffer();
        sendAddress = resources.sendRegion.address();
        sendKey = resources.sendRegion.localKey();
        sendBufferSize = resources.sendBufferSize;
        inlineSize = resources.inlineSize;
        processMemory = context.processMemory();
        slotsPerMessage = resources.slotsPerMessage();
        signalAll = resources.messageMode || !unsignaledSends;
        synchronousTransfer = resources.synchronousTransfer;
        targetSgl = new UnsafeBuffer(resources.targetRegion.segment().asByteBuffer());
        control.attach(proxy, slotsPerMessage);
    }

    /**
     * XRC mode, before {@link #start}: the peer's XRC shared receive queue, which every message names.
     */
    void xrcPeer(final int sharedReceiveQueue) {
        proxy.remoteSharedReceiveQueue(sharedReceiveQueue);
    }

    /**
     * Established: the peer's credits are the first limit, its first region our target entry 0.
     */
    void start(final PeerConnectionData connectionData, final int sendQueueSize) {
        peer = connectionData;
        proxy.peer(connectionData);
        sendLimit = connectionData.credits() & CreditSequence.MASK;
        sendSlots = sendQueueSize - controlWindow;
        sendBufferFree = sendBufferSize;
        pollSlotsBelow = Math.max(sendSlots / 2, slotsPerMessage);
        targets.start(targetSgl, connectionData);
    }

    void detach() {
        completionQueue = null;
        queuePair = null;
    }

    // ----- locking -----

    void lock() {
        sendLock.lock();
    }

    boolean tryLock() {
        return sendLock.tryLock();
    }

    /**
     * Let go, then serve a request left while the lock was held (unless an outer frame of this thread holds it and
     * serves it when it lets go).
     */
    void unlock() {
        sendLock.unlock();
        if (!sendLock.isHeldByCurrentThread()) {
            serveRequests();
        }
    }

    /**
     * Have the announcements adopted and held-back messages posted: now if the lock is free, else by its holder
     * before it lets go. Called by the receiver, with or without its own lock; never blocks.
     */
    void requestService() {
        serviceRequested = true;
        if (!sendLock.isHeldByCurrentThread()) {
            serveRequests();
        }
    }

    /**
     * Poll the send completion queue now, waiting for the send lock if another thread holds it (its holders do not
     * block while holding it): for the receiver, which holds its own lock, once a flush says the connection failed
     * and the send queue may say why.
     */
    void serviceNow() {
        if (sendLock.isHeldByCurrentThread()) {
            requestService();
            return;
        }
        lock();
        try {
            serviceRequested = false;
            poll();
        } finally {
            unlock();
        }
    }

    private void serveRequests() {
        while (serviceRequested && sendLock.tryLock()) {
            try {
                serviceRequested = false;
                poll();
            } finally {
                sendLock.unlock();
            }
        }
    }

    // ----- completions, announcements and held-back messages (lock held) -----

    /**
     * Poll the send completion queue, adopt what the receiver announced, post held-back control messages.
     */
    private void poll() {
        if (completionQueue == null) {
            return;
        }
        reap();
        adoptAnnouncements();
        control.flush();
    }

    /**
     * Poll the send completion queue until it is empty (lock held, queue attached).
     *
     * @return whether any completion was handled.
     */
    private boolean reap() {
        boolean reaped = false;
        while (completionQueue.poll(completionHandler, 32) > 0) {
            // each completion was handled by onCompletion
            reaped = true;
        }
        return reaped;
    }

    private void onCompletion(final WorkCompletion completion) {
        lastStatus = completion.status();
        sendCompletions++;
        final long id = completion.workRequestId();
        if ((id & MessageProxy.COVER) != 0) {
            // the unsignalled DATA messages posted before this request completed with it
            final long covered = proxy.takeCover();
            sendSlots += (int) (covered >>> 32);
            sendBufferFree += (int) covered;
        }
        final int value = (int) id;
        if ((id & MessageProxy.UNSIGNALED) == 0) {
            // an unsignalled request completes only when flushed: what it holds comes back with its cover
            switch (MessageProxy.kind(id)) {
                case MessageProxy.KIND_DATA -> {
                    sendSlots++;
                    sendBufferFree += value;
                }
                case MessageProxy.KIND_DATA_INLINE -> sendSlots++;
                case MessageProxy.KIND_DATA_ZERO_COPY -> {
                    sendSlots++;
                    zeroCopyPending--;
                }
                case MessageProxy.KIND_CONTROL -> control.onCompleted(value);
                default -> {
                    // a completion we never asked for
                }
            }
        }
        if (completion.status() != CompletionStatus.SUCCESS) {
            if (completion.status() != CompletionStatus.WORK_REQUEST_FLUSHED) {
                completionErrors++;
            }
            // the peer may have left after a DISCONNECT still queued on the receive side: that side decides
            if (state.failureIsNews() && !state.hasDeferredFailure()) {
                state.deferFailure("send completed with " + completion.status().description());
            }
        }
    }

    /**
     * Before a write: what the receiver announced and held-back control messages always; the send completions only
     * once the slots or the ring ran below half, or a control message waits for a slot (or the write finds itself
     * short, {@link #replenish()}). As rsockets, which polls when it runs short, a writer then reaps completions in
     * batches instead of one or two polls per message: on a device whose poll is a call into the provider, that call
     * was a good part of a small message's cost.
     */
    private void prepareWrite() {
        if (completionQueue == null) {
            return;
        }
        if (sendSlots < pollSlotsBelow || sendBufferFree < sendBufferSize / 2 || control.wantsSlots()) {
            reap();
        }
        adoptAnnouncements();
        control.flush();
    }

    /**
     * A write ran short of credits, regions, slots or ring space: reap send completions and adopt announcements.
     *
     * @return whether anything came back.
     */
    private boolean replenish() {
        if (completionQueue == null) {
            return false;
        }
        final boolean reaped = reap();
        return adoptAnnouncements() || reaped;
    }

    /**
     * Check and adopt the credit limit and target regions the peer announced since we last looked. A violation fails
     * the connection with a {@link ProtocolException} as cause, as it failed when the receiver checked it inline.
     *
     * @return whether anything new was adopted.
     */
    private boolean adoptAnnouncements() {
        final int count = state.announcements;
        if (count == seenAnnouncements || peer == null || state.error() != null) {
            return false;
        }
        seenAnnouncements = count;
        try {
            sendLimit = CreditSequence.checkCreditLimit(sendSequence, sendLimit, state.announcedLimit,
                peer.creditWindow());
            targets.adopt();
            return true;
        } catch (final ProtocolException ex) {
            state.fail(ex, queuePair);
            return false;
        }
    }

    // ----- credit grants, for the receiver -----

    /**
     * Post a credit grant now, or keep it until a control slot frees up; whoever holds this lock next posts it (the
     * writer, the next grant attempt, a readiness check). Called by the receiver with its lock held. A grant that
     * waits takes in a later one: the newer limit, and a region if the waiting one carries none.
     *
     * @param limit      the new credit limit, a u16.
     * @param ringOffset where the ring half to advertise starts, or {@link ControlWindow#NO_REGION} for credits only.
     * @param entry      the peer's target SGL entry for the region.
     * @return false if a region is already waiting: this one was not taken, the receiver grants again later.
     */
    boolean grant(final int limit, final int ringOffset, final int entry) {
        lock();
        try {
            if (completionQueue == null) {
                return true;
            }
            if (control.wantsSlots()) {
                poll();
            }
            return control.grant(limit, ringOffset, entry);
        } finally {
            unlock();
        }
    }

    // ----- writing -----

    long write(final ByteBuffer src) throws IOException {
        lock();
        try {
            ensureWritable();
            prepareWrite();
            ensureWritable();
            final long count = put(src);
            countStall(src.hasRemaining(), count);
            awaitZeroCopySent();
            return count;
        } finally {
            noteWaiting();
            unlock();
        }
    }

    long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException {
        lock();
        try {
            ensureWritable();
            prepareWrite();
            ensureWritable();
            long total = 0;
            boolean left = false;
            for (int i = offset; i < offset + length && !left; i++) {
                total += put(srcs[i]);
                left = srcs[i].hasRemaining();
            }
            countStall(left, total);
            awaitZeroCopySent();
            return total;
        } finally {
            noteWaiting();
            unlock();
        }
    }

    /**
     * Count a write that ended with bytes left: for want of what the peer grants, or of our own send resources. A
     * stall lasts from the first such write to the next write that sent something; one that lasted at least
     * {@code rdmachannel.stream.stallEventMillis} goes to the observer (a clock read when a stall begins and one
     * when it ends, nothing else on the way).
     */
    private void countStall(final boolean bytesLeft, final long sent) {
        if (stalled && sent > 0) {
            stalled = false;
            final long nanos = System.nanoTime() - stalledSince;
            if (nanos >= stallEventNanos && stallObserver != null) {
                stallObserver.stalled(stalledForPeer, nanos);
            }
        }
        if (bytesLeft && state.error() == null) {
            final boolean forPeer = shortOfPeerLocked();
            if (forPeer) {
                creditStalls++;
            } else {
                bufferStalls++;
            }
            if (!stalled) {
                stalled = true;
                stalledForPeer = forPeer;
                stalledSince = System.nanoTime();
            }
        }
    }

    /**
     * Who hears of long write stalls; set once before the connection is used.
     */
    void stallObserver(final StallObserver observer) {
        stallObserver = observer;
    }

    /**
     * Told of a write stall that lasted at least the configured threshold, with the send lock held.
     */
    @FunctionalInterface
    interface StallObserver {
        /**
         * @param forPeer whether the writes waited for the peer's credits (else for our own send resources).
         * @param nanos   how long, from the first write that stalled to the next that sent something.
         */
        void stalled(boolean forPeer, long nanos);
    }

    /**
     * Whether the last write found nothing more it could send for want of something only the peer gives (credits,
     * a target region, the first message): the next write has the receive side polled first.
     */
    boolean waitingForPeer() {
        return waitingForPeer;
    }

    private void noteWaiting() {
        final boolean waiting = shortOfPeerLocked();
        if (waiting != waitingForPeer) {
            waitingForPeer = waiting;
        }
    }

    private boolean shortOfPeerLocked() {
        return peer == null || !CreditSequence.hasCredit(sendSequence, sendLimit) || targets.remaining() == 0
            || state.awaitingFirstMessage;
    }

    /**
     * Whether sending now waits for something only the peer gives (credits, a target region, the first message),
     * which arrives on the receive completion queue; otherwise for its own sends to complete (slots, ring space).
     */
    boolean shortOfPeer() {
        lock();
        try {
            return shortOfPeerLocked();
        } finally {
            unlock();
        }
    }

    private void ensureWritable() throws IOException {
        state.ensureEstablished();
        if (state.outputShutdown) {
            throw new ClosedChannelException();
        }
        final IOException error = state.error();
        if (error != null) {
            throw error;
        }
        if (state.peerDisconnected) {
            // what the JDK's channels throw for EPIPE: a plain IOException
            throw new IOException("Broken pipe");
        }
    }

    private boolean canSend() {
        return state.connected && state.error() == null && !state.peerDisconnected && !state.outputShutdown
            && sendSlots >= slotsPerMessage && CreditSequence.hasCredit(sendSequence, sendLimit)
            && targets.remaining() != 0 && !state.awaitingFirstMessage;
    }

    /**
     * Post as much of {@code src} as credits, slots, ring space and the target region allow. Bytes of a direct buffer
     * are sent straight from it when they lie in a {@link io.rdmachannel.channel.RegisteredBuffers registered buffer}
     * or the device reads any local memory ({@link DeviceContext#processMemory()}): no ring space is needed, the
     * caller waits for those sends before it returns. Small chunks are posted inline, from such a buffer itself (an
     * inline post copies before it returns), else from the inline stage; never from other direct memory, which may
     * be a file mapping that faults in the provider's native code. Other bytes are copied into the send ring.
     * Out of credits, regions, slots or ring space, it reaps send completions and looks once more for what the
     * receiver announced.
     */
    private long put(final ByteBuffer src) {
        long total = 0;
        final boolean direct = src.isDirect();
        final long base = direct ? BufferUtil.address(src) : 0;
        MemoryRegion source = direct && src.remaining() > inlineSize
            ? context.registeredBuffer(base + src.position(), src.remaining()) : null;
        if (source == null && direct) {
            source = processMemory;
        }
        // rsockets starts small so the copy into the ring overlaps the adapter's transfer of the chunk before; with
        // nothing to copy, or no adapter working alongside, whole chunks are cheaper
        int transfer = source != null || synchronousTransfer ? maxTransfer : startTransfer;
        final int lowWater = Math.min(sendLowWater, sendBufferSize);
        while (src.hasRemaining() && (canSend() || replenish() && canSend())) {
            int chunk = Math.min(Math.min(src.remaining(), transfer), targets.remaining());
            if (chunk <= inlineSize) {
                long from = base + src.position();
                if (source == null) {
                    sendView.put(sendBufferSize, src, src.position(), chunk);
                    from = proxy.stageAddress();
                }
                dataRequest(MessageProxy.KIND_DATA_INLINE, chunk, SendFlags.INLINE).sge(0, from, chunk, sendKey);
                postData(chunk);
            } else if (source != null) {
                dataRequest(MessageProxy.KIND_DATA_ZERO_COPY, chunk, 0)
                    .sge(0, base + src.position(), chunk, source.localKey());
                zeroCopyPending++;
                if (source == processMemory) {
                    directBytes += chunk;
                } else {
                    zeroCopyBytes += chunk;
                }
                postData(chunk);
            } else {
                if (sendBufferFree < lowWater && (!replenish() || sendBufferFree < lowWater)) {
                    break;
                }
                chunk = Math.min(chunk, sendBufferFree);
                final int first = Math.min(chunk, sendBufferSize - sendBufferHead);
                sendView.put(sendBufferHead, src, src.position(), first);
                final SendWorkRequest request = dataRequest(MessageProxy.KIND_DATA, chunk, 0)
                    .sge(0, sendAddress + sendBufferHead, first, sendKey);
                if (chunk > first) {
                    sendView.put(0, src, src.position() + first, chunk - first);
                    request.sge(1, sendAddress, chunk - first, sendKey);
                }
                postData(chunk);
                sendBufferHead = (sendBufferHead + chunk) % sendBufferSize;
                sendBufferFree -= chunk;
            }
            src.position(src.position() + chunk);
            total += chunk;
            transfer = Math.min(transfer << 1, maxTransfer);
        }
        return total;
    }

    /**
     * The request of a DATA message of {@code length} bytes into the current target region; the caller adds the
     * payload's entries.
     */
    private SendWorkRequest dataRequest(final int kind, final int length, final int flags) {
        return proxy.request().id((long) kind << 32 | length).flags(signal(kind, length) | flags)
            .remote(targets.address(), targets.key());
    }

    /**
     * Whether a DATA message is signalled: always in message mode and from the caller's buffer (the write waits for
     * those); otherwise only once it leaves the slots or the ring below the half at which a writer reaps, so that
     * whenever a writer reaps, or runs short and waits, the last message it posted is signalled and its completion
     * brings back what the unsignalled ones before it hold ({@link MessageProxy#takeCover()}).
     */
    private int signal(final int kind, final int length) {
        if (signalAll || kind == MessageProxy.KIND_DATA_ZERO_COPY
            || sendSlots - slotsPerMessage < pollSlotsBelow
            || sendBufferFree - (kind == MessageProxy.KIND_DATA ? length : 0) < sendBufferSize / 2) {
            return SendFlags.SIGNALED;
        }
        return 0;
    }

    /**
     * Post the DATA message {@link #dataRequest} prepared. The sequence and the target region are accounted before
     * the post, as rsockets does.
     */
    private void postData(final int length) {
        bytesSent += length;
        messagesSent++;
        sendSequence = CreditSequence.next(sendSequence);
        try {
            targets.consume(length);
        } catch (final ProtocolException ex) {
            state.fail(ex, queuePair);
            return;
        }
        sendSlots -= proxy.post(ImmediateData.data(length), (long) MessageProxy.KIND_DATA_INLINE << 32);
    }

    /**
     * Poll until every send posted straight from the caller's buffer has completed, so the caller may reuse the
     * buffer when the write returns. A send completes once the peer's adapter has the bytes (or the queue pair
     * failed and flushed it); the peer's threads play no part, so this ends within the transfer time, at once on a
     * device that transfers while posting. Past {@code rdmachannel.stream.sendCompletionTimeoutMillis} the
     * connection fails: its queue pair goes to ERROR, which ends every transfer, and the write reports the failure.
     */
    private void awaitZeroCopySent() throws IOException {
        long deadline = 0;
        int idle = 0;
        while (zeroCopyPending > 0 && completionQueue != null) {
            if (completionQueue.poll(completionHandler, 32) > 0) {
                continue;
            }
            if (++idle < SPINS_BEFORE_YIELD) {
                Thread.onSpinWait();
                continue;
            }
            final long now = System.nanoTime();
            if (deadline == 0) {
                deadline = now + sourceReleaseTimeoutNanos;
            } else if (now - deadline > 0) {
                state.fail(new IOException(zeroCopyPending + " sends from the caller's buffer did not complete "
                    + "within " + TimeUnit.NANOSECONDS.toMillis(sourceReleaseTimeoutNanos)
                    + " ms; the peer does not take what it granted credits for"), queuePair);
                throw state.error();
            }
            Thread.yield();
        }
    }

    // ----- readiness, keepalive, shutdown and close -----

    /**
     * Poll and report {@link StreamReadiness#WRITE} when a write would take bytes or fail.
     */
    int readiness() {
        lock();
        try {
            poll();
            return canSend() || state.outputShutdown || state.peerDisconnected || state.error() != null
                ? StreamReadiness.WRITE : 0;
        } finally {
            unlock();
        }
    }

    /**
     * Send the keepalive probe ({@link MessageProxy#postKeepAlive()}) if a control slot is free; a failed
     * completion fails the connection ("Connection reset"). Skipped while a writer holds the lock (the connection is
     * in use; the next period probes): never blocks, so one stuck connection cannot hold up the timer thread of all.
     */
    void keepAlive() {
        if (!sendLock.tryLock()) {
            return;
        }
        try {
            if (completionQueue != null) {
                control.keepAlive();
                poll();
            }
        } finally {
            unlock();
        }
    }

    /**
     * End the output: a SHUTDOWN, or a DISCONNECT if the input is shut down too (rshutdown's rule), posted once a
     * control slot is free and the first message arrived.
     */
    void shutdownOutput() throws IOException {
        lock();
        try {
            state.ensureEstablished();
            if (state.outputShutdown) {
                return;
            }
            state.outputShutdown = true;
            if (state.connected && state.error() == null && !state.peerDisconnected) {
                if (state.inputShutdown) {
                    control.halfCloseDisconnect();
                } else {
                    control.shutdown();
                }
                poll();
            }
        } finally {
            unlock();
        }
    }

    /**
     * The input was shut down (the receiver holds its lock): with the output shut down too, that is a DISCONNECT.
     */
    void onInputShutdown() {
        lock();
        try {
            if (state.outputShutdown && state.connected && state.error() == null && !state.peerDisconnected) {
                control.halfCloseDisconnect();
            }
            poll();
        } finally {
            unlock();
        }
    }

    /**
     * Start closing: queue a DISCONNECT unless the connection is over anyway, and stop granting and reposting.
     */
    void startClose() {
        lock();
        try {
            if (state.connected && state.error() == null && !state.peerDisconnected && !state.closing) {
                control.disconnect();
                poll();
            }
            state.closing = true;
        } finally {
            unlock();
        }
    }

    /**
     * One round of waiting for the DISCONNECT this side queued: poll, post it if it is still held back.
     *
     * @return false once it completed, or will not (no DISCONNECT queued, failed, released).
     */
    boolean disconnectUnderWay() {
        lock();
        try {
            return pollDisconnect();
        } finally {
            unlock();
        }
    }

    /**
     * {@link #disconnectUnderWay()} without waiting for the lock: true (still under way, look again later) while
     * another thread holds it.
     */
    boolean tryDisconnectUnderWay() {
        if (!sendLock.tryLock()) {
            return true;
        }
        try {
            return pollDisconnect() && !queuePairEnded();
        } finally {
            unlock();
        }
    }

    /**
     * Whether the queue pair left the states that deliver (the peer left, the connection manager disconnected it, the
     * device failed it): a DISCONNECT still held back can never go then (message mode's passive side before the
     * peer's first message, with nothing sent before it), and one posted may never complete (siw leaves a
     * disconnected queue pair in RESET without flushing it). A query of the device on the native provider: the
     * lingering close asks, not the closing thread's short spin.
     */
    private boolean queuePairEnded() {
        final QueuePairState current = queuePair.state();
        return current == QueuePairState.ERROR || current == QueuePairState.RESET;
    }

    private boolean pollDisconnect() {
        if (completionQueue == null || !control.disconnectUnderWay()) {
            return false;
        }
        poll();
        return control.disconnectUnderWay();
    }

    // ----- information -----

    /**
     * The send lock itself, for tests that hold it to show the reader does not need it.
     */
    ReentrantLock sendLock() {
        return sendLock;
    }

    long zeroCopyBytes() {
        lock();
        try {
            return zeroCopyBytes;
        } finally {
            unlock();
        }
    }

    long directBytes() {
        lock();
        try {
            return directBytes;
        } finally {
            unlock();
        }
    }

    long keepAlivesSent() {
        lock();
        try {
            return control.keepAlivesSent();
        } finally {
            unlock();
        }
    }

    /**
     * This side's part of the statistics, the receiver's and the waits added by the caller, which holds the lock.
     */
    ConnectionStatistics statistics(final long bytesReceived, final long messagesReceived, final long receiveErrors,
        final long spinsCaught, final long directWaits, final long readinessArms, final long readinessWakeups) {
        return new ConnectionStatistics(bytesSent, messagesSent, zeroCopyBytes, directBytes, bytesReceived,
            messagesReceived, creditStalls, bufferStalls, spinsCaught, directWaits, control.keepAlivesSent(),
            completionErrors + receiveErrors, readinessArms, readinessWakeups);
    }

    /**
     * The sender's positions, credits and slots; the caller holds the lock.
     */
    void describe(final StringBuilder out) {
        out.append("sendSequence=").append(sendSequence).append(", sendLimit=").append(sendLimit)
            .append(", sendSlots=").append(sendSlots).append(", sendCompletions=").append(sendCompletions)
            .append(", sendBufferFree=").append(sendBufferFree)
            .append(", zeroCopyBytes=").append(zeroCopyBytes).append(", directBytes=").append(directBytes)
            .append(", ");
        targets.describe(out);
        out.append(", ");
        control.describe(out);
    }

    CompletionStatus lastStatus() {
        return lastStatus;
    }
}
