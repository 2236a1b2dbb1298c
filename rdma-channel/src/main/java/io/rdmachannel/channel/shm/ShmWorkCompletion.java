package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.WorkCompletion;

/**
 * The reusable completion flyweight a completion queue hands to its handler.
 */
final class ShmWorkCompletion implements WorkCompletion {
    long workRequestId;
    CompletionStatus status;
    CompletionOpcode opcode;
    int byteLength;
    boolean hasImmediate;
    int immediate;
    int queuePairNumber;
    int vendorError;

    @Override
    public long workRequestId() {
        return workRequestId;
    }

    @Override
    public CompletionStatus status() {
        return status;
    }

    @Override
    public CompletionOpcode opcode() {
        return opcode;
    }

    @Override
    public int byteLength() {
        return byteLength;
    }

    @Override
    public boolean hasImmediate() {
        return hasImmediate;
    }

    @Override
    public int immediate() {
        return immediate;
    }

    @Override
    public int queuePairNumber() {
        return queuePairNumber;
    }

    @Override
    public int vendorError() {
        return vendorError;
    }

    @Override
    public String toString() {
        return "WorkCompletion{wrId=" + workRequestId + ", status=" + status + ", opcode=" + opcode
            + ", byteLength=" + byteLength + (hasImmediate ? ", immediate=0x" + Integer.toHexString(immediate) : "")
            + ", qp=" + queuePairNumber + '}';
    }
}
