package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CloseActions;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairEvent;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import java.util.EnumSet;

/**
 * A handle of an XRC target queue pair of the shared-memory provider: one reference in the domain's registry. The
 * queue pair's state and events live in the registry, so every handle in every process sees the same.
 *
 * <p>Not yet here: the data path. The shm provider carries no messages to target queue pairs, so moving one to
 * READY_TO_RECEIVE is refused ({@link UnsupportedOperationException}); the registry, its references, the shared state
 * and the events are complete.
 */
final class ShmXrcTargetQueuePair implements XrcTargetQueuePair {
    private static final EnumSet<QueuePairState> ANY = EnumSet.allOf(QueuePairState.class);

    private final ShmXrcDomain domain;
    private final int index;
    private final int number;
    /** [0] the next event sequence to hand over, [1] events lost; guarded by this. */
    private final long[] eventCursor;
    private final CloseActions closeActions = new CloseActions();
    private volatile boolean closed;

    ShmXrcTargetQueuePair(final ShmXrcDomain domain, final int index, final int number, final long eventSequence) {
        this.domain = domain;
        this.index = index;
        this.number = number;
        this.eventCursor = new long[] {eventSequence, 0};
    }

    @Override
    public int number() {
        return number;
    }

    @Override
    public QueuePairType type() {
        return QueuePairType.XRC_RECV;
    }

    @Override
    public XrcDomain xrcDomain() {
        return domain;
    }

    @Override
    public QueuePairState state() {
        if (closed) {
            return QueuePairState.ERROR;
        }
        final int code = domain.registry().state(index, number);
        return code < 0 ? QueuePairState.ERROR : QueuePairState.fromCode(code);
    }

    @Override
    public ProtectionDomain protectionDomain() {
        return null;
    }

    @Override
    public int maxSendWorkRequests() {
        return 0;
    }

    @Override
    public int maxReceiveWorkRequests() {
        return 0;
    }

    @Override
    public int maxInlineData() {
        return 0;
    }

    @Override
    public void modify(final QueuePairState target, final QueuePairAttributes attributes) {
        ensureOpen();
        switch (target) {
            case INIT -> {
                if (attributes == null) {
                    throw new IllegalArgumentException("moving to INIT needs attributes");
                }
                domain.registry().transition(index, number, target,
                    EnumSet.of(QueuePairState.RESET, QueuePairState.INIT), null);
            }
            case READY_TO_RECEIVE, READY_TO_SEND -> throw new UnsupportedOperationException("the shm provider "
                + "carries no messages to XRC target queue pairs yet: queue pair " + number + " cannot move to "
                + target);
            // a queue pair that takes its receives from shared receive queues reports, on entering ERROR, that it
            // will consume no more of them; every handle hears it
            case ERROR -> domain.registry().transition(index, number, target, ANY,
                QueuePairEvent.LAST_WORK_REQUEST_REACHED);
            case RESET -> domain.registry().transition(index, number, target, ANY, null);
            default -> throw new IllegalArgumentException("the shm provider does not support moving to " + target);
        }
    }

    @Override
    public SendWorkRequest createSendWorkRequest() {
        throw noSendQueue();
    }

    @Override
    public ReceiveWorkRequest createReceiveWorkRequest() {
        throw noReceiveQueue();
    }

    @Override
    public void postSend(final SendWorkRequest request) {
        throw noSendQueue();
    }

    @Override
    public void postReceive(final ReceiveWorkRequest request) {
        throw noReceiveQueue();
    }

    private IllegalStateException noSendQueue() {
        return new IllegalStateException("XRC target queue pair " + number + " has no send queue");
    }

    private IllegalStateException noReceiveQueue() {
        return new IllegalStateException("XRC target queue pair " + number + " has no receive queue: post "
            + "receives to the XRC shared receive queues of its domain");
    }

    @Override
    public int pollEvents(final EventHandler handler, final int limit) {
        ensureOpen();
        if (limit < 1) {
            throw new IllegalArgumentException("limit=" + limit + " must be at least 1");
        }
        synchronized (eventCursor) {
            return domain.registry().pollEvents(index, number, eventCursor, handler, limit);
        }
    }

    @Override
    public long lostEvents() {
        synchronized (eventCursor) {
            return eventCursor[1];
        }
    }

    @Override
    public int references() {
        ensureOpen();
        return domain.registry().references(index, number);
    }

    @Override
    public void whenClosed(final Runnable action) {
        closeActions.add(action);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("XRC target queue pair " + number + " is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        try {
            domain.registry().closeTarget(domain.opener(), index, number);
        } finally {
            domain.targetClosed(this);
            closeActions.run();
        }
    }

    @Override
    public String toString() {
        return "ShmXrcTargetQueuePair{number=" + number + ", index=" + index + ", closed=" + closed + '}';
    }
}
