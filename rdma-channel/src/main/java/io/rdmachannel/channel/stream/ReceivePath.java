package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.CompletionHandler;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.WorkCompletion;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * The receiving side of one connection: DATA completions queue their lengths, reads copy from the receive ring in
 * order, and consumed messages and bytes are granted back with SGL messages (a new ring half, or credits only).
 * Every message the peer sends is checked here: a violation fails the connection with a {@link ProtocolException},
 * and nothing the peer sends after it is trusted. The peer's SGL messages are handed to the sender
 * ({@link ConnectionState#announce}), which checks and adopts them against its own sequence.
 *
 * <p>Locking: {@code receiveLock} guards every field, every post on the receive queue and every poll of the receive
 * completion queue. The reader holds it for a read, including the copy out of the ring; it takes the send lock
 * after its own only to post a credit grant ({@link SendPath#grant}), never the other way round. A writer that
 * needs the peer's announcements polls here only if the lock is free ({@link #pollIfIdle()}); otherwise the holder
 * polls once more before it lets go.
 */
final class ReceivePath {
    private final ReentrantLock receiveLock = new ReentrantLock();
    private final ConnectionState state;
    private final SendPath send;
    private final CompletionHandler completionHandler = this::onCompletion;
    private final int receiveQueueSize;
    private final int receiveBufferSize;
    private final int half;
    private final int[] messages;
    private volatile boolean pollRequested;

    // from attach() until detach()
    private QueuePair queuePair;
    private CompletionQueue completionQueue;
    private ReceiveWorkRequest receive;
    private ByteBuffer receiveView;
    private boolean messageMode;
    private MemoryRegion messageRegion;
    private UnsafeBuffer messageView;
    private PeerConnectionData peer;
    // SRQ mode: the shared receives, the connection's account there, the current credit window
    private ConnectionResources resources;
    private SharedReceivePool sharedPool;
    /** XRC mode: the connection's own XRC shared receive queue, where its receives go; null otherwise. */
    private SharedReceiveQueue xrcQueue;
    private int minimumCredits;
    private int spareReceives;
    private int creditWindow;

    private int receiveSequence;
    private int receivedMessages;
    private int grantedLimit;
    private int receiveThreshold;
    private long receiveBufferFree;
    private int receiveFreeOffset;
    private int receiveOffset;
    private long advertisedBytes;
    private long receivedBytes;
    // statistics: plain fields under the lock
    private long messagesReceived;
    private long completionErrors;
    private int messageHead;
    private int messageCount;
    private int remoteSge;
    private CompletionStatus lastStatus;

    ReceivePath(final ConnectionState state, final SendPath send, final StreamOptions options) {
        this.state = state;
        this.send = send;
        this.receiveQueueSize = options.receiveQueueSize();
        this.receiveBufferSize = options.receiveBufferSize();
        this.half = receiveBufferSize / 2;
        this.messages = new int[receiveQueueSize + 1];
    }

    // ----- life cycle: attach on the CM thread, start when established, detach under both locks -----

    /**
     * Take the resources and post every receive: the credits advertised and the spare ones.
     */
    void attach(final ConnectionResources resources) {
        queuePair = resources.queuePair;
        completionQueue = resources.receiveCompletionQueue;
        receive = resources.receiveRequest;
        receiveView = resources.receiveRegion.segment().asByteBuffer();
        messageMode = resources.messageMode;
        this.resources = resources;
        sharedPool = resources.sharedPool;
        xrcQueue = resources.xrcQueue;
        minimumCredits = resources.minimumCredits;
        spareReceives = resources.spareReceives;
        if (messageMode) {
            messageRegion = sharedPool != null ? sharedPool.messageRegion() : resources.messageRegion;
            messageView = new UnsafeBuffer(messageRegion.segment().asByteBuffer());
        }
        if (sharedPool == null) {
            if (messageMode || xrcQueue != null) {
                for (int i = 0; i < resources.receiveDepth(); i++) {
                    postReceive(i);
                }
            } else {
                // all alike but for the id: in one step where the provider can
                queuePair.postReceives(receive.reset(), 0, resources.receiveDepth());
            }
            resources.ownReceivesPosted = resources.receiveDepth();
            resources.context.ownReceivesPosted(resources.ownReceivesPosted);
        }
    }

    /**
     * Established: the first half of the ring went out in the connection data; grant the second at once (unless
     * the first message is awaited).
     */
    void start(final PeerConnectionData connectionData) {
        peer = connectionData;
        creditWindow = sharedPool != null ? minimumCredits : receiveQueueSize;
        receiveThreshold = creditWindow / 2;
        grantedLimit = creditWindow & CreditSequence.MASK;
        receiveBufferFree = half;
        receiveFreeOffset = half;
        advertisedBytes = half;
        // the peer filled its entry 0 from our connection data; a peer with one entry gets every SGE there
        remoteSge = 1 % connectionData.targetSglEntries();
        giveCredits();
    }

    /**
     * SRQ mode, before the queue pair goes: stop it taking shared receives, then post again every one a message took
     * that was not polled yet. A receive consumed but never polled would be lost to the shared queue while its
     * account still counts it: the credits of other connections would no longer be backed. Both locks held.
     */
    void drainShared() {
        if (sharedPool == null || queuePair == null || completionQueue == null) {
            return;
        }
        try {
            queuePair.modify(QueuePairState.ERROR, null);
        } catch (final IOException | RuntimeException ex) {
            // closed or failed already: it takes no receive either way
        }
        try {
            while (completionQueue.poll(repostOnly, 32) > 0) {
                // each completion was reposted by repostOnly
            }
        } catch (final RuntimeException ex) {
            // the completion queue failed: what it held is lost to the shared queue, and only that
        }
    }

    private final CompletionHandler repostOnly = completion -> {
        if (completion.status() == CompletionStatus.SUCCESS) {
            sharedPool.repost(receive, completion.workRequestId());
        }
    };

    void detach() {
        completionQueue = null;
        queuePair = null;
        xrcQueue = null;
    }

    // ----- locking -----

    void lock() {
        receiveLock.lock();
    }

    boolean tryLock() {
        return receiveLock.tryLock();
    }

    /**
     * Let go, then poll for a writer that found the lock taken (unless an outer frame of this thread holds it).
     */
    void unlock() {
        receiveLock.unlock();
        if (!receiveLock.isHeldByCurrentThread()) {
            serveRequests();
        }
    }

    /**
     * Poll the receive completion queue for a writer that needs the peer's announcements: now if the lock is free,
     * else by its holder before it lets go. Never blocks.
     */
    void pollIfIdle() {
        pollRequested = true;
        if (!receiveLock.isHeldByCurrentThread()) {
            serveRequests();
        }
    }

    private void serveRequests() {
        while (pollRequested && receiveLock.tryLock()) {
            try {
                pollRequested = false;
                poll();
            } finally {
                receiveLock.unlock();
            }
        }
    }

    // ----- completions (lock held) -----

    private void poll() {
        if (completionQueue == null) {
            return;
        }
        while (completionQueue.poll(completionHandler, 32) > 0) {
            // each completion was handled by onCompletion
        }
        state.resolveDeferredFailure(queuePair);
        giveCreditsAndTrim();
    }

    private void onCompletion(final WorkCompletion completion) {
        lastStatus = completion.status();
        if (completion.status() != CompletionStatus.SUCCESS) {
            if (completion.status() != CompletionStatus.WORK_REQUEST_FLUSHED) {
                completionErrors++;
            } else {
                // a flush names no cause; a send that failed first (retries exceeded: the peer is gone) does, so
                // have the send queue polled and its failure decided now, waiting for the send lock if a writer or
                // the keepalive probe holds it (this order of the locks is allowed): every receive before this
                // one was taken
                send.serviceNow();
                state.resolveDeferredFailure(queuePair);
            }
            if (state.failureIsNews()) {
                state.failIfConnected("receive completed with " + completion.status().description(), queuePair);
            }
            return;
        }
        if (state.error() != null) {
            // polled in the same batch as the failure: nothing the peer sent after it is trusted
            repostShared(completion);
            return;
        }
        try {
            final int immediate = messageMode ? sentMessage(completion) : immediateMessage(completion);
            if (state.awaitingFirstMessage) {
                endHold();
            }
            switch (ImmediateData.checkInbound(immediate)) {
                case ImmediateData.DATA -> onData(ImmediateData.operand(immediate));
                case ImmediateData.SGL -> {
                    state.announce(ImmediateData.creditLimit(immediate));
                    send.requestService();
                }
                case ImmediateData.CTRL -> onControl(ImmediateData.operand(immediate));
                default -> {
                    // IOMAP_SGL: we advertise no iomap entries; the message only takes a receive
                }
            }
        } catch (final ProtocolException ex) {
            state.fail(ex, queuePair);
            repostShared(completion);
            return;
        }
        if (sharedPool != null) {
            sharedPool.repost(receive, completion.workRequestId());
        } else if (!state.closing && state.error() == null) {
            postReceive(completion.workRequestId());
        }
    }

    /**
     * SRQ mode: a receive a message took goes back to the shared queue whatever became of this connection.
     */
    private void repostShared(final WorkCompletion completion) {
        if (sharedPool != null) {
            sharedPool.repost(receive, completion.workRequestId());
        }
    }

    private static int immediateMessage(final WorkCompletion completion) throws ProtocolException {
        if (!completion.hasImmediate()) {
            throw new ProtocolException("a message without immediate data arrived");
        }
        return completion.immediate();
    }

    /**
     * The message a SEND carried in message mode, read from the receive's own 4-byte buffer in the peer's order.
     */
    private int sentMessage(final WorkCompletion completion) throws ProtocolException {
        if (completion.hasImmediate()) {
            throw new ProtocolException("a message with immediate data arrived in message mode: immediate=0x"
                + Integer.toHexString(completion.immediate()));
        }
        MessageSendDescriptor.checkLength(completion.byteLength());
        return MessageSendDescriptor.message(messageView,
            MessageSendDescriptor.bufferOffset((int) completion.workRequestId()), peer.byteOrder());
    }

    /**
     * Post receive {@code id}: with no buffer on IB/RoCE, with its own 4-byte message buffer in message mode.
     */
    private void postReceive(final long id) {
        receive.reset().id(id);
        if (messageMode) {
            receive.sge(0, messageRegion.address() + MessageSendDescriptor.bufferOffset((int) id),
                MessageSendDescriptor.LENGTH, messageRegion.localKey());
        }
        if (xrcQueue != null) {
            xrcQueue.postReceive(receive);
        } else {
            queuePair.postReceive(receive);
        }
    }

    private void onData(final int length) throws ProtocolException {
        if (receivedBytes + length > advertisedBytes) {
            throw new ProtocolException("the peer wrote beyond the receive space granted: receivedBytes="
                + receivedBytes + ", length=" + length + ", advertisedBytes=" + advertisedBytes);
        }
        // we advertise the ring in halves, consecutive in stream order; a sender never crosses one's end
        final long regionEnd = (receivedBytes / half + 1) * half;
        if (receivedBytes + length > regionEnd) {
            throw new ProtocolException("the peer wrote across the end of a receive region: receivedBytes="
                + receivedBytes + ", length=" + length + ", regionEnd=" + regionEnd);
        }
        if (!CreditSequence.hasCredit(receivedMessages, grantedLimit)) {
            throw new ProtocolException("the peer sent more messages than the credits granted: received="
                + receivedMessages + ", creditLimit=" + grantedLimit);
        }
        receivedMessages = CreditSequence.next(receivedMessages);
        receivedBytes += length;
        messagesReceived++;
        if (state.inputShutdown) {
            consume(length, true);
            return;
        }
        messages[(messageHead + messageCount) % messages.length] = length;
        messageCount++;
    }

    private void onControl(final int control) {
        switch (control) {
            case ImmediateData.CTRL_DISCONNECT -> {
                state.peerDisconnected = true;
                state.readinessChanged = true;
            }
            case ImmediateData.CTRL_SHUTDOWN -> state.peerShutdown = true;
            default -> {
                // KEEPALIVE carries nothing
            }
        }
    }

    // ----- credits (lock held) -----

    /**
     * Grant what the application consumed: the next ring half once half a ring is free, else credits alone once
     * half the credits are consumed. The grant is the sender's to post; once it took it, it counts as given.
     */
    private void giveCredits() {
        if (!state.mayGrant()) {
            return;
        }
        final boolean region = receiveBufferFree >= half;
        final boolean creditsDue = (short) (receiveSequence - receiveThreshold) >= 0;
        if (!region && !creditsDue) {
            return;
        }
        final int limit = sharedPool != null ? sharedLimit(creditsDue)
            : CreditSequence.grantLimit(receiveSequence, receiveQueueSize);
        if (!region && limit == grantedLimit) {
            return;
        }
        if (!send.grant(limit, region ? receiveFreeOffset : ControlWindow.NO_REGION, remoteSge)) {
            return;
        }
        grantedLimit = limit;
        if (sharedPool != null) {
            creditWindow = Math.max(minimumCredits, CreditSequence.window(receiveSequence, limit));
        }
        receiveThreshold = CreditSequence.add(receiveSequence, creditWindow / 2);
        if (region) {
            receiveFreeOffset = (receiveFreeOffset + half) % receiveBufferSize;
            remoteSge = (remoteSge + 1) % peer.targetSglEntries();
            receiveBufferFree -= half;
            advertisedBytes += half;
        }
    }

    /**
     * SRQ mode: the credit limit to grant. The window doubles (up to the receive queue size) while credits are what
     * runs out, and halves (down to the minimum) when a ring region is what frees up; beyond what the connection
     * has reserved, it borrows from the shared pool, and grants only what it could reserve. It can always grant its
     * minimum: that stays reserved.
     */
    private int sharedLimit(final boolean creditsDue) {
        final int desired = creditsDue ? Math.min(receiveQueueSize, creditWindow * 2)
            : Math.max(minimumCredits, creditWindow / 2);
        int limit = CreditSequence.grantLimit(receiveSequence, desired);
        if ((short) (limit - grantedLimit) < 0) {
            // a smaller window than the credits already granted: those cannot be taken back
            limit = grantedLimit;
        }
        final int need = CreditSequence.window(receivedMessages, limit) + spareReceives - resources.sharedReserved;
        if (need > 0) {
            final int got = sharedPool.borrow(need);
            resources.sharedReserved += got;
            limit = CreditSequence.add(limit, got - need);
        }
        return limit;
    }

    /**
     * Grant what is due, then in SRQ mode give back the shared receives no credit needs any more.
     */
    private void giveCreditsAndTrim() {
        giveCredits();
        if (sharedPool != null) {
            trimShared();
        }
    }

    /**
     * SRQ mode: keep reserved what backs the credits still outstanding and the spares, never less than the minimum;
     * give the rest back to the shared pool.
     */
    private void trimShared() {
        final int keep = Math.max(minimumCredits, CreditSequence.window(receivedMessages, grantedLimit))
            + spareReceives;
        final int surplus = resources.sharedReserved - keep;
        if (surplus > 0) {
            resources.sharedReserved = keep;
            sharedPool.giveBack(surplus);
        }
    }

    // ----- reading -----

    int read(final ByteBuffer dst) throws IOException {
        lock();
        try {
            return startRead() ? (int) endRead(take(dst)) : -1;
        } finally {
            unlock();
        }
    }

    long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException {
        lock();
        try {
            if (!startRead()) {
                return -1;
            }
            long total = 0;
            for (int i = offset; i < offset + length && messageCount > 0; i++) {
                total += take(dsts[i]);
            }
            return endRead(total);
        } finally {
            unlock();
        }
    }

    /**
     * Poll before a read (lock held).
     *
     * @return false if the input is shut down: the read returns -1.
     */
    private boolean startRead() throws IOException {
        state.ensureEstablished();
        poll();
        return !state.inputShutdown;
    }

    /**
     * Grant for what a read took, or report the end of the input if it took nothing (lock held).
     */
    private long endRead(final long taken) throws IOException {
        if (taken > 0) {
            giveCreditsAndTrim();
            return taken;
        }
        return endOfInput();
    }

    private int endOfInput() throws IOException {
        if (state.peerShutdown || state.peerDisconnected) {
            return -1;
        }
        final IOException error = state.error();
        if (error != null) {
            throw error;
        }
        return 0;
    }

    /**
     * Copy queued message bytes into {@code dst}, consuming messages in order.
     */
    private int take(final ByteBuffer dst) {
        int total = 0;
        while (dst.hasRemaining() && messageCount > 0) {
            final int length = messages[messageHead];
            final int count = Math.min(length, dst.remaining());
            final int first = Math.min(count, receiveBufferSize - receiveOffset);
            dst.put(dst.position(), receiveView, receiveOffset, first);
            if (count > first) {
                dst.put(dst.position() + first, receiveView, 0, count - first);
            }
            dst.position(dst.position() + count);
            total += count;
            if (count == length) {
                messageHead = (messageHead + 1) % messages.length;
                messageCount--;
                consume(count, true);
            } else {
                messages[messageHead] = length - count;
                consume(count, false);
            }
        }
        return total;
    }

    private void consume(final int bytes, final boolean messageDone) {
        receiveOffset = (receiveOffset + bytes) % receiveBufferSize;
        receiveBufferFree += bytes;
        if (messageDone) {
            receiveSequence = CreditSequence.next(receiveSequence);
        }
    }

    // ----- readiness, first message, shutdown -----

    /**
     * Without the lock: whether {@link #readiness} may have something new to report, by the receive completion
     * queue's hint ({@link CompletionQueue#mayHaveCompletions}); what other threads change (a shutdown, a failure) is
     * not covered, so a spinning reader still asks {@link #readiness} now and then.
     */
    boolean mayHaveNews() {
        final CompletionQueue queue = completionQueue;
        return queue == null || queue.mayHaveCompletions();
    }

    /**
     * Poll and report {@link StreamReadiness#READ} when a read would not return 0.
     */
    int readiness() {
        lock();
        try {
            poll();
            return messageCount > 0 || state.inputShutdown || state.peerShutdown || state.peerDisconnected
                || state.error() != null ? StreamReadiness.READ : 0;
        } finally {
            unlock();
        }
    }

    /**
     * The passive side's hold ends (the active side's first message or, taken at the reply, its RTU): the sender may
     * post now, what it held back before any grant. Lock held.
     */
    void endHold() {
        state.awaitingFirstMessage = false;
        state.readinessChanged = true;
        send.requestService();
    }

    /**
     * The passive side holding its sends for the active side's first message: have that message signal, then poll
     * for one that came before. Lock held.
     */
    void armForFirstMessage() {
        try {
            completionQueue.requestNotification();
        } catch (final IllegalStateException ex) {
            // no readiness source: the application's next call polls
            return;
        }
        // a completion that arrived before arming signals nothing
        poll();
    }

    /**
     * On the transport's timer thread: poll the first message and grant. It waits for the lock a short while at most
     * (its holders never block while holding it; the CM thread may still be finishing {@code established}); if it
     * stays busy, its holder's next call polls the message.
     */
    void takeFirstMessage(final long lockNanos) {
        try {
            if (!receiveLock.tryLock(lockNanos, TimeUnit.NANOSECONDS)) {
                return;
            }
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            return;
        }
        try {
            if (state.connected && completionQueue != null && state.awaitingFirstMessage && state.error() == null) {
                poll();
                if (state.awaitingFirstMessage && state.error() == null) {
                    armForFirstMessage();
                }
            }
        } finally {
            unlock();
        }
    }

    /**
     * End the input: drop what is queued (it counts as consumed, so the peer keeps its credits), and with the
     * output shut down too, have the sender say DISCONNECT.
     */
    void shutdownInput() {
        lock();
        try {
            if (state.inputShutdown || state.phase != ConnectionState.PHASE_ESTABLISHED) {
                state.inputShutdown = true;
                return;
            }
            state.inputShutdown = true;
            while (messageCount > 0) {
                final int length = messages[messageHead];
                messageHead = (messageHead + 1) % messages.length;
                messageCount--;
                consume(length, true);
            }
            send.onInputShutdown();
            poll();
        } finally {
            unlock();
        }
    }

    // ----- information -----

    /**
     * The receiver's positions; the caller holds the lock.
     */
    long bytesReceived() {
        return receivedBytes;
    }

    long messagesReceived() {
        return messagesReceived;
    }

    long completionErrors() {
        return completionErrors;
    }

    void describe(final StringBuilder out) {
        out.append("receiveSequence=").append(receiveSequence).append(", queuedMessages=").append(messageCount)
            .append(", receivedBytes=").append(receivedBytes).append(", advertisedBytes=").append(advertisedBytes);
        if (sharedPool != null) {
            out.append(", sharedReceiveQueue=true, creditWindow=").append(creditWindow).append(", sharedReserved=")
                .append(resources.sharedReserved);
        }
    }

    /**
     * SRQ mode: the credit window now; the receive queue size otherwise. The caller holds the lock.
     */
    int creditWindow() {
        return creditWindow;
    }

    /**
     * The receive lock itself, for tests that hold it to show the writer does not need it.
     */
    ReentrantLock receiveLock() {
        return receiveLock;
    }

    CompletionStatus lastStatus() {
        return lastStatus;
    }
}
