package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.Test;

class ShmSmokeTest {
    @Test
    void shouldSendWriteAndReadBetweenTwoDevices() throws Exception {
        final var provider = RdmaProviders.byName("shm");
        try (RdmaDevice a = provider.openDevice(null); RdmaDevice b = provider.openDevice(null)) {
            final ProtectionDomain pdA = a.allocateProtectionDomain();
            final ProtectionDomain pdB = b.allocateProtectionDomain();
            final CompletionQueue cqA = a.createCompletionQueue(64, null, 0);
            final CompletionQueue cqB = b.createCompletionQueue(64, null, 0);
            final QueuePair qpA = pdA.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(cqA).receiveCompletionQueue(cqA).maxInlineData(64));
            final QueuePair qpB = pdB.createQueuePair(new QueuePairInitAttributes()
                .sendCompletionQueue(cqB).receiveCompletionQueue(cqB));
            final MemoryRegion mrA = pdA.allocate(4096, AccessFlags.LOCAL_WRITE);
            final MemoryRegion mrB = pdB.allocate(4096,
                AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ);
            connect(qpA, qpB.number(), b.queryGid(1, 0));
            connect(qpB, qpA.number(), a.queryGid(1, 0));

            final var recv = qpB.createReceiveWorkRequest();
            recv.id(7).sge(0, mrB.address(), 100, mrB.localKey());
            qpB.postReceive(recv);
            mrA.segment().setString(0, "hello over shm");
            final var send = qpA.createSendWorkRequest();
            send.id(1).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED).sge(0, mrA.address(), 15,
                mrA.localKey());
            qpA.postSend(send);
            final List<String> seen = new ArrayList<>();
            assertEquals(1, cqA.poll(c -> seen.add(c.toString()), 8));
            assertEquals(1, cqB.poll(c -> {
                seen.add(c.toString());
                assertEquals(CompletionStatus.SUCCESS, c.status());
                assertEquals(7, c.workRequestId());
                assertEquals(15, c.byteLength());
            }, 8));
            assertEquals("hello over shm", mrB.segment().getString(0));

            mrA.segment().set(ValueLayout.JAVA_LONG, 64, 0x1122334455667788L);
            send.reset().id(2).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(mrB.address() + 512, mrB.remoteKey()).sge(0, mrA.address() + 64, 8, mrA.localKey());
            qpA.postSend(send);
            assertEquals(1, cqA.poll(c -> assertEquals(CompletionStatus.SUCCESS, c.status()), 8));
            assertEquals(0x1122334455667788L, mrB.segment().get(ValueLayout.JAVA_LONG, 512));

            send.reset().id(3).opcode(WorkRequestOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
                .remote(mrB.address(), mrB.remoteKey()).sge(0, mrA.address() + 1024, 15, mrA.localKey());
            qpA.postSend(send);
            assertEquals(1, cqA.poll(c -> assertEquals(CompletionStatus.SUCCESS, c.status()), 8));
            assertEquals("hello over shm", mrA.segment().getString(1024));

            send.reset().id(4).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
                .remote(mrB.address() + 4090, mrB.remoteKey()).sge(0, mrA.address(), 8, mrA.localKey());
            qpA.postSend(send);
            assertEquals(1, cqA.poll(c -> assertEquals(CompletionStatus.REMOTE_ACCESS_ERROR, c.status()), 8));
            assertEquals(QueuePairState.ERROR, qpA.state());
            assertEquals(QueuePairState.ERROR, qpB.state());
            System.out.println(seen + " " + qpA + " " + qpB);

            qpA.close();
            qpB.close();
            mrA.close();
            mrB.close();
            cqA.close();
            cqB.close();
            pdA.close();
            pdB.close();
        }
    }

    private static void connect(final QueuePair qp, final int remote, final byte[] gid) throws Exception {
        qp.modify(QueuePairState.INIT, new QueuePairAttributes()
            .accessFlags(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ));
        qp.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(gid)
            .remoteQueuePairNumber(remote));
        qp.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes());
    }
}
