package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_SIZE;
import static io.rdmachannel.ffm.layout.IbvWorkRequestLayouts.SEND_WR_XRC_REMOTE_SRQN;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

/**
 * The send work request as libibverbs reads it ({@code struct ibv_send_wr}), without a device: the XRC remote SRQ
 * number lands in {@code qp_type.xrc.remote_srqn}, beside and not over the RDMA fields, and a reset clears it.
 */
class NativeSendWorkRequestTest {
    @Test
    void shouldWriteTheRemoteSharedReceiveQueueNumberWhereTheDriverReadsIt() {
        try (Arena arena = Arena.ofConfined()) {
            NativeSendWorkRequest request = new NativeSendWorkRequest(this, 1, arena);
            MemorySegment wr = request.wrPointer().reinterpret(SEND_WR_SIZE);
            request.opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM).remote(0x1122334455667788L, 0x99AABBCC)
                .remoteSharedReceiveQueue(0xABCDEF).immediate(7);
            assertEquals(0xABCDEF, wr.get(JAVA_INT, SEND_WR_XRC_REMOTE_SRQN));
            assertEquals(0xABCDEF, request.remoteSharedReceiveQueue());
            assertEquals(0x1122334455667788L, request.remoteAddress());
            assertEquals(0x99AABBCC, request.remoteKey());
            request.reset();
            assertEquals(0, wr.get(JAVA_INT, SEND_WR_XRC_REMOTE_SRQN));
            assertEquals(0, request.remoteSharedReceiveQueue());
        }
    }
}
