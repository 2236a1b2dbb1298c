package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.spi.CompletionStatus.SUCCESS;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.shm.ShmFixture.Completion;
import io.rdmachannel.channel.shm.ShmFixture.Config;
import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.shm.ShmFixture.Side;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every opcode between two devices, signalling, inline data, scatter/gather lists, zero-length requests and the
 * order of completions.
 */
@Timeout(20)
class ShmOpcodeTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    private static void fill(final MemoryRegion mr, final long offset, final int length, final int seed) {
        for (int i = 0; i < length; i++) {
            mr.segment().set(ValueLayout.JAVA_BYTE, offset + i, (byte) (seed + i));
        }
    }

    private static byte[] bytes(final MemoryRegion mr, final long offset, final int length) {
        return mr.segment().asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE);
    }

    private static byte[] pattern(final int length, final int seed) {
        final byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (seed + i);
        }
        return bytes;
    }

    private static void assertBytes(final byte[] expected, final byte[] actual) {
        assertEquals(HexFormat.of().formatHex(expected), HexFormat.of().formatHex(actual));
    }

    @Test
    void shouldSendIntoThePostedReceive() throws Exception {
        final Pair pair = fixture.pair();
        pair.b.postReceive(7, 100, 200);
        fill(pair.a.mr, 10, 150, 1);
        pair.a.postSend(WorkRequestOpcode.SEND, 1, SendFlags.SIGNALED, 10, 150);
        assertEquals(new Completion(1, SUCCESS, CompletionOpcode.SEND, 150, false, 0, pair.a.qp.number()),
            pair.a.awaitOne());
        assertEquals(new Completion(7, SUCCESS, CompletionOpcode.RECV, 150, false, 0, pair.b.qp.number()),
            pair.b.awaitOne());
        assertBytes(pattern(150, 1), bytes(pair.b.mr, 100, 150));
        assertBytes(new byte[50], bytes(pair.b.mr, 250, 50));
    }

    /**
     * Receives posted in one step are taken in order, each with its own id; a step the queue has no room for posts
     * nothing; a step of one or of none is allowed.
     */
    @Test
    void shouldPostReceivesInOneStep() throws Exception {
        final Pair pair = fixture.pair(new Config().initB(b -> b.maxReceiveWorkRequests(4)));
        final ReceiveWorkRequest template = pair.b.qp.createReceiveWorkRequest().sge(0, pair.b.mr.address() + 256,
            64, pair.b.mr.localKey());
        pair.b.qp.postReceives(template, 100, 3);
        final IllegalStateException full = assertThrows(IllegalStateException.class,
            () -> pair.b.qp.postReceives(template, 200, 2));
        assertTrue(full.getMessage().endsWith(" is full: 4 receives are outstanding; poll their completions first (2 "
            + "to post, 1 free)"), full.getMessage());
        pair.b.qp.postReceives(template, 300, 0);
        pair.b.qp.postReceives(template, 300, 1);
        assertThrows(IllegalArgumentException.class, () -> pair.b.qp.postReceives(template, 400, -1));
        for (int i = 0; i < 4; i++) {
            fill(pair.a.mr, 16 * i, 16, i);
            pair.a.postSend(WorkRequestOpcode.SEND, i, SendFlags.SIGNALED, 16 * i, 8 + i);
        }
        assertEquals(List.of(0L, 1L, 2L, 3L), pair.a.await(4).stream().map(Completion::id).toList());
        final List<Completion> received = pair.b.await(4);
        assertEquals(List.of(100L, 101L, 102L, 300L), received.stream().map(Completion::id).toList());
        assertEquals(List.of(8, 9, 10, 11), received.stream().map(Completion::byteLength).toList());
        assertBytes(pattern(11, 3), bytes(pair.b.mr, 256, 11));
    }

    @Test
    void shouldSendWithImmediate() throws Exception {
        final Pair pair = fixture.pair();
        pair.b.postReceive(7, 0, 64);
        fill(pair.a.mr, 0, 16, 3);
        pair.a.qp.postSend(pair.a.send.reset().id(2).opcode(WorkRequestOpcode.SEND_WITH_IMM)
            .flags(SendFlags.SIGNALED).immediate(0xCAFEBABE).sge(0, pair.a.mr.address(), 16, pair.a.mr.localKey()));
        assertEquals(new Completion(2, SUCCESS, CompletionOpcode.SEND, 16, false, 0, pair.a.qp.number()),
            pair.a.awaitOne());
        assertEquals(new Completion(7, SUCCESS, CompletionOpcode.RECV, 16, true, 0xCAFEBABE, pair.b.qp.number()),
            pair.b.awaitOne());
        assertBytes(pattern(16, 3), bytes(pair.b.mr, 0, 16));
    }

    @Test
    void shouldWriteWithoutConsumingAReceive() throws Exception {
        final Pair pair = fixture.pair();
        pair.b.postReceive(7, 0, 64);
        fill(pair.a.mr, 0, 32, 5);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 3, SendFlags.SIGNALED, 0, 32, pair.b.mr.address() + 1000,
            pair.b.mr.remoteKey());
        final Completion write = pair.a.awaitOne();
        assertEquals(3, write.id());
        assertEquals(SUCCESS, write.status());
        assertEquals(CompletionOpcode.RDMA_WRITE, write.opcode());
        assertBytes(pattern(32, 5), bytes(pair.b.mr, 1000, 32));
        assertEquals(List.of(), pair.b.poll());
        // the receive is still there for the next SEND
        pair.a.postSend(WorkRequestOpcode.SEND, 4, SendFlags.SIGNALED, 0, 4);
        assertEquals(4, pair.a.awaitOne().id());
        assertEquals(7, pair.b.awaitOne().id());
    }

    @Test
    void shouldWriteWithImmediateAndConsumeAReceive() throws Exception {
        final Pair pair = fixture.pair();
        pair.b.postReceive(7, 0, 64);
        fill(pair.a.mr, 0, 48, 9);
        pair.a.qp.postSend(pair.a.send.reset().id(5).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM)
            .flags(SendFlags.SIGNALED).immediate(0x12345678).remote(pair.b.mr.address() + 2048, pair.b.mr.remoteKey())
            .sge(0, pair.a.mr.address(), 48, pair.a.mr.localKey()));
        final Completion write = pair.a.awaitOne();
        assertEquals(5, write.id());
        assertEquals(SUCCESS, write.status());
        assertEquals(CompletionOpcode.RDMA_WRITE, write.opcode());
        assertEquals(new Completion(7, SUCCESS, CompletionOpcode.RECV_RDMA_WITH_IMM, 48, true, 0x12345678,
            pair.b.qp.number()), pair.b.awaitOne());
        assertBytes(pattern(48, 9), bytes(pair.b.mr, 2048, 48));
        assertBytes(new byte[64], bytes(pair.b.mr, 0, 64));
    }

    @Test
    void shouldReadRemoteMemory() throws Exception {
        final Pair pair = fixture.pair();
        fill(pair.b.mr, 512, 100, 11);
        pair.a.postRdma(WorkRequestOpcode.RDMA_READ, 6, SendFlags.SIGNALED, 3000, 100, pair.b.mr.address() + 512,
            pair.b.mr.remoteKey());
        assertEquals(new Completion(6, SUCCESS, CompletionOpcode.RDMA_READ, 100, false, 0, pair.a.qp.number()),
            pair.a.awaitOne());
        assertBytes(pattern(100, 11), bytes(pair.a.mr, 3000, 100));
        assertEquals(List.of(), pair.b.poll());
    }

    @Test
    void shouldCompleteAZeroLengthReadWithoutTouchingMemory() throws Exception {
        final Pair pair = fixture.pair();
        fill(pair.a.mr, 0, 16, 3);
        pair.a.postRdma(WorkRequestOpcode.RDMA_READ, 7, SendFlags.SIGNALED, 0, 0, pair.b.mr.address(),
            pair.b.mr.remoteKey());
        assertEquals(new Completion(7, SUCCESS, CompletionOpcode.RDMA_READ, 0, false, 0, pair.a.qp.number()),
            pair.a.awaitOne());
        assertBytes(pattern(16, 3), bytes(pair.a.mr, 0, 16));
    }

    @Test
    void shouldUseRegisteredMemoryAsLocalSourceAndReadTarget() throws Exception {
        final Pair pair = fixture.pair();
        final Arena arena = fixture.own(Arena.ofShared());
        final MemorySegment memory = arena.allocate(256, 8);
        final MemoryRegion local = fixture.own(pair.a.pd.register(memory, ShmFixture.FULL_ACCESS
            & ~AccessFlags.REMOTE));
        memory.asSlice(0, 16).copyFrom(MemorySegment.ofArray(pattern(16, 20)));
        pair.a.qp.postSend(pair.a.send.reset().id(1).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .remote(pair.b.mr.address(), pair.b.mr.remoteKey()).sge(0, local.address(), 16, local.localKey()));
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertBytes(pattern(16, 20), bytes(pair.b.mr, 0, 16));
        fill(pair.b.mr, 100, 8, 40);
        pair.a.qp.postSend(pair.a.send.reset().id(2).opcode(WorkRequestOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
            .remote(pair.b.mr.address() + 100, pair.b.mr.remoteKey()).sge(0, local.address() + 128, 8,
                local.localKey()));
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertBytes(pattern(8, 40), memory.asSlice(128, 8).toArray(ValueLayout.JAVA_BYTE));
        final ReceiveWorkRequest recv = pair.a.qp.createReceiveWorkRequest().sge(0, local.address(), 16,
            local.localKey());
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> pair.a.qp.postReceive(recv));
        assertEquals("the shm provider can only receive into memory from ProtectionDomain.allocate(..): sge 0 uses "
            + local, ex.getMessage());
    }

    @Test
    void shouldCompleteOnlySignalledRequestsAndRetireEarlierSlots() throws Exception {
        final Pair pair = fixture.pair(new Config().initA(a -> a.maxSendWorkRequests(4)));
        final long target = pair.b.mr.address();
        final int rkey = pair.b.mr.remoteKey();
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 3; i++) {
                pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, round * 10 + i, 0, 0, 8, target, rkey);
            }
            assertEquals(List.of(), pair.a.poll());
            pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, round * 10 + 3, SendFlags.SIGNALED, 0, 8, target, rkey);
            assertEquals(List.of(round * 10 + 3L), pair.a.await(1).stream().map(Completion::id).toList());
        }
        // unsignalled requests keep their slots until a later signalled completion is polled
        for (int i = 0; i < 4; i++) {
            pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 100 + i, 0, 0, 8, target, rkey);
        }
        final IllegalStateException ex = assertThrows(IllegalStateException.class,
            () -> pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 104, SendFlags.SIGNALED, 0, 8, target, rkey));
        assertEquals("send queue of queue pair " + pair.a.qp.number() + " is full: 4 requests are outstanding; "
            + "poll their completions first", ex.getMessage());
        assertEquals(List.of(), pair.a.poll());
    }

    @Test
    void shouldSignalEveryRequestWithSignalAll() throws Exception {
        final Pair pair = fixture.pair(new Config().initA(a -> a.signalAll(true).maxSendWorkRequests(2)));
        pair.b.postReceive(1, 0, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 10, 0, 0, 8);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 11, 0, 0, 8, pair.b.mr.address(), pair.b.mr.remoteKey());
        assertEquals(List.of(10L, 11L), pair.a.await(2).stream().map(Completion::id).toList());
        pair.a.postRdma(WorkRequestOpcode.RDMA_READ, 12, 0, 0, 8, pair.b.mr.address(), pair.b.mr.remoteKey());
        assertEquals(new Completion(12, SUCCESS, CompletionOpcode.RDMA_READ, 8, false, 0, pair.a.qp.number()),
            pair.a.awaitOne());
    }

    @Test
    void shouldCopyInlineDataAtPostTime() throws Exception {
        final Pair pair = fixture.pair(new Config().initA(a -> a.maxInlineData(64).maxSendSge(2)));
        final Arena arena = fixture.own(Arena.ofShared());
        final MemorySegment buffer = arena.allocate(64);
        buffer.copyFrom(MemorySegment.ofArray(pattern(64, 1)));
        // no receive is posted yet: the SEND waits in the send queue while the buffer is rewritten
        pair.a.qp.postSend(pair.a.send.reset().id(1).opcode(WorkRequestOpcode.SEND)
            .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, buffer.address(), 64, 0));
        buffer.fill((byte) 0x77);
        pair.a.qp.postSend(pair.a.send.reset().id(2).opcode(WorkRequestOpcode.RDMA_WRITE)
            .flags(SendFlags.SIGNALED | SendFlags.INLINE).remote(pair.b.mr.address() + 1024, pair.b.mr.remoteKey())
            .sge(0, buffer.address(), 30, 0).sge(1, buffer.address() + 40, 10, 0));
        buffer.fill((byte) 0x55);
        assertEquals(List.of(), pair.a.poll());
        pair.b.postReceive(9, 0, 64);
        assertEquals(List.of(1L, 2L), pair.a.await(2).stream().map(Completion::id).toList());
        assertEquals(new Completion(9, SUCCESS, CompletionOpcode.RECV, 64, false, 0, pair.b.qp.number()),
            pair.b.awaitOne());
        assertBytes(pattern(64, 1), bytes(pair.b.mr, 0, 64));
        final byte[] written = new byte[40];
        Arrays.fill(written, (byte) 0x77);
        assertBytes(written, bytes(pair.b.mr, 1024, 40));
    }

    @Test
    void shouldRejectInlineDataBeyondTheLimit() throws Exception {
        final Pair pair = fixture.pair(new Config().initA(a -> a.maxInlineData(64)));
        pair.b.postReceive(9, 0, 128);
        final SendWorkRequest send = pair.a.send.reset().id(1).opcode(WorkRequestOpcode.SEND)
            .flags(SendFlags.SIGNALED | SendFlags.INLINE).sge(0, pair.a.mr.address(), 65, 0);
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> pair.a.qp.postSend(send));
        assertEquals("inline data of 65 bytes exceeds maxInlineData=64 of queue pair " + pair.a.qp.number(),
            ex.getMessage());
        send.reset().id(2).opcode(WorkRequestOpcode.RDMA_READ).flags(SendFlags.INLINE)
            .remote(pair.b.mr.address(), pair.b.mr.remoteKey()).sge(0, pair.a.mr.address(), 8, 0);
        assertEquals("an RDMA READ cannot be inline", assertThrows(IllegalArgumentException.class,
            () -> pair.a.qp.postSend(send)).getMessage());
        // nothing was posted: the receive is still there and the next SEND is the first to complete
        pair.a.postSend(WorkRequestOpcode.SEND, 3, SendFlags.SIGNALED, 0, 10);
        assertEquals(List.of(3L), pair.a.await(1).stream().map(Completion::id).toList());
        assertEquals(10, pair.b.awaitOne().byteLength());
        assertEquals(List.of(), pair.a.poll());
    }

    @Test
    void shouldGatherAndScatterSeveralEntries() throws Exception {
        final Pair pair = fixture.pair(new Config().initA(a -> a.maxSendSge(3)).initB(b -> b.maxReceiveSge(2)));
        final MemoryRegion a = pair.a.mr;
        final MemoryRegion b = pair.b.mr;
        fill(a, 0, 5, 0);
        fill(a, 100, 7, 5);
        fill(a, 200, 9, 12);
        pair.b.qp.postReceive(pair.b.recv.reset().id(4).sge(0, b.address() + 1000, 10, b.localKey())
            .sge(1, b.address() + 2000, 20, b.localKey()));
        pair.a.qp.postSend(pair.a.send.reset().id(1).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED)
            .sge(0, a.address(), 5, a.localKey()).sge(1, a.address() + 100, 7, a.localKey())
            .sge(2, a.address() + 200, 9, a.localKey()));
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertEquals(new Completion(4, SUCCESS, CompletionOpcode.RECV, 21, false, 0, pair.b.qp.number()),
            pair.b.awaitOne());
        final byte[] all = pattern(21, 0);
        assertBytes(Arrays.copyOfRange(all, 0, 10), bytes(b, 1000, 10));
        assertBytes(Arrays.copyOfRange(all, 10, 21), bytes(b, 2000, 11));
        assertBytes(new byte[9], bytes(b, 2011, 9));

        pair.a.qp.postSend(pair.a.send.reset().id(2).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .remote(b.address() + 3000, b.remoteKey()).sge(0, a.address(), 5, a.localKey())
            .sge(1, a.address() + 100, 7, a.localKey()).sge(2, a.address() + 200, 9, a.localKey()));
        assertEquals(SUCCESS, pair.a.awaitOne().status());
        assertBytes(all, bytes(b, 3000, 21));

        pair.a.qp.postSend(pair.a.send.reset().id(3).opcode(WorkRequestOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
            .remote(b.address() + 3000, b.remoteKey()).sge(0, a.address() + 500, 1, a.localKey())
            .sge(1, a.address() + 600, 10, a.localKey()).sge(2, a.address() + 700, 10, a.localKey()));
        assertEquals(21, pair.a.awaitOne().byteLength());
        assertBytes(Arrays.copyOfRange(all, 0, 1), bytes(a, 500, 1));
        assertBytes(Arrays.copyOfRange(all, 1, 11), bytes(a, 600, 10));
        assertBytes(Arrays.copyOfRange(all, 11, 21), bytes(a, 700, 10));
    }

    @Test
    void shouldCarryZeroLengthRequests() throws Exception {
        final Pair pair = fixture.pair();
        pair.b.qp.postReceive(pair.b.recv.reset().id(1));
        pair.b.qp.postReceive(pair.b.recv.reset().id(2));
        pair.b.qp.postReceive(pair.b.recv.reset().id(3).sge(0, pair.b.mr.address(), 16, pair.b.mr.localKey()));
        pair.a.qp.postSend(pair.a.send.reset().id(10).opcode(WorkRequestOpcode.SEND).flags(SendFlags.SIGNALED));
        pair.a.qp.postSend(pair.a.send.reset().id(11).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM)
            .flags(SendFlags.SIGNALED).immediate(77).remote(0, 0));
        pair.a.qp.postSend(pair.a.send.reset().id(12).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .remote(0, 0));
        pair.a.qp.postSend(pair.a.send.reset().id(13).opcode(WorkRequestOpcode.SEND_WITH_IMM)
            .flags(SendFlags.SIGNALED).immediate(-1));
        final List<Completion> sent = pair.a.await(4);
        assertEquals(List.of(10L, 11L, 12L, 13L), sent.stream().map(Completion::id).toList());
        assertTrue(sent.stream().allMatch(c -> c.status() == SUCCESS && c.byteLength() == 0), sent.toString());
        final int qpn = pair.b.qp.number();
        assertEquals(List.of(new Completion(1, SUCCESS, CompletionOpcode.RECV, 0, false, 0, qpn),
            new Completion(2, SUCCESS, CompletionOpcode.RECV_RDMA_WITH_IMM, 0, true, 77, qpn),
            new Completion(3, SUCCESS, CompletionOpcode.RECV, 0, true, -1, qpn)), pair.b.await(3));
    }

    @Test
    void shouldCompleteInPostOrder() throws Exception {
        final int count = 1000;
        final Pair pair = fixture.pair(new Config().initA(a -> a.maxSendWorkRequests(32))
            .initB(b -> b.maxReceiveWorkRequests(count)));
        for (int i = 0; i < count; i++) {
            pair.b.postReceive(i, (i % 64) * 16L, 16);
        }
        final Side a = pair.a;
        final List<Completion> sent = new ArrayList<>();
        final List<Long> signalled = new ArrayList<>();
        int consumed = 0;
        for (int i = 0; i < count; i++) {
            final WorkRequestOpcode opcode = switch (i % 3) {
                case 0 -> WorkRequestOpcode.SEND;
                case 1 -> WorkRequestOpcode.RDMA_WRITE;
                default -> WorkRequestOpcode.RDMA_WRITE_WITH_IMM;
            };
            final int flags = i % 4 == 3 && i != count - 1 ? 0 : SendFlags.SIGNALED;
            if (flags != 0) {
                signalled.add((long) i);
            }
            if (opcode != WorkRequestOpcode.RDMA_WRITE) {
                consumed++;
            }
            a.send.reset().id(i).opcode(opcode).flags(flags).immediate(i).remote(pair.b.mr.address() + 2048,
                pair.b.mr.remoteKey()).sge(0, a.mr.address() + (i % 100), 16, a.mr.localKey());
            while (true) {
                try {
                    a.qp.postSend(a.send);
                    break;
                } catch (final IllegalStateException full) {
                    a.cq.poll(c -> sent.add(Completion.of(c)), 64);
                }
            }
        }
        sent.addAll(a.await(signalled.size() - sent.size()));
        assertEquals(signalled, sent.stream().map(Completion::id).toList());
        assertTrue(sent.stream().allMatch(c -> c.status() == SUCCESS));
        final List<Completion> received = pair.b.await(consumed);
        final List<Long> expected = new ArrayList<>();
        for (long i = 0; i < consumed; i++) {
            expected.add(i);
        }
        assertEquals(expected, received.stream().map(Completion::id).toList());
        assertTrue(received.stream().allMatch(c -> c.status() == SUCCESS));
    }
}
