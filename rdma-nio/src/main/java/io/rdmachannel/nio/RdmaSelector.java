package io.rdmachannel.nio;

import java.io.IOException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.IllegalSelectorException;
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
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * A selector for RDMA channels (the JDK's SelectorImpl with the epoll set replaced by readiness queues).
 *
 * <p>A key is checked (its channel's ready ops read) only when it may have changed: when it is registered, when its
 * interest changes, when its channel's endpoint reported, and at every selection after it was found ready (level
 * triggered, like epoll). A key found not ready is armed and then left alone until its endpoint reports, so idle
 * keys cost nothing. Waiting is on a {@link ReentrantLock} condition so a virtual thread unmounts; the selection
 * lock is a {@link ReentrantLock} too (not the selector's monitor, as in the JDK).
 *
 * <p>Busy polling: when a registered channel with interest has {@code RDMA_BUSY_POLL} set, a selection that finds
 * nothing ready polls the registered keys on its own thread for up to the longest such time before it arms them
 * and parks, so a message arriving meanwhile is seen without a wake-up, a thread hop, or a wake-up message the peer
 * would have to send to an armed completion queue.
 */
final class RdmaSelector extends AbstractSelector {
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
    /** Numbers the rounds of the selections, so a key is checked at most once per round. */
    private long round;
    /** The registered keys, copied on registration and deregistration (rare), read by a spinning selection. */
    private volatile RdmaSelectionKey[] registered = new RdmaSelectionKey[0];
    private final Object registeredLock = new Object();

    private final ReentrantLock waitLock = new ReentrantLock();
    private final Condition woken = waitLock.newCondition();
    // Fields guarded by waitLock; wakeupPending is also read, without the lock, by a spinning selection
    private volatile boolean wakeupPending;
    /** Whether the selection thread is (about to be) parked: only then does an offer take the wait lock. */
    private volatile boolean waiting;

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
        waitLock.lock();
        try {
            wakeupPending = true;
            woken.signalAll();
        } finally {
            waitLock.unlock();
        }
        return this;
    }

    @Override
    protected SelectionKey register(final AbstractSelectableChannel channel, final int ops, final Object attachment) {
        if (!(channel instanceof RdmaSelectableChannel rdmaChannel)) {
            throw new IllegalSelectorException();
        }
        ensureOpen();
        final RdmaSelectionKey key = new RdmaSelectionKey(channel, this);
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
        synchronized (registeredLock) {
            final RdmaSelectionKey[] current = registered;
            final RdmaSelectionKey[] larger = Arrays.copyOf(current, current.length + 1);
            larger[current.length] = key;
            registered = larger;
        }
        rdmaChannel.relay().addKey(key);
        key.interestOps(ops);
        key.maybeReady();
        return key;
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
        // the push above and the read of waiting below pair with the selection's write of waiting and its read of
        // the stack in await: one of the two sides sees the other
        if (waiting) {
            waitLock.lock();
            try {
                woken.signalAll();
            } finally {
                waitLock.unlock();
            }
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

    private int doSelect(final Consumer<SelectionKey> action, final long timeout) {
        final long deadline = timeout > 0 ? System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeout) : 0;
        processDeregisterQueue();
        int updated = 0;
        while (true) {
            // with busy polling, keys found not ready stay unarmed while the selection spins: an armed completion
            // queue would make the peer send a wake-up for every message
            final long spin = timeout == 0 ? 0 : busyPollNanos();
            round++;
            candidates.clear();
            for (int i = 0; i < readyLastTime.size(); i++) {
                candidates.add(readyLastTime.get(i));
            }
            readyLastTime.clear();
            takeOffered();
            boolean anyReady = false;
            for (int i = 0; i < candidates.size(); i++) {
                final RdmaSelectionKey key = candidates.get(i);
                if (key.checkedRound == round) {
                    continue;
                }
                key.checkedRound = round;
                final int ready = check(key, spin == 0);
                if (ready != 0) {
                    anyReady = true;
                    updated += update(key, ready, action);
                } else if (action == null && key.isValid() && !selectedKeys.contains(key)) {
                    // as the JDK: a polled key outside the selected set gets its ready set replaced, even by 0
                    key.readyOps(0);
                }
            }
            candidates.clear();
            processDeregisterQueue();
            if (anyReady || timeout == 0) {
                return updated;
            }
            if (spin > 0) {
                final int found = spinThenArm(action, spin, deadline);
                if (found >= 0) {
                    return updated + found;
                }
                if (maybeReady.get() != null) {
                    continue;
                }
            }
            if (!await(deadline)) {
                return updated;
            }
        }
    }

    /**
     * The longest {@code RDMA_BUSY_POLL} among the channels with interest, or 0.
     */
    private long busyPollNanos() {
        long longest = 0;
        for (final RdmaSelectionKey key : registered) {
            if (key.isValid() && key.rawInterestOps() != 0) {
                longest = Math.max(longest, key.rdmaChannel().busyPollNanos());
            }
        }
        return longest;
    }

    /**
     * Poll every registered key with interest until one is ready, something is offered, a wakeup, an interrupt,
     * the close, the deadline, or {@code spin} nanoseconds passed; then, if nothing was found, arm the keys that are
     * not ready and look once more, as {@link #check} does.
     *
     * @return the number of keys updated, or -1 if none was found ready (the selection goes on: it looks at the
     *     offered keys or parks).
     */
    private int spinThenArm(final Consumer<SelectionKey> action, final long spin, final long deadline) {
        final long end = deadline == 0 ? System.nanoTime() + spin
            : Math.min(deadline, System.nanoTime() + spin);
        do {
            if (maybeReady.get() != null) {
                return -1;
            }
            if (wakeupPending || !isOpen() || Thread.currentThread().isInterrupted()) {
                return 0;
            }
            final int found = pollRegistered(action, false);
            if (found >= 0) {
                return found;
            }
            Thread.onSpinWait();
        } while (System.nanoTime() - end < 0);
        return pollRegistered(action, true);
    }

    /**
     * Read the readiness of every registered key with interest, arming those not ready if asked.
     *
     * @return the number of keys updated, or -1 if none was ready.
     */
    private int pollRegistered(final Consumer<SelectionKey> action, final boolean arm) {
        int updated = -1;
        for (final RdmaSelectionKey key : registered) {
            if (!key.isValid() || key.rawInterestOps() == 0) {
                continue;
            }
            final int ready = check(key, arm);
            if (ready != 0) {
                updated = Math.max(updated, 0) + update(key, ready, action);
            }
        }
        return updated;
    }

    /**
     * Read a key's readiness; arm its endpoint if it is not ready and {@code arm} is set. Keys without interest are
     * neither read nor armed (a hung-up idle key costs nothing).
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
            channel.armEndpoint();
            ready = channel.translateReadyOps(interest);
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

    /**
     * Park until a key is offered, a wakeup, an interrupt, the close or the deadline.
     *
     * @return true if keys were offered and the selection should look again.
     */
    private boolean await(final long deadline) {
        waitLock.lock();
        try {
            waiting = true;
            while (maybeReady.get() == null && !wakeupPending && isOpen() && !Thread.currentThread().isInterrupted()) {
                if (deadline == 0) {
                    woken.await();
                } else {
                    final long remaining = deadline - System.nanoTime();
                    if (remaining <= 0) {
                        return false;
                    }
                    woken.awaitNanos(remaining);
                }
            }
            return maybeReady.get() != null && !wakeupPending && isOpen() && !Thread.currentThread().isInterrupted();
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            return false;
        } finally {
            waiting = false;
            waitLock.unlock();
        }
    }

    private void clearWakeup() {
        waitLock.lock();
        try {
            wakeupPending = false;
        } finally {
            waitLock.unlock();
        }
    }

    /**
     * Deregister the cancelled keys; release the endpoints of closed channels that have no registration left.
     */
    private void processDeregisterQueue() {
        final Set<SelectionKey> cancelled = cancelledKeys();
        final List<SelectionKey> drained;
        synchronized (cancelled) {
            if (cancelled.isEmpty()) {
                return;
            }
            drained = new ArrayList<>(cancelled);
            cancelled.clear();
        }
        for (final SelectionKey key : drained) {
            keys.remove(key);
            selectedKeys.remove(key);
            readyLastTime.remove(key);
            dropKey((RdmaSelectionKey) key);
        }
    }

    private void dropKey(final RdmaSelectionKey key) {
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
        final RdmaSelectableChannel channel = key.rdmaChannel();
        channel.relay().removeKey(key);
        deregister(key);
        selectedKeys.remove(key);
        if (!key.channel().isOpen() && !key.channel().isRegistered()) {
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
