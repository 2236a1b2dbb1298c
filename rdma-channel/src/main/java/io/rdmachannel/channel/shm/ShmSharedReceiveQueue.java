package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.SharedReceiveQueue;

import java.io.IOException;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A shared receive queue of the shared-memory provider, in its own shared file (a pooled {@code f-<id>} that the
 * blocks of its queue pairs name). Senders that find it empty retry after their RNR delay.
 */
final class ShmSharedReceiveQueue implements SharedReceiveQueue {
    private static final Logger LOG = LoggerFactory.getLogger(ShmSharedReceiveQueue.class);
    private final ShmProtectionDomain domain;
    private final int id;
    private final SharedFile file;
    private final ReceiveQueue queue;
    private int users;
    private volatile boolean tainted;
    private volatile boolean xrc;
    private volatile boolean closed;
    private volatile LimitHandler limitHandler;

    private ShmSharedReceiveQueue(final ShmProtectionDomain domain, final int id, final SharedFile file,
        final ReceiveQueue queue) {
        this.domain = domain;
        this.id = id;
        this.file = file;
        this.queue = queue;
    }

    static ShmSharedReceiveQueue create(final ShmProtectionDomain domain, final int maxWorkRequests, final int maxSge)
        throws IOException {
        final ShmDevice device = domain.shmDevice();
        final int id = device.nextObjectId();
        final SharedFile file = device.filePool().acquire(ReceiveQueue.regionLength(maxWorkRequests, maxSge));
        final ShmSharedReceiveQueue srq;
        try {
            srq = new ShmSharedReceiveQueue(domain, id, file,
                ReceiveQueue.format(file.segment(), "shared receive queue " + id, 0, maxWorkRequests, maxSge,
                    true));
        } catch (final RuntimeException ex) {
            device.filePool().release(file);
            throw ex;
        }
        device.addSharedReceiveQueue(srq);
        return srq;
    }

    int fileId() {
        return file.id();
    }

    /**
     * A queue pair of this queue closed while a peer access to it did not end: the file must not be reused.
     */
    void taint() {
        tainted = true;
    }

    int id() {
        return id;
    }

    /**
     * The queue is an XRC shared receive queue: any XRC initiator may deliver into it, and tell of its limit.
     */
    void markXrc() {
        xrc = true;
    }

    boolean isXrc() {
        return xrc;
    }

    ReceiveQueue queue() {
        return queue;
    }

    ShmProtectionDomain domain() {
        return domain;
    }

    @Override
    public ReceiveWorkRequest createReceiveWorkRequest() {
        ensureOpen();
        return new ShmReceiveWorkRequest(this, queue.maxSge());
    }

    @Override
    public void postReceive(final ReceiveWorkRequest request) {
        ensureOpen();
        final ShmReceiveWorkRequest receive = ShmQueuePair.checkReceive(request, domain, queue.maxSge());
        queue.post(receive);
    }

    @Override
    public void armLimit(final int limit, final LimitHandler handler) {
        if (limit < 0 || limit > queue.capacity()) {
            throw new IllegalArgumentException("limit=" + limit + " is outside [0, " + queue.capacity() + "]");
        }
        if (limit > 0 && handler == null) {
            throw new IllegalArgumentException("arming a limit needs a handler");
        }
        ensureOpen();
        limitHandler = limit == 0 ? null : handler;
        queue.armLimit(limit);
    }

    /**
     * A sender reported the armed limit reached (on the agent thread): run the handler once.
     */
    void onLimitReached() {
        final LimitHandler handler = limitHandler;
        if (handler == null || closed) {
            return;
        }
        limitHandler = null;
        try {
            handler.onLimitReached(this);
        } catch (final RuntimeException ex) {
            LOG.warn("the limit handler of shared receive queue {} failed", id, ex);
        }
    }

    @Override
    public int maxWorkRequests() {
        return queue.capacity();
    }

    synchronized void attach() {
        ensureOpen();
        users++;
    }

    synchronized void detach() {
        users--;
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("shared receive queue " + id + " is closed");
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (users != 0) {
                throw new IllegalStateException("shared receive queue " + id + " is still used by " + users
                    + " queue pairs: close them first");
            }
            closed = true;
        }
        domain.shmDevice().removeSharedReceiveQueue(this);
        if (tainted) {
            file.close();
        } else {
            domain.shmDevice().filePool().release(file);
        }
        domain.childClosed(ResourceCounter.Kind.SHARED_RECEIVE_QUEUE);
    }

    @Override
    public String toString() {
        return "ShmSharedReceiveQueue{id=" + id + ", capacity=" + queue.capacity() + ", closed=" + closed + '}';
    }
}
