package io.rdmachannel.interop.contract;

import io.rdmachannel.interop.contract.RemoteChannels.Response;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.CancelledKeyException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectableChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectableChannel;
import java.nio.channels.spi.AbstractSelectionKey;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;
import java.util.AbstractSet;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * The selector of the {@code rdma-shm-procs} transport: one selector over channels of this JVM and channels of the
 * child JVM ({@link RemoteSocketChannel}). A channel of this JVM is registered with a real selector of this JVM (an
 * rdmachannel selector, which also takes the platform's channels), a remote one with a real selector in the child;
 * a selection waits in both at once (whichever has something first wakes the other) and applies the
 * {@link Selector} rules to the union: the selected-key set, the count of keys whose ready set changed, the action
 * variants, cancelled keys deregistered by the next selection, wakeups before and during a selection, an interrupt
 * ending a selection, {@code IllegalStateException} for a selection inside a selection action.
 */
final class SplitSelector extends AbstractSelector {
    private final Selector local;
    private final Object keyLock = new Object();
    private final Object remoteLock = new Object();
    private final Set<SelectionKey> keys = new HashSet<>();
    private final Set<SelectionKey> publicKeys = Collections.unmodifiableSet(keys);
    private final Set<SelectionKey> selected = new HashSet<>();
    private final Set<SelectionKey> publicSelected = new Ungrowable(selected);
    private final Map<Integer, SplitKey> remoteKeys = new HashMap<>();
    private final List<Integer> remoteCancels = new ArrayList<>();
    private volatile RemoteChannels host;
    private volatile int remoteSelector;
    private long selections;
    private boolean inSelect;

    private final Object wakeupLock = new Object();
    private boolean wakeupPending;
    private long remoteSelection;
    private boolean waiting;

    /**
     * A selector over {@code local} (the real selector for this JVM's channels) and, once a remote channel is
     * registered, a selector in the child.
     *
     * @param provider the provider it reports.
     * @param local    this JVM's selector, owned from now on.
     */
    SplitSelector(final SelectorProvider provider, final Selector local) {
        super(provider);
        this.local = local;
    }

    @Override
    protected SelectionKey register(final AbstractSelectableChannel channel, final int ops, final Object attachment) {
        if (!isOpen()) {
            throw new ClosedSelectorException();
        }
        final SplitKey key = new SplitKey(channel);
        key.interest = ops;
        key.attach(attachment);
        try {
            if (channel instanceof RemoteSocketChannel remote) {
                final int selector = remoteSelector(remote.host());
                key.remoteId = (Integer) remote.host().call(selector, "register", remote.id(), ops).value();
                synchronized (keyLock) {
                    remoteKeys.put(key.remoteId, key);
                }
            } else {
                key.inner = channel.register(local, ops, key);
            }
        } catch (final ClosedChannelException ex) {
            throw new IllegalStateException("closed while registering", ex);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
        synchronized (keyLock) {
            keys.add(key);
        }
        return key;
    }

    /**
     * The child's selector, opened on first use; under a lock of its own, so that a selection (which needs
     * {@code keyLock}) never waits for the child's answer. {@code host} is set before {@code remoteSelector}, which
     * is what selections test.
     */
    private int remoteSelector(final RemoteChannels channels) throws IOException {
        synchronized (remoteLock) {
            if (remoteSelector == 0) {
                final int opened = (Integer) channels.call(RemoteChannels.HOST, "openSelector").value();
                host = channels;
                remoteSelector = opened;
            }
            return remoteSelector;
        }
    }

    @Override
    public Set<SelectionKey> keys() {
        if (!isOpen()) {
            throw new ClosedSelectorException();
        }
        return publicKeys;
    }

    @Override
    public Set<SelectionKey> selectedKeys() {
        if (!isOpen()) {
            throw new ClosedSelectorException();
        }
        return publicSelected;
    }

    @Override
    public int selectNow() throws IOException {
        return doSelect(null, -1);
    }

    @Override
    public int select(final long timeout) throws IOException {
        if (timeout < 0) {
            throw new IllegalArgumentException("Negative timeout");
        }
        return doSelect(null, timeout);
    }

    @Override
    public int select() throws IOException {
        return doSelect(null, 0);
    }

    @Override
    public int select(final Consumer<SelectionKey> action, final long timeout) throws IOException {
        Objects.requireNonNull(action);
        if (timeout < 0) {
            throw new IllegalArgumentException("Negative timeout");
        }
        return doSelect(action, timeout);
    }

    @Override
    public int select(final Consumer<SelectionKey> action) throws IOException {
        Objects.requireNonNull(action);
        return doSelect(action, 0);
    }

    @Override
    public int selectNow(final Consumer<SelectionKey> action) throws IOException {
        Objects.requireNonNull(action);
        return doSelect(action, -1);
    }

    /**
     * One selection: at once for {@code timeout} -1, else for up to {@code timeout} ms (0: until something is ready
     * or a wakeup).
     */
    private int doSelect(final Consumer<SelectionKey> action, final long timeout) throws IOException {
        synchronized (this) {
            if (!isOpen()) {
                throw new ClosedSelectorException();
            }
            if (inSelect) {
                throw new IllegalStateException("A selection operation is already in progress");
            }
            inSelect = true;
            try {
                final Map<SplitKey, Integer> ready = new LinkedHashMap<>();
                final int[] cancelled = processCancelledKeys();
                final boolean remote = remoteSelector != 0 && (cancelled.length > 0 || hasRemoteKeys());
                // clears a wakeup of the local selector left by an earlier remote answer
                local.selectNow(key -> merge(ready, key));
                final long selection = ++selections;
                final boolean now;
                synchronized (wakeupLock) {
                    now = timeout < 0 || wakeupPending || !ready.isEmpty();
                    remoteSelection = remote && !now ? selection : 0;
                    waiting = !now;
                }
                final CompletableFuture<Response> answer = remote
                    ? host.callAsync(remoteSelector, "select", selection, cancelled, now ? -1L : timeout) : null;
                if (!now) {
                    if (answer != null) {
                        answer.whenComplete((value, failure) -> wakeLocalIfWaiting());
                    }
                    try {
                        begin();
                        local.select(key -> merge(ready, key), timeout);
                    } finally {
                        end();
                        synchronized (wakeupLock) {
                            waiting = false;
                        }
                    }
                }
                if (answer != null) {
                    if (!now && !answer.isDone()) {
                        host.callAsync(remoteSelector, "wakeup", selection);
                    }
                    mergeRemote(ready, (long[]) RemoteChannels.await(answer).value());
                }
                synchronized (wakeupLock) {
                    wakeupPending = false;
                    remoteSelection = 0;
                }
                return apply(ready, action);
            } finally {
                inSelect = false;
            }
        }
    }

    private void wakeLocalIfWaiting() {
        synchronized (wakeupLock) {
            if (waiting) {
                local.wakeup();
            }
        }
    }

    private boolean hasRemoteKeys() {
        synchronized (keyLock) {
            return !remoteKeys.isEmpty();
        }
    }

    private static void merge(final Map<SplitKey, Integer> ready, final SelectionKey inner) {
        if (inner.attachment() instanceof SplitKey key) {
            ready.merge(key, inner.readyOps(), (a, b) -> a | b);
        }
    }

    private void mergeRemote(final Map<SplitKey, Integer> ready, final long[] pairs) {
        synchronized (keyLock) {
            for (int i = 0; i < pairs.length; i += 2) {
                final SplitKey key = remoteKeys.get((int) pairs[i]);
                if (key != null) {
                    ready.merge(key, (int) pairs[i + 1], (a, b) -> a | b);
                }
            }
        }
    }

    /**
     * The selection rules: with an action, each ready key's ready set is what is ready now and the action sees it;
     * without, a key enters the selected set with what is ready, or a selected key gains the new bits, and only a key
     * that changed counts.
     */
    private int apply(final Map<SplitKey, Integer> ready, final Consumer<SelectionKey> action) {
        int count = 0;
        for (final Map.Entry<SplitKey, Integer> entry : ready.entrySet()) {
            final SplitKey key = entry.getKey();
            if (!key.isValid()) {
                continue;
            }
            final int ops = entry.getValue() & key.interest;
            if (ops == 0) {
                continue;
            }
            if (action != null) {
                key.ready = ops;
                action.accept(key);
                if (!isOpen()) {
                    throw new ClosedSelectorException();
                }
                count++;
            } else if (selected.contains(key)) {
                if ((ops & ~key.ready) != 0) {
                    key.ready |= ops;
                    count++;
                }
            } else {
                key.ready = ops;
                selected.add(key);
                count++;
            }
        }
        return count;
    }

    /**
     * Deregisters the cancelled keys: a local key's inner key is cancelled (deregistered by the local selection that
     * follows), a remote key's id is returned for the child's selection to cancel.
     */
    private int[] processCancelledKeys() {
        final Set<SelectionKey> cancelled = cancelledKeys();
        final List<Integer> remoteIds;
        synchronized (cancelled) {
            for (final SelectionKey cancelledKey : cancelled) {
                final SplitKey key = (SplitKey) cancelledKey;
                synchronized (keyLock) {
                    keys.remove(key);
                    if (key.inner != null) {
                        key.inner.cancel();
                    } else if (remoteKeys.remove(key.remoteId) != null) {
                        remoteCancels.add(key.remoteId);
                    }
                }
                selected.remove(key);
                deregister(key);
            }
            cancelled.clear();
        }
        synchronized (keyLock) {
            remoteIds = List.copyOf(remoteCancels);
            remoteCancels.clear();
        }
        return remoteIds.stream().mapToInt(Integer::intValue).toArray();
    }

    @Override
    public Selector wakeup() {
        final long inFlight;
        synchronized (wakeupLock) {
            wakeupPending = true;
            inFlight = remoteSelection;
        }
        local.wakeup();
        if (inFlight != 0) {
            try {
                host.callAsync(remoteSelector, "wakeup", inFlight);
            } catch (final IOException ex) {
                // the child is gone: the selection in flight fails with that
            }
        }
        return this;
    }

    @Override
    protected void implCloseSelector() throws IOException {
        wakeup();
        synchronized (this) {
            try {
                local.close();
            } finally {
                final List<SelectionKey> all;
                synchronized (keyLock) {
                    all = List.copyOf(keys);
                    keys.clear();
                    remoteKeys.clear();
                }
                for (final SelectionKey key : all) {
                    key.cancel();
                    deregister((AbstractSelectionKey) key);
                }
                selected.clear();
                if (remoteSelector != 0) {
                    host.call(remoteSelector, "close");
                }
            }
        }
    }

    private void changeInterest(final SplitKey key, final int ops) {
        if (key.inner != null) {
            key.inner.interestOps(ops);
            return;
        }
        try {
            host.call(remoteSelector, "interestOps", key.remoteId, ops);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * A key of this selector: the channel's key on the local selector, or the id of its key on the child's.
     */
    private final class SplitKey extends AbstractSelectionKey {
        private final SelectableChannel channel;
        private volatile SelectionKey inner;
        private volatile int remoteId;
        private volatile int interest;
        private volatile int ready;

        SplitKey(final SelectableChannel channel) {
            this.channel = channel;
        }

        @Override
        public SelectableChannel channel() {
            return channel;
        }

        @Override
        public Selector selector() {
            return SplitSelector.this;
        }

        @Override
        public int interestOps() {
            ensureValid();
            return interest;
        }

        @Override
        public SelectionKey interestOps(final int ops) {
            ensureValid();
            if ((ops & ~channel.validOps()) != 0) {
                throw new IllegalArgumentException("Invalid interest ops: " + ops);
            }
            changeInterest(this, ops);
            interest = ops;
            return this;
        }

        @Override
        public int readyOps() {
            ensureValid();
            return ready;
        }

        private void ensureValid() {
            if (!isValid()) {
                throw new CancelledKeyException();
            }
        }
    }

    /**
     * The selected-key set as users see it: keys may be removed, not added.
     */
    private static final class Ungrowable extends AbstractSet<SelectionKey> {
        private final Set<SelectionKey> keys;

        Ungrowable(final Set<SelectionKey> keys) {
            this.keys = keys;
        }

        @Override
        public Iterator<SelectionKey> iterator() {
            return keys.iterator();
        }

        @Override
        public int size() {
            return keys.size();
        }

        @Override
        public boolean contains(final Object key) {
            return keys.contains(key);
        }

        @Override
        public boolean remove(final Object key) {
            return keys.remove(key);
        }

        @Override
        public void clear() {
            keys.clear();
        }
    }
}
