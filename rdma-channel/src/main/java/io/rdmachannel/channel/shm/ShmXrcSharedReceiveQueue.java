package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcSharedReceiveQueue;

/**
 * An XRC shared receive queue of the shared-memory provider: a shared receive queue of its protection domain, with a
 * number registered in the XRC domain's registry.
 */
final class ShmXrcSharedReceiveQueue implements XrcSharedReceiveQueue {
    private final ShmXrcDomain domain;
    private final ShmSharedReceiveQueue queue;
    private final ShmCompletionQueue completionQueue;
    private final int number;
    private boolean closed;

    ShmXrcSharedReceiveQueue(final ShmXrcDomain domain, final ShmSharedReceiveQueue queue,
        final ShmCompletionQueue completionQueue, final int number) {
        this.domain = domain;
        this.queue = queue;
        this.completionQueue = completionQueue;
        this.number = number;
    }

    @Override
    public int number() {
        return number;
    }

    @Override
    public XrcDomain xrcDomain() {
        return domain;
    }

    @Override
    public CompletionQueue completionQueue() {
        return completionQueue;
    }

    @Override
    public ReceiveWorkRequest createReceiveWorkRequest() {
        return queue.createReceiveWorkRequest();
    }

    @Override
    public void postReceive(final ReceiveWorkRequest request) {
        queue.postReceive(request);
    }

    @Override
    public void armLimit(final int limit, final LimitHandler handler) {
        queue.armLimit(limit, handler == null ? null : reached -> handler.onLimitReached(this));
    }

    @Override
    public int maxWorkRequests() {
        return queue.maxWorkRequests();
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            queue.close();
            closed = true;
        }
        try {
            domain.registry().destroySharedReceiveQueue(number);
        } finally {
            completionQueue.detach();
            domain.sharedReceiveQueueClosed(this);
        }
    }

    @Override
    public String toString() {
        return "ShmXrcSharedReceiveQueue{number=" + number + ", queue=" + queue + ", closed=" + closed + '}';
    }
}
