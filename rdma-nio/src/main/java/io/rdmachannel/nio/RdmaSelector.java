package io.rdmachannel.nio;

import java.io.IOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.IllegalSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectableChannel;
import java.nio.channels.spi.AbstractSelector;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

import io.rdmachannel.channel.internal.PlatformChannels;
import io.rdmachannel.channel.spi.WaitSet;
import io.rdmachannel.channel.stream.StreamConnection;

/**
 * A selector for RDMA channels and the platform's selectable channels together (the JDK's SelectorImpl with the
 * epoll set replaced by readiness queues, plus a platform selector underneath).
 *
 * <p>RDMA readiness: a key is checked (its channel's ready ops read) only when it may have changed: when it is
 * registered, when its interest changes, when its channel's endpoint reported, and at every selection after it was
 * found ready (level triggered, like epoll). A key found not ready is armed and then left alone until its endpoint
 * reports, so idle keys cost nothing.
 *
 * <p>Platform readiness: a platform channel registered here (a datagram channel, a pipe, a Unix-domain or TCP
 * channel of the platform), and the platform channel of an RDMA channel (its TCP connection or listener), are
 * registered with a platform selector of this selector's own, opened on first need, with the key as attachment; a
 * selection polls it, and waits in it when it has registrations, where RDMA readiness, interest changes and
 * {@link #wakeup()} reach it through its {@code wakeup()}. A key's ready set is the union of both parts.
 *
 * <p>Waiting without platform registrations: a platform thread with at most {@value #DIRECT_WAIT_KEYS} RDMA keys
 * waits directly: each park arms every key, the connections by putting what their completion queues signal into a
 * {@link WaitSet} the thread sleeps on (shm: shared words, with {@code futex_waitv}; native: completion channels, with
 * {@code poll(2)}), so the peer's completion (native: the device's interrupt) wakes the selecting thread itself, with
 * no relay, no device or poller thread and no wake-up message in between; it disarms them when it wakes (so between
 * selections those keys are not armed, and a wait of another kind arms every key first). The set is of the first
 * such channel's provider; keys of another provider are armed through their relays. Otherwise (a virtual thread,
 * more keys, a JVM without native access, {@value #DIRECT_WAIT_PROP_NAME}{@code =false}) it parks with
 * {@link LockSupport}, a virtual thread unmounting, and keys report through their relays.
 *
 * <p>Busy polling: when a registered channel with interest has {@code RDMA_BUSY_POLL} set, a selection that finds
 * nothing ready polls the registered keys on its own thread for up to the longest such time before it arms them
 * and parks, so a message arriving meanwhile is seen without a wake-up, a thread hop, or a wake-up message the peer
 * would have to send to an armed completion queue.
 *
 * <p>One difference from the JDK's selectors: the platform registration of a platform channel whose key was
 * cancelled lasts until this selector's next selection, so until then that channel cannot be put in blocking mode
 * ({@link IllegalBlockingModeException}); RDMA channels release it themselves when put in blocking mode.
 */
final class RdmaSelector extends AbstractSelector {
    private static final int WAIT_NONE = 0;
    private static final int WAIT_PARKED = 1;
    private static final int WAIT_PLATFORM = 2;
    private static final int WAIT_DIRECT = 3;
    /** System property: {@code false} keeps selections off direct waits (every wait goes through the relays). */
    static final String DIRECT_WAIT_PROP_NAME = "rdmachannel.selector.directWait";
    /**
     * The most registered RDMA keys a selection waits for directly: every key fits in one wait set even if each
     * waits on two words (a writer), next to the set's own wake word. Above it, keys are armed once and report
     * through their relays, so a wait costs nothing per idle key.
     */
    static final int DIRECT_WAIT_KEYS = (WaitSet.CAPACITY - 1) / 2;
    /**
     * The most registered RDMA keys a selection busy-polls ({@code RDMA_BUSY_POLL}): a spin looks at every key
     * with interest, again and again, and then arms each one not ready, so with more keys every selection would cost
     * passes over every idle key (a server with thousands of mostly idle connections would spend its time there).
     * Above it, a selection arms and waits at once, and only the keys that report are looked at.
     */
    static final int MAX_SPIN_KEYS = DIRECT_WAIT_KEYS;

    private final Set<SelectionKey> keys = ConcurrentHashMap.newKeySet();
    private final Set<SelectionKey> publicKeys = Collections.unmodifiableSet(keys);
    private final Set<SelectionKey> selectedKeys = new HashSet<>();
    private final Set<SelectionKey> publicSelectedKeys = new UngrowableSet(selectedKeys);

    /** Held for a whole selection and while closing. */
    private final ReentrantLock selectLock = new ReentrantLock();
    /**
     * Keys that may have become ready, pushed from any thread: an intrusive stack through
     * {@link RdmaSelectionKey#nextQueued}, taken whole by the selection, so queueing allocates nothing.
     */
    private final AtomicReference<RdmaSelectionKey> maybeReady = new AtomicReference<>();
    /** Keys found ready at the last selection: checked again at the next one. Selection thread only. */
    private final ArrayList<RdmaSelectionKey> readyLastTime = new ArrayList<>();
    /** The keys one round of a selection checks. Selection thread only. */
    private final ArrayList<RdmaSelectionKey> candidates = new ArrayList<>();
    /** The keys one round found ready, each once, with what it found in {@link RdmaSelectionKey#roundReady}. */
    private final ArrayList<RdmaSelectionKey> touched = new ArrayList<>();
    /** How long a selection spins before it arms and parks, learned from recent selections. Selection thread only. */
    private final AdaptiveSpin adaptiveSpin = new AdaptiveSpin();
    /** Numbers the rounds of the selections, so a key is checked at most once per round. */
    private long round;
    /** Whether this round armed the RDMA keys it found not ready (not while a busy-polling selection spins). */
    private boolean roundArmed;
    /** Whether this round leaves the RDMA keys it found not ready to the direct wait that follows it. */
    private boolean roundDirect;
    /**
     * Whether keys may be unarmed because selections waited directly (a direct wait arms every key for itself and
     * disarms it after): a wait through the relays must arm every key first.
     */
    private boolean unarmedForDirect;
    /**
     * Whether selections may wait directly: the system property when the selector was opened. Whether a key can is its
     * channel's ({@link RdmaSelectableChannel#canWaitDirectly()}: its device, the platform).
     */
    private final boolean directWaits = !"false".equalsIgnoreCase(System.getProperty(DIRECT_WAIT_PROP_NAME));
    /**
     * What a direct wait sleeps on, made by the first channel that can wait directly, of its provider's kind (keys of
     * another provider's are armed through their relays); read by the threads that wake it; closed with the selector.
     */
    private WaitSet waitSet;
    /** The keys the current direct wait armed directly. Selection thread only. */
    private final ArrayList<RdmaSelectionKey> directArmed = new ArrayList<>(DIRECT_WAIT_KEYS);
    /** The RDMA channels' keys, copied on registration and deregistration (rare), read by a spinning selection. */
    private volatile RdmaSelectionKey[] registered = new RdmaSelectionKey[0];
    private final Object registeredLock = new Object();

    /** The platform selector, opened by the first platform registration; closed with this selector. */
    private volatile AbstractSelector platform;
    /** Keys with a platform registration. Selection thread only. */
    private int platformKeys;
    /** Whether platform registrations were cancelled since the platform selector last dropped them. */
    private boolean platformCancelled;
    // made once: method references written in the loop would be new objects on every selection
    private final Consumer<SelectionKey> platformReady = this::onPlatformReady;
    private final Consumer<SelectionKey> ignoreReady = key -> { };

    /** Set by {@link #wakeup()}, cleared when a selection ends. */
    private volatile boolean wakeupPending;
    /** The thread of the selection in progress, which offers and wakeups unpark while it is parked. */
    private volatile Thread selecting;
    /** Where the selection thread is (about to be) parked: only then does an offer wake it. */
    private volatile int waitMode;

    RdmaSelector(final RdmaSelectorProvider provider) {
        super(provider);
    }

    @Override
    public Set<SelectionKey> keys() {
        ensureOpen();
        return publicKeys;
    }

    @Override
    public Set<SelectionKey> selectedKeys() {
        ensureOpen();
        return publicSelectedKeys;
    }

    @Override
    public int selectNow() throws IOException {
        return lockAndDoSelect(null, 0);
    }

    @Override
    public int select(final long timeout) throws IOException {
        if (timeout < 0) {
            throw new IllegalArgumentException("Negative timeout");
        }
        return lockAndDoSelect(null, timeout == 0 ? -1 : timeout);
    }

    @Override
    public int select() throws IOException {
        return lockAndDoSelect(null, -1);
    }

    @Override
    public int select(final Consumer<SelectionKey> action, final long timeout) throws IOException {
        Objects.requireNonNull(action);
        if (timeout < 0) {
            throw new IllegalArgumentException("Negative timeout");
        }
        return lockAndDoSelect(action, timeout == 0 ? -1 : timeout);
    }

    @Override
    public int select(final Consumer<SelectionKey> action) throws IOException {
        Objects.requireNonNull(action);
        return lockAndDoSelect(action, -1);
    }

    @Override
    public int selectNow(final Consumer<SelectionKey> action) throws IOException {
        Objects.requireNonNull(action);
        return lockAndDoSelect(action, 0);
    }

    @Override
    public Selector wakeup() {
        wakeupPending = true;
        // the write of wakeupPending above and the read of waitMode below pair with the selection's write of
        // waitMode and its read of wakeupPending: one of the two sides sees the other
        wakeWaiting();
        return this;
    }

    @Override
    protected SelectionKey register(final AbstractSelectableChannel channel, final int ops, final Object attachment) {
        final RdmaSelectableChannel rdmaChannel = channel instanceof RdmaSelectableChannel rdma ? rdma : null;
        if (rdmaChannel == null && !isPlatformChannel(channel)) {
            throw new IllegalSelectorException();
        }
        ensureOpen();
        final RdmaSelectionKey key = new RdmaSelectionKey(channel, this, rdmaChannel);
        if (attachment != null) {
            key.attach(attachment);
        }
        keys.add(key);
        if (!isOpen()) {
            // closed meanwhile: the close may not have seen the key
            keys.remove(key);
            key.cancel();
            throw new ClosedSelectorException();
        }
        if (rdmaChannel != null) {
            synchronized (registeredLock) {
                final RdmaSelectionKey[] current = registered;
                final RdmaSelectionKey[] larger = Arrays.copyOf(current, current.length + 1);
                larger[current.length] = key;
                registered = larger;
            }
            rdmaChannel.relay().addKey(key);
        }
        key.interestOps(ops);
        key.maybeReady();
        return key;
    }

    /**
     * Whether a channel can be registered with the platform selector: a channel of the platform's provider.
     */
    private static boolean isPlatformChannel(final SelectableChannel channel) {
        try {
            return channel.provider() == PlatformChannels.provider();
        } catch (final IllegalStateException ex) {
            return false;
        }
    }

    @Override
    protected void implCloseSelector() throws IOException {
        wakeup();
        selectLock.lock();
        try {
            for (final Iterator<SelectionKey> it = keys.iterator(); it.hasNext(); ) {
                final RdmaSelectionKey key = (RdmaSelectionKey) it.next();
                dropKey(key);
                it.remove();
            }
            final Set<SelectionKey> cancelled = cancelledKeys();
            synchronized (cancelled) {
                cancelled.clear();
            }
            takeOffered();
            candidates.clear();
            readyLastTime.clear();
            touched.clear();
            final WaitSet set = waitSet;
            if (set != null) {
                set.close();
            }
            final AbstractSelector inner = platform;
            if (inner != null) {
                // drops the platform registrations and releases the platform channels closed meanwhile
                inner.close();
            }
        } finally {
            selectLock.unlock();
        }
    }

    /**
     * The keys carried over to the next selection's check (found ready, or checked but not armed), for tests.
     */
    int carriedKeys() {
        selectLock.lock();
        try {
            return readyLastTime.size();
        } finally {
            selectLock.unlock();
        }
    }

    void interestChanged(final RdmaSelectionKey key) {
        key.maybeReady();
    }

    /**
     * Queue a key for checking and wake a blocked selection. Called from engine threads: never blocks for long.
     */
    void offer(final RdmaSelectionKey key) {
        RdmaSelectionKey head;
        do {
            head = maybeReady.get();
            key.nextQueued = head;
        } while (!maybeReady.compareAndSet(head, key));
        // the push above and the read of waitMode below pair with the selection's write of waitMode and its read of
        // the stack before it waits: one of the two sides sees the other
        wakeWaiting();
    }

    /**
     * Wake the selection thread where it waits, if it does: no lock and no allocation, so an engine thread that
     * reports readiness never blocks here.
     */
    private void wakeWaiting() {
        final int mode = waitMode;
        if (mode == WAIT_PARKED) {
            LockSupport.unpark(selecting);
        } else if (mode == WAIT_PLATFORM) {
            platform.wakeup();
        } else if (mode == WAIT_DIRECT) {
            waitSet.wake();
        }
    }

    /**
     * Take every offered key onto the candidates, clearing each key's queued mark after its link was read (a key
     * may be offered again at once).
     */
    private void takeOffered() {
        RdmaSelectionKey key = maybeReady.getAndSet(null);
        while (key != null) {
            final RdmaSelectionKey next = key.nextQueued;
            key.nextQueued = null;
            key.dequeued();
            candidates.add(key);
            key = next;
        }
    }

    private void ensureOpen() {
        if (!isOpen()) {
            throw new ClosedSelectorException();
        }
    }

    /**
     * @param timeout -1 to wait without limit, 0 not to wait, else milliseconds.
     */
    private int lockAndDoSelect(final Consumer<SelectionKey> action, final long timeout) throws IOException {
        if (selectLock.isHeldByCurrentThread()) {
            throw new IllegalStateException("select in progress");
        }
        selectLock.lock();
        try {
            ensureOpen();
            final boolean blocking = timeout != 0;
            if (blocking) {
                begin();
            }
            try {
                return doSelect(action, timeout);
            } finally {
                if (blocking) {
                    end();
                }
                clearWakeup();
            }
        } finally {
            selectLock.unlock();
        }
    }

    /**
     * Rounds of checking until one finds a key ready, or the selection may not wait any longer (a selectNow, the
     * deadline, a wakeup, an interrupt, the close). Between rounds it spins (busy polling) or waits; it never returns
     * early with nothing ready while it may still wait.
     */
    private int doSelect(final Consumer<SelectionKey> action, final long timeout) throws IOException {
        final long deadline = timeout > 0 ? ReadinessRelay.deadlineMillis(timeout) : 0;
        processDeregisterQueue();
        while (true) {
            final boolean last = timeout == 0 || mustReturn() || deadline != 0 && System.nanoTime() - deadline >= 0;
            // with busy polling, keys found not ready stay unarmed while the selection spins: an armed completion
            // queue would make the peer send a wake-up for every message
            final long ceiling = last ? 0 : busyPollNanos();
            final long spin = adaptiveSpin.next(ceiling);
            beginRound();
            checkCandidates(spin == 0);
            pollPlatform();
            final boolean found = !touched.isEmpty();
            final int updated = applyRound(action);
            processDeregisterQueue();
            if (found || last) {
                return updated;
            }
            if (spin > 0) {
                final int spun = spinThenArm(action, spin, ceiling, deadline);
                if (spun >= 0) {
                    return spun;
                }
                if (maybeReady.get() != null || mustReturn()) {
                    continue;
                }
            }
            await(deadline);
        }
    }

    private boolean mustReturn() {
        return wakeupPending || !isOpen() || Thread.currentThread().isInterrupted();
    }

    private void beginRound() {
        round++;
        touched.clear();
    }

    /**
     * Check the keys that may have changed: those found ready last time and those offered. Each gets its platform
     * registration brought up to date and its RDMA endpoint read (and armed if not ready and {@code arm} is set).
     */
    private void checkCandidates(final boolean arm) {
        roundArmed = arm;
        roundDirect = arm && waitsDirectly();
        for (int i = 0; i < readyLastTime.size(); i++) {
            candidates.add(readyLastTime.get(i));
        }
        readyLastTime.clear();
        takeOffered();
        for (int i = 0; i < candidates.size(); i++) {
            final RdmaSelectionKey key = candidates.get(i);
            if (key.checkedRound == round || !key.isValid()) {
                continue;
            }
            key.checkedRound = round;
            if (key.rdmaChannel() != null) {
                final int ready = check(key, arm);
                if (ready != 0) {
                    touch(key, ready);
                }
            }
            // after the check: checking may have moved the channel to a platform channel (a connect falling back)
            syncPlatform(key);
        }
    }

    /**
     * Record what a key was found ready for in this round (the union over its RDMA and platform parts).
     */
    private void touch(final RdmaSelectionKey key, final int ready) {
        if (key.readyRound != round) {
            key.readyRound = round;
            key.roundReady = ready;
            touched.add(key);
        } else {
            key.roundReady |= ready;
        }
    }

    /**
     * Update the keys found ready in this round; as the JDK, a checked key outside the selected set that was not
     * ready gets its ready set replaced by 0.
     *
     * @return the number of keys updated.
     */
    private int applyRound(final Consumer<SelectionKey> action) {
        int updated = 0;
        for (int i = 0; i < touched.size(); i++) {
            final RdmaSelectionKey key = touched.get(i);
            if (key.isValid()) {
                updated += update(key, key.roundReady, action);
            }
        }
        for (int i = 0; i < candidates.size(); i++) {
            final RdmaSelectionKey key = candidates.get(i);
            if (key.readyRound == round || !key.isValid() || key.rdmaChannel() == null) {
                continue;
            }
            if (action == null && !selectedKeys.contains(key)) {
                key.readyOps(0);
            }
            if (!roundArmed && key.carriedRound != round) {
                // checked but not armed (the selection meant to spin, then found another key ready): check it
                // again next time, or nothing would report it; once, although it may be a candidate twice
                key.carriedRound = round;
                readyLastTime.add(key);
            }
        }
        candidates.clear();
        return updated;
    }

    /**
     * The longest {@code RDMA_BUSY_POLL} among the channels with interest, or 0; 0 also when more than
     * {@value #MAX_SPIN_KEYS} RDMA keys are registered.
     */
    private long busyPollNanos() {
        final RdmaSelectionKey[] keys = registered;
        if (keys.length > MAX_SPIN_KEYS) {
            return 0;
        }
        long longest = 0;
        for (final RdmaSelectionKey key : keys) {
            if (key.isValid() && key.rawInterestOps() != 0) {
                longest = Math.max(longest, key.rdmaChannel().busyPollNanos());
            }
        }
        return longest;
    }

    /**
     * Poll every registered key with interest (and the platform selector) until one is ready, something is offered,
     * a wakeup, an interrupt, the close, the deadline, or {@code spin} nanoseconds passed; then, if nothing was found,
     * arm the keys that are not ready and look once more, as {@link #check} does.
     *
     * @return the number of keys updated, or -1 if none was found ready (the selection goes on: it looks at the
     *     offered keys or waits).
     */
    private int spinThenArm(final Consumer<SelectionKey> action, final long spin, final long ceiling,
        final long deadline) throws IOException {
        // the clock is read first after one look: a spin that finds a key at once reads none
        long end = 0;
        boolean timed = false;
        while (true) {
            if (maybeReady.get() != null || mustReturn()) {
                return -1;
            }
            final int found = pollRegistered(action, false);
            if (found >= 0) {
                adaptiveSpin.ended(true, ceiling);
                return found;
            }
            Thread.onSpinWait();
            final long now = System.nanoTime();
            if (!timed) {
                end = deadline == 0 ? now + spin : Math.min(deadline, now + spin);
                timed = true;
            } else if (now - end >= 0) {
                break;
            }
        }
        adaptiveSpin.ended(false, ceiling);
        return pollRegistered(action, true);
    }

    /**
     * One round over every registered RDMA key with interest, arming those not ready if asked, and the platform
     * selector.
     *
     * @return the number of keys updated, or -1 if none was ready.
     */
    private int pollRegistered(final Consumer<SelectionKey> action, final boolean arm) throws IOException {
        beginRound();
        roundArmed = arm;
        roundDirect = arm && waitsDirectly();
        for (final RdmaSelectionKey key : registered) {
            if (key.isValid() && key.rawInterestOps() != 0) {
                key.checkedRound = round;
                candidates.add(key);
                final int ready = check(key, arm);
                if (ready != 0) {
                    touch(key, ready);
                }
            }
        }
        pollPlatform();
        if (touched.isEmpty()) {
            candidates.clear();
            return -1;
        }
        return applyRound(action);
    }

    /**
     * Read a key's RDMA readiness; arm its endpoint if it is not ready and {@code arm} is set. Keys without interest
     * are neither read nor armed (a hung-up idle key costs nothing).
     */
    private int check(final RdmaSelectionKey key, final boolean arm) {
        if (!key.isValid()) {
            return 0;
        }
        final int interest = key.rawInterestOps();
        if (interest == 0) {
            return 0;
        }
        final RdmaSelectableChannel channel = key.rdmaChannel();
        int ready = channel.translateReadyOps(interest);
        if (ready == 0 && arm) {
            if (roundDirect && channel.canWaitDirectly()) {
                // the direct wait arms it for itself
                unarmedForDirect = true;
            } else {
                channel.armEndpoint();
                ready = channel.translateReadyOps(interest);
            }
        }
        if (ready != 0) {
            readyLastTime.add(key);
        }
        return ready;
    }

    private int update(final RdmaSelectionKey key, final int ready, final Consumer<SelectionKey> action) {
        if (action != null) {
            key.readyOps(ready);
            action.accept(key);
            ensureOpen();
            return 1;
        }
        if (!selectedKeys.contains(key)) {
            key.readyOps(ready);
            selectedKeys.add(key);
            return 1;
        }
        final int old = key.rawReadyOps();
        if ((old | ready) != old) {
            key.readyOps(old | ready);
            return 1;
        }
        return 0;
    }

    // -- the platform part

    /**
     * Bring a key's platform registration up to date: register its platform channel (now there is one), drop a
     * registration whose channel changed or was cancelled, and give it the key's interest.
     */
    private void syncPlatform(final RdmaSelectionKey key) {
        final SelectableChannel wanted = key.platformChannel();
        SelectionKey current = key.platformKey;
        if (current != null && (current.channel() != wanted || !current.isValid())) {
            current.cancel();
            key.platformKey = null;
            platformKeys--;
            platformCancelled = true;
            current = null;
        }
        if (wanted == null) {
            return;
        }
        final int interest = key.rawInterestOps() & wanted.validOps();
        if (current != null) {
            try {
                if (current.interestOps() != interest) {
                    current.interestOps(interest);
                }
            } catch (final CancelledKeyException ex) {
                // the platform channel closed; its key goes with it
            }
            return;
        }
        // the channel's blocking lock: a channel put in blocking mode meanwhile is not registered behind its back
        synchronized (key.channel().blockingLock()) {
            if (!key.isValid() || wanted.isBlocking()) {
                return;
            }
            try {
                key.platformKey = registerPlatform(wanted, interest, key);
                platformKeys++;
            } catch (final ClosedChannelException | IllegalBlockingModeException | CancelledKeyException ex) {
                // closed or put in blocking mode meanwhile: the key is going away
            }
        }
    }

    private SelectionKey registerPlatform(final SelectableChannel channel, final int interest,
        final RdmaSelectionKey key) throws ClosedChannelException {
        final AbstractSelector inner = platformSelector();
        try {
            return channel.register(inner, interest, key);
        } catch (final CancelledKeyException ex) {
            // registered before under a key cancelled since: let the platform selector drop it, then register
            flushPlatform();
            return channel.register(inner, interest, key);
        }
    }

    private AbstractSelector platformSelector() {
        AbstractSelector inner = platform;
        if (inner == null) {
            try {
                inner = PlatformChannels.provider().openSelector();
            } catch (final IOException ex) {
                throw new IllegalStateException("cannot open the platform selector for platform channels", ex);
            }
            platform = inner;
        }
        return inner;
    }

    /**
     * Poll the platform selector, touching the keys whose platform channel is ready.
     */
    private void pollPlatform() throws IOException {
        if (platformKeys > 0) {
            platform.selectNow(platformReady);
        }
    }

    private void onPlatformReady(final SelectionKey platformKey) {
        final RdmaSelectionKey key = (RdmaSelectionKey) platformKey.attachment();
        if (!key.isValid()) {
            return;
        }
        try {
            final int ready = platformKey.readyOps() & key.rawInterestOps();
            if (ready != 0) {
                touch(key, ready);
            }
        } catch (final CancelledKeyException ex) {
            // the platform channel closed during the selection
        }
    }

    /**
     * Have the platform selector drop its cancelled registrations, which also releases platform channels closed
     * meanwhile (the JDK closes a registered channel's socket when its last selector drops it).
     */
    private void flushPlatform() {
        platformCancelled = false;
        final AbstractSelector inner = platform;
        if (inner != null) {
            try {
                inner.selectNow(ignoreReady);
            } catch (final IOException ex) {
                throw new IllegalStateException("the platform selector failed", ex);
            }
        }
    }

    // -- waiting

    /**
     * Park until a key is offered, a wakeup, an interrupt, the close, the deadline, or (with platform
     * registrations) a platform channel is ready. The caller looks again in any case.
     */
    private void await(final long deadline) throws IOException {
        if (waitsDirectly()) {
            if (awaitDirect(deadline)) {
                return;
            }
        } else if (unarmedForDirect) {
            // earlier selections waited directly and left keys unarmed: have the next round check and arm them all
            unarmedForDirect = false;
            for (final RdmaSelectionKey key : registered) {
                key.maybeReady();
            }
            return;
        }
        if (platformKeys > 0) {
            awaitPlatform(deadline);
            return;
        }
        // parked with LockSupport rather than on a Condition: a condition wait allocates a node each time, and the
        // waker would contend for its lock (a virtual thread unmounts either way)
        selecting = Thread.currentThread();
        waitMode = WAIT_PARKED;
        try {
            while (maybeReady.get() == null && !mustReturn()) {
                if (deadline == 0) {
                    LockSupport.park(this);
                } else {
                    final long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        return;
                    }
                    LockSupport.parkNanos(this, remaining);
                }
            }
        } finally {
            waitMode = WAIT_NONE;
        }
    }

    private void awaitPlatform(final long deadline) throws IOException {
        final AbstractSelector inner = platform;
        waitMode = WAIT_PLATFORM;
        try {
            if (maybeReady.get() != null || mustReturn()) {
                return;
            }
            if (deadline == 0) {
                inner.select(ignoreReady);
                return;
            }
            final long remaining = deadline - System.nanoTime();
            if (remaining > 0) {
                // round up: a platform wait shorter than asked would make the selection return before its deadline
                inner.select(ignoreReady, Math.max(1, TimeUnit.NANOSECONDS.toMillis(remaining + 999_999)));
            }
        } finally {
            waitMode = WAIT_NONE;
        }
    }

    /**
     * Whether this selection waits on a wait set itself: direct waits are available and not turned off, no platform
     * registration (those need the platform selector), a platform thread (a virtual one must not block its carrier),
     * and few enough keys.
     */
    private boolean waitsDirectly() {
        return directWaits && platformKeys == 0 && registered.length <= DIRECT_WAIT_KEYS
            && !Thread.currentThread().isVirtual();
    }

    /**
     * Arm every RDMA key with interest for this wait, each connection that can by putting its completion queues'
     * words into the wait set (the peer's completion then wakes this thread itself: one wake-up, no relay and no
     * device thread in between), the others through their relays; look at each once armed; sleep on the set until a
     * word moves, an offer, a wakeup, an interrupt, the close or the deadline; disarm and offer the keys whose words
     * moved, for the next round to check.
     */
    private boolean awaitDirect(final long deadline) {
        if (waitSet != null) {
            waitSet.clear();
        }
        try {
            final boolean found = armDirect();
            final WaitSet set = waitSet;
            if (!found && directArmed.isEmpty()) {
                // no key to wait on directly (listeners, connections in progress, a device without direct waits):
                // those are armed through their relays, so park as without direct waits
                return false;
            }
            unarmedForDirect = true;
            if (!found) {
                // the write of waitMode and the read of the offered keys and the wakeup pair with offer() and
                // wakeup(): one of the two sides sees the other; a wake of the set after its clear() ends the wait
                waitMode = WAIT_DIRECT;
                try {
                    if (maybeReady.get() == null && !mustReturn()) {
                        set.await(deadline);
                    }
                } finally {
                    waitMode = WAIT_NONE;
                }
            }
        } finally {
            final WaitSet set = waitSet;
            for (int i = 0; i < directArmed.size(); i++) {
                final RdmaSelectionKey key = directArmed.get(i);
                key.directStream.disarmDirect();
                key.directStream = null;
                if (set.changed(key.directFrom, key.directTo)) {
                    key.maybeReady();
                }
            }
            directArmed.clear();
            if (set != null) {
                set.end();
            }
        }
        return true;
    }

    /**
     * Arm the keys for a direct wait, looking at each once armed.
     *
     * @return true if one was found ready (and offered): no wait.
     */
    private boolean armDirect() {
        for (final RdmaSelectionKey key : registered) {
            final int interest = key.rawInterestOps();
            if (!key.isValid() || interest == 0) {
                continue;
            }
            final RdmaSelectableChannel channel = key.rdmaChannel();
            // a key that cannot wait directly was armed through its relay when a round found it not ready; one that
            // stopped being able to since (its connection ended) is ready, which the look below sees
            if (channel.canWaitDirectly()) {
                WaitSet set = waitSet;
                if (set == null) {
                    set = channel.newWaitSet();
                    waitSet = set;
                }
                final int from = set == null ? 0 : set.size();
                final StreamConnection stream = set == null ? null : channel.armEndpointDirect(interest, set);
                if (stream != null) {
                    key.directStream = stream;
                    key.directFrom = from;
                    key.directTo = set.size();
                    directArmed.add(key);
                } else {
                    channel.armEndpoint();
                }
            }
            if (channel.translateReadyOps(interest) != 0) {
                key.maybeReady();
                return true;
            }
        }
        return false;
    }

    private void clearWakeup() {
        wakeupPending = false;
    }

    // -- deregistration

    /**
     * Deregister the cancelled keys; release the endpoints of closed channels that have no registration left, and
     * have the platform selector drop the platform registrations of those keys.
     */
    private void processDeregisterQueue() {
        final Set<SelectionKey> cancelled = cancelledKeys();
        List<SelectionKey> drained = null;
        synchronized (cancelled) {
            if (!cancelled.isEmpty()) {
                drained = new ArrayList<>(cancelled);
                cancelled.clear();
            }
        }
        if (drained != null) {
            for (final SelectionKey key : drained) {
                keys.remove(key);
                selectedKeys.remove(key);
                readyLastTime.remove(key);
                dropKey((RdmaSelectionKey) key);
            }
        }
        if (platformCancelled) {
            // after the keys were deregistered here: a closed platform channel is released once no selector has it
            flushPlatform();
        }
    }

    private void dropKey(final RdmaSelectionKey key) {
        final RdmaSelectableChannel channel = key.rdmaChannel();
        if (channel != null) {
            synchronized (registeredLock) {
                final RdmaSelectionKey[] current = registered;
                for (int i = 0; i < current.length; i++) {
                    if (current[i] == key) {
                        final RdmaSelectionKey[] smaller = new RdmaSelectionKey[current.length - 1];
                        System.arraycopy(current, 0, smaller, 0, i);
                        System.arraycopy(current, i + 1, smaller, i, current.length - i - 1);
                        registered = smaller;
                        break;
                    }
                }
            }
            channel.relay().removeKey(key);
        }
        final SelectionKey inner = key.platformKey;
        if (inner != null) {
            inner.cancel();
            key.platformKey = null;
            platformKeys--;
            platformCancelled = true;
        }
        deregister(key);
        selectedKeys.remove(key);
        if (channel != null && !key.channel().isOpen() && !key.channel().isRegistered()) {
            channel.kill();
        }
    }

    /**
     * The selected-key view: removal allowed, addition refused.
     */
    private static final class UngrowableSet extends AbstractSet<SelectionKey> {
        private final Set<SelectionKey> set;

        UngrowableSet(final Set<SelectionKey> set) {
            this.set = set;
        }

        @Override
        public int size() {
            return set.size();
        }

        @Override
        public boolean isEmpty() {
            return set.isEmpty();
        }

        @Override
        public boolean contains(final Object o) {
            return set.contains(o);
        }

        @Override
        public Object[] toArray() {
            return set.toArray();
        }

        @Override
        public <T> T[] toArray(final T[] a) {
            return set.toArray(a);
        }

        @Override
        public Iterator<SelectionKey> iterator() {
            return set.iterator();
        }

        @Override
        public boolean remove(final Object o) {
            return set.remove(o);
        }

        @Override
        public void clear() {
            set.clear();
        }

        @Override
        public boolean add(final SelectionKey o) {
            throw new UnsupportedOperationException();
        }
    }
}
