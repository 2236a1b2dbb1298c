package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_BYTE_LEN;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_IMM_DATA;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_OPCODE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_QP_NUM;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_SIZE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_STATUS;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_VENDOR_ERR;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_WC_FLAGS;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.WC_WR_ID;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.WorkCompletion;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * A flyweight over one {@code struct ibv_wc} of a completion queue's poll array. The immediate is stored in network
 * order ({@code __be32}) and returned as the sender gave it.
 *
 * <p>Devices leave the opcode of a failed completion undefined. An opcode outside the SPI's set is reported for a
 * failed completion as {@link CompletionOpcode#RECV} when its receive bit (128) is set and as
 * {@link CompletionOpcode#SEND} otherwise.
 */
final class NativeWorkCompletion implements WorkCompletion {
    private static final ValueLayout.OfInt BIG_ENDIAN_INT = JAVA_INT.withOrder(ByteOrder.BIG_ENDIAN);
    private static final int RECEIVE_BIT = 128;

    private final MemorySegment array;
    private long offset;

    NativeWorkCompletion(MemorySegment array) {
        this.array = array;
    }

    void wrap(int index) {
        offset = index * WC_SIZE;
    }

    @Override
    public long workRequestId() {
        return array.get(JAVA_LONG, offset + WC_WR_ID);
    }

    @Override
    public CompletionStatus status() {
        return CompletionStatus.fromCode(array.get(JAVA_INT, offset + WC_STATUS));
    }

    @Override
    public CompletionOpcode opcode() {
        int code = array.get(JAVA_INT, offset + WC_OPCODE);
        return switch (code) {
            case 0 -> CompletionOpcode.SEND;
            case 1 -> CompletionOpcode.RDMA_WRITE;
            case 2 -> CompletionOpcode.RDMA_READ;
            case RECEIVE_BIT -> CompletionOpcode.RECV;
            case RECEIVE_BIT + 1 -> CompletionOpcode.RECV_RDMA_WITH_IMM;
            default -> {
                if (status() == CompletionStatus.SUCCESS) {
                    throw new IllegalStateException("unknown completion opcode: code=" + code);
                }
                yield (code & RECEIVE_BIT) != 0 ? CompletionOpcode.RECV : CompletionOpcode.SEND;
            }
        };
    }

    @Override
    public int byteLength() {
        return array.get(JAVA_INT, offset + WC_BYTE_LEN);
    }

    @Override
    public boolean hasImmediate() {
        return (array.get(JAVA_INT, offset + WC_WC_FLAGS) & VerbsConstants.IBV_WC_WITH_IMM) != 0;
    }

    @Override
    public int immediate() {
        return array.get(BIG_ENDIAN_INT, offset + WC_IMM_DATA);
    }

    @Override
    public int queuePairNumber() {
        return array.get(JAVA_INT, offset + WC_QP_NUM);
    }

    @Override
    public int vendorError() {
        return array.get(JAVA_INT, offset + WC_VENDOR_ERR);
    }

    @Override
    public String toString() {
        return "NativeWorkCompletion{id=" + workRequestId() + ", status=" + status() + ", opcode=" + opcode()
            + ", byteLength=" + byteLength() + ", immediate=" + (hasImmediate() ? immediate() : "-")
            + ", qp=" + queuePairNumber() + ", vendorError=" + vendorError() + '}';
    }
}
