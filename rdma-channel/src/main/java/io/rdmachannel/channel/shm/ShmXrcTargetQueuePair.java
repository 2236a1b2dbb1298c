package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.AccessFlags;
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

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumSet;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A handle of an XRC target queue pair of the shared-memory provider: one reference in the domain's registry. The
 * queue pair's state, the initiator it is connected to and its events live in the registry, so every handle in every
 * process sees the same.
 *
 * <p>Moving it to READY_TO_RECEIVE connects it to one XRC initiator (the attributes' remote GID and queue pair) and
 * names it for initiators in this device's folder ({@code xtgt-<number>}, a link to the registry, removed when this
 * handle closes or the queue pair is RESET through it): the initiator connects to the number through this device's
 * GID, as a CM exchange gives it. Its requests then land in the XRC shared receive queues of the domain they name,
 * whichever process of the host made them ({@link ShmQueuePair}, {@link XrcReceivePeer}).
 */
final class ShmXrcTargetQueuePair implements XrcTargetQueuePair {
    private static final Logger LOG = LoggerFactory.getLogger(ShmXrcTargetQueuePair.class);
    private static final EnumSet<QueuePairState> ANY = EnumSet.allOf(QueuePairState.class);

    private final ShmXrcDomain domain;
    private final int index;
    private final int number;
    /** [0] the next event sequence to hand over, [1] events lost; guarded by this. */
    private final long[] eventCursor;
    private final CloseActions closeActions = new CloseActions();
    /** Whether this handle named the queue pair in the device's folder; guarded by this. */
    private boolean named;
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
    public void modify(final QueuePairState target, final QueuePairAttributes attributes) throws IOException {
        ensureOpen();
        switch (target) {
            case INIT -> {
                if (attributes == null) {
                    throw new IllegalArgumentException("moving to INIT needs attributes");
                }
                domain.registry().transition(index, number, target,
                    EnumSet.of(QueuePairState.RESET, QueuePairState.INIT), null);
                domain.registry().setTargetAccess(index, number, attributes.accessFlags() & AccessFlags.REMOTE);
            }
            case READY_TO_RECEIVE -> {
                if (attributes == null || attributes.remoteGid() == null
                    || attributes.remoteQueuePairNumber() <= 0 || attributes.remoteQueuePairNumber() > 0xFFFFFF) {
                    throw new IllegalArgumentException("moving to READY_TO_RECEIVE needs the remote GID and queue "
                        + "pair number of the XRC initiator: " + attributes);
                }
                // named first: a target in READY_TO_RECEIVE that its initiator could not find would be of no use
                name();
                try {
                    domain.registry().connectTarget(index, number, attributes.remoteGid(),
                        attributes.remoteQueuePairNumber(), attributes.minRnrTimer());
                } catch (final RuntimeException ex) {
                    unname();
                    throw ex;
                }
            }
            case READY_TO_SEND -> domain.registry().transition(index, number, target,
                EnumSet.of(QueuePairState.READY_TO_RECEIVE, QueuePairState.READY_TO_SEND), null);
            // a queue pair that takes its receives from shared receive queues reports, on entering ERROR, that it
            // will consume no more of them; every handle hears it
            case ERROR -> domain.registry().transition(index, number, target, ANY,
                QueuePairEvent.LAST_WORK_REQUEST_REACHED);
            case RESET -> {
                domain.registry().transition(index, number, target, ANY, null);
                unname();
            }
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

    /**
     * Name the queue pair for initiators in this device's folder: a link to the domain's registry.
     */
    private synchronized void name() throws IOException {
        final Path link = domain.shmDevice().folder().resolve(XrcTargetPeer.linkName(number));
        // a link left by a target of the same number of another domain, or of this one before a RESET elsewhere, is
        // replaced
        ShmDirectory.linkReplacing(link, Path.of("..").resolve(domain.registry().path().getFileName()));
        named = true;
    }

    private synchronized void unname() {
        if (!named) {
            return;
        }
        named = false;
        try {
            Files.deleteIfExists(domain.shmDevice().folder().resolve(XrcTargetPeer.linkName(number)));
        } catch (final IOException ex) {
            LOG.debug("cannot remove the name of XRC target queue pair {}", number, ex);
        }
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
        unname();
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
