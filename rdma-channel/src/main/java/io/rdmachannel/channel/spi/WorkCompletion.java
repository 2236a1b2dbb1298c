package io.rdmachannel.channel.spi;

/**
 * A work completion: a reusable flyweight valid only inside {@link CompletionHandler#onCompletion(WorkCompletion)}.
 */
public interface WorkCompletion {
    /**
     * The id the work request was posted with.
     *
     * @return the wr_id.
     */
    long workRequestId();

    /**
     * The outcome.
     *
     * @return the status.
     */
    CompletionStatus status();

    /**
     * What completed. Only defined for {@link CompletionStatus#SUCCESS}: flushed and failed completions carry the
     * opcode of the queue they came from ({@link CompletionOpcode#RECV} for receives), as real devices do not
     * guarantee more.
     *
     * @return the opcode.
     */
    CompletionOpcode opcode();

    /**
     * For receives: the number of bytes received; for a receive consumed by an RDMA WRITE WITH IMMEDIATE, the bytes
     * the writer placed (at the address it chose). For RDMA READ: the bytes read.
     *
     * @return the byte count.
     */
    int byteLength();

    /**
     * Whether {@link #immediate()} is valid.
     *
     * @return true if the completed receive was consumed by a request with an immediate.
     */
    boolean hasImmediate();

    /**
     * The immediate value as the sender gave it (the provider handles the wire's byte order).
     *
     * @return the immediate.
     */
    int immediate();

    /**
     * The local queue pair the completion belongs to.
     *
     * @return the QP number.
     */
    int queuePairNumber();

    /**
     * A provider-specific detail for error statuses, 0 if none.
     *
     * @return the vendor error.
     */
    int vendorError();
}
