package io.rdmachannel.channel.cm;

/**
 * A connection attempt or established connection as the connection manager tracks it.
 */
public interface CmConnection extends AutoCloseable {
    /**
     * Cancel an attempt in progress (the endpoint is told {@link CmEndpoint#failed}) or forget an established
     * connection (its queue pair belongs to the endpoint and is closed by it). Idempotent.
     */
    @Override
    void close();
}
