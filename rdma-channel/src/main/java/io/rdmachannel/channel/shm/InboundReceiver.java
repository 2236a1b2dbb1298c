package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CompletionHandler;

/**
 * What a completion queue polls for receive completions besides its own ring: the inbound rings that peers write
 * (a queue pair's, an XRC shared receive queue's).
 */
interface InboundReceiver {
    /**
     * Hand at most {@code limit} receive completions to the handler; called under the completion queue's poll lock.
     *
     * @return how many were handed over.
     */
    int pollReceives(ShmWorkCompletion completion, CompletionHandler handler, int limit);

    /**
     * Whether {@link #pollReceives} may find something, without the poll lock ({@link
     * io.rdmachannel.channel.spi.CompletionQueue#mayHaveCompletions}); this default always answers {@code true}.
     */
    default boolean mayHaveReceives() {
        return true;
    }
}
