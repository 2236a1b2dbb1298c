package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.spi.CompletionStatus.LOCAL_LENGTH_ERROR;
import static io.rdmachannel.channel.spi.CompletionStatus.LOCAL_PROTECTION_ERROR;
import static io.rdmachannel.channel.spi.CompletionStatus.REMOTE_ACCESS_ERROR;
import static io.rdmachannel.channel.spi.CompletionStatus.REMOTE_INVALID_REQUEST;
import static io.rdmachannel.channel.spi.CompletionStatus.SUCCESS;
import static io.rdmachannel.channel.spi.CompletionStatus.WORK_REQUEST_FLUSHED;
import static io.rdmachannel.channel.spi.QueuePairState.ERROR;
import static io.rdmachannel.channel.spi.QueuePairState.READY_TO_SEND;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.rdmachannel.channel.shm.ShmFixture.Completion;
import io.rdmachannel.channel.shm.ShmFixture.Config;
import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.lang.foreign.ValueLayout;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Transport errors reported as completions: remote access and protection errors, length errors, and the flush of
 * the outstanding work of both queue pairs that follows.
 */
@Timeout(20)
class ShmErrorTest {
    private static final byte PATTERN = 0x5A;

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    static void fillPattern(final MemoryRegion mr) {
        mr.segment().fill(PATTERN);
    }

    /** Check that every byte of the region from {@code from} on still holds the pattern. */
    static void assertPattern(final MemoryRegion mr, final long from) {
        for (long i = from; i < mr.length(); i++) {
            assertEquals(PATTERN, mr.segment().get(ValueLayout.JAVA_BYTE, i), "byte " + i + " of " + mr);
        }
    }

    static List<Long> ids(final List<Completion> completions) {
        return completions.stream().map(Completion::id).toList();
    }

    static List<CompletionStatus> statuses(final List<Completion> completions) {
        return completions.stream().map(Completion::status).toList();
    }

    @Test
    void shouldFailAWriteWithAWrongKeyAndFlushTheWorkOfBothQueuePairs() throws Exception {
        final Pair pair = fixture.pair();
        fillPattern(pair.b.mr);
        // B's SENDs wait for a receive at A, which never comes
        pair.b.postSend(WorkRequestOpcode.SEND, 31, SendFlags.SIGNALED, 1024, 8);
        pair.b.postSend(WorkRequestOpcode.SEND, 32, 0, 1024, 8);
        // A's SEND waits for a receive at B; the bad write and two more requests queue behind it
        pair.a.postSend(WorkRequestOpcode.SEND, 0, SendFlags.SIGNALED, 0, 8);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 1, SendFlags.SIGNALED, 0, 8, pair.b.mr.address() + 2048,
            pair.b.mr.remoteKey() + 1);
        pair.a.postSend(WorkRequestOpcode.SEND, 2, SendFlags.SIGNALED, 0, 8);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 3, 0, 0, 8, pair.b.mr.address() + 2048,
            pair.b.mr.remoteKey());
        assertEquals(List.of(), pair.a.poll());
        pair.b.postReceive(21, 0, 64);
        pair.b.postReceive(22, 64, 64);
        pair.b.postReceive(23, 128, 64);

        final List<Completion> a = pair.a.await(4);
        assertEquals(List.of(0L, 1L, 2L, 3L), ids(a));
        assertEquals(List.of(SUCCESS, REMOTE_ACCESS_ERROR, WORK_REQUEST_FLUSHED, WORK_REQUEST_FLUSHED), statuses(a));
        assertEquals(CompletionOpcode.SEND, a.getFirst().opcode());
        final List<Completion> b = pair.b.await(5);
        final List<Completion> receives = b.stream().filter(c -> c.id() < 30).toList();
        final List<Completion> sends = b.stream().filter(c -> c.id() > 30).toList();
        assertEquals(List.of(21L, 22L, 23L), ids(receives));
        assertEquals(List.of(SUCCESS, WORK_REQUEST_FLUSHED, WORK_REQUEST_FLUSHED), statuses(receives));
        assertEquals(List.of(31L, 32L), ids(sends));
        assertEquals(List.of(WORK_REQUEST_FLUSHED, WORK_REQUEST_FLUSHED), statuses(sends));
        assertEquals(ERROR, pair.a.qp.state());
        assertEquals(ERROR, pair.b.qp.state());
        assertPattern(pair.b.mr, 8);
    }

    @ParameterizedTest(name = "offset {0}, length {1}, region {2}")
    @CsvSource({"4090, 8, 4096", "4096, 1, 4096", "-8, 16, 4096", "-1, 1, 4096", "0, 4097, 4096", "96, 8, 100",
        "100, 1, 100", "0, 101, 100"})
    void shouldRefuseAWriteOutsideTheRegionWithoutTouchingMemory(final long offset, final int length,
        final long regionLength) throws Exception {
        final Pair pair = fixture.pair(new Config().regionLength(8192).connect(false));
        final MemoryRegion target = fixture.own(pair.b.pd.allocate(regionLength, ShmFixture.FULL_ACCESS));
        pair.a.connectTo(pair.b);
        pair.b.connectTo(pair.a);
        fillPattern(target);
        pair.b.postReceive(1, 0, 16);
        pair.a.mr.segment().fill((byte) 1);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 2, SendFlags.SIGNALED, 0, length, target.address() + offset,
            target.remoteKey());
        final Completion failed = pair.a.awaitOne();
        assertEquals(2, failed.id());
        assertEquals(REMOTE_ACCESS_ERROR, failed.status());
        assertPattern(target, 0);
        assertEquals(new Completion(1, WORK_REQUEST_FLUSHED, CompletionOpcode.RECV, 0, false, 0, pair.b.qp.number()),
            pair.b.awaitOne());
        assertEquals(ERROR, pair.a.qp.state());
        assertEquals(ERROR, pair.b.qp.state());
    }

    @Test
    void shouldRefuseAReadOutsideTheRegion() throws Exception {
        final Pair pair = fixture.pair();
        fillPattern(pair.a.mr);
        pair.a.postRdma(WorkRequestOpcode.RDMA_READ, 1, SendFlags.SIGNALED, 0, 16, pair.b.mr.address() + 4090,
            pair.b.mr.remoteKey());
        assertEquals(REMOTE_ACCESS_ERROR, pair.a.awaitOne().status());
        assertPattern(pair.a.mr, 0);
        assertEquals(ERROR, pair.a.qp.state());
        assertEquals(ERROR, pair.b.qp.state());
    }

    @Test
    void shouldRefuseAWriteIntoARegionWithoutRemoteWrite() throws Exception {
        final Pair pair = fixture.pair(new Config().regionAccessB(AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_READ));
        fillPattern(pair.b.mr);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 1, SendFlags.SIGNALED, 0, 16, pair.b.mr.address(),
            pair.b.mr.remoteKey());
        assertEquals(REMOTE_ACCESS_ERROR, pair.a.awaitOne().status());
        assertPattern(pair.b.mr, 0);
        assertEquals(ERROR, pair.b.qp.state());
    }

    @Test
    void shouldRefuseAReadFromARegionWithoutRemoteRead() throws Exception {
        final Pair pair = fixture.pair(new Config().regionAccessB(AccessFlags.LOCAL_WRITE
            | AccessFlags.REMOTE_WRITE));
        pair.a.postRdma(WorkRequestOpcode.RDMA_READ, 1, SendFlags.SIGNALED, 0, 16, pair.b.mr.address(),
            pair.b.mr.remoteKey());
        assertEquals(REMOTE_ACCESS_ERROR, pair.a.awaitOne().status());
    }

    @Test
    void shouldRefuseAWriteIntoAQueuePairWithoutRemoteWrite() throws Exception {
        final Pair pair = fixture.pair(new Config().queuePairAccessB(AccessFlags.REMOTE_READ));
        fillPattern(pair.b.mr);
        pair.b.postReceive(5, 0, 16);
        pair.a.qp.postSend(pair.a.send.reset().id(1).opcode(WorkRequestOpcode.RDMA_WRITE_WITH_IMM)
            .flags(SendFlags.SIGNALED).remote(pair.b.mr.address() + 100, pair.b.mr.remoteKey())
            .sge(0, pair.a.mr.address(), 16, pair.a.mr.localKey()));
        assertEquals(REMOTE_ACCESS_ERROR, pair.a.awaitOne().status());
        assertPattern(pair.b.mr, 0);
        assertEquals(WORK_REQUEST_FLUSHED, pair.b.awaitOne().status());
    }

    @Test
    void shouldRefuseAReadFromAQueuePairWithoutRemoteRead() throws Exception {
        final Pair pair = fixture.pair(new Config().queuePairAccessB(AccessFlags.LOCAL_WRITE
            | AccessFlags.REMOTE_WRITE));
        pair.a.postRdma(WorkRequestOpcode.RDMA_READ, 1, SendFlags.SIGNALED, 0, 16, pair.b.mr.address(),
            pair.b.mr.remoteKey());
        assertEquals(REMOTE_ACCESS_ERROR, pair.a.awaitOne().status());
    }

    @Test
    void shouldRefuseARemoteKeyOfAnotherProtectionDomain() throws Exception {
        final Pair pair = fixture.pair();
        final ProtectionDomain otherPd = fixture.own(pair.b.device.allocateProtectionDomain());
        final MemoryRegion other = fixture.own(otherPd.allocate(4096, ShmFixture.FULL_ACCESS));
        fillPattern(other);
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 1, SendFlags.SIGNALED, 0, 16, other.address(),
            other.remoteKey());
        assertEquals(REMOTE_ACCESS_ERROR, pair.a.awaitOne().status());
        assertPattern(other, 0);
    }

    @Test
    void shouldRefuseTheKeyOfAClosedRegion() throws Exception {
        final Pair pair = fixture.pair();
        final MemoryRegion gone = pair.b.pd.allocate(4096, ShmFixture.FULL_ACCESS);
        final long address = gone.address();
        final int key = gone.remoteKey();
        gone.close();
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 1, SendFlags.SIGNALED, 0, 16, address, key);
        assertEquals(REMOTE_ACCESS_ERROR, pair.a.awaitOne().status());
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource({"wrong key", "outside the region", "another domain", "closed region"})
    void shouldFailABadLocalBufferWithAProtectionError(final String kind) throws Exception {
        final Pair pair = fixture.pair();
        fillPattern(pair.b.mr);
        long address = pair.a.mr.address();
        int key = pair.a.mr.localKey();
        switch (kind) {
            case "wrong key" -> key += 1;
            case "outside the region" -> address += 4090;
            case "another domain" -> {
                final MemoryRegion other = fixture.own(fixture.own(pair.a.device.allocateProtectionDomain())
                    .allocate(64, AccessFlags.LOCAL_WRITE));
                address = other.address();
                key = other.localKey();
            }
            default -> {
                final MemoryRegion closed = pair.a.pd.allocate(64, AccessFlags.LOCAL_WRITE);
                address = closed.address();
                key = closed.localKey();
                closed.close();
            }
        }
        pair.a.qp.postSend(pair.a.send.reset().id(1).opcode(WorkRequestOpcode.RDMA_WRITE).flags(SendFlags.SIGNALED)
            .remote(pair.b.mr.address(), pair.b.mr.remoteKey()).sge(0, address, 16, key));
        assertEquals(LOCAL_PROTECTION_ERROR, pair.a.awaitOne().status());
        assertEquals(ERROR, pair.a.qp.state());
        assertEquals(READY_TO_SEND, pair.b.qp.state());
        assertPattern(pair.b.mr, 0);
    }

    @Test
    void shouldRefuseToReadIntoARegionWithoutLocalWrite() throws Exception {
        final Pair pair = fixture.pair();
        final MemoryRegion readOnly = fixture.own(pair.a.pd.allocate(64, 0));
        fillPattern(pair.b.mr);
        pair.a.qp.postSend(pair.a.send.reset().id(1).opcode(WorkRequestOpcode.RDMA_READ).flags(SendFlags.SIGNALED)
            .remote(pair.b.mr.address(), pair.b.mr.remoteKey()).sge(0, readOnly.address(), 16, readOnly.localKey()));
        assertEquals(LOCAL_PROTECTION_ERROR, pair.a.awaitOne().status());
        for (long i = 0; i < readOnly.length(); i++) {
            assertEquals(0, readOnly.segment().get(ValueLayout.JAVA_BYTE, i));
        }
    }

    @Test
    void shouldFailASendLongerThanTheReceiveBuffer() throws Exception {
        final Pair pair = fixture.pair();
        fillPattern(pair.b.mr);
        pair.b.postReceive(1, 0, 16);
        pair.b.postReceive(2, 16, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 10, SendFlags.SIGNALED, 0, 17);
        assertEquals(new Completion(10, REMOTE_INVALID_REQUEST, CompletionOpcode.SEND, 0, false, 0,
            pair.a.qp.number()), pair.a.awaitOne());
        final List<Completion> b = pair.b.await(2);
        assertEquals(List.of(1L, 2L), ids(b));
        assertEquals(List.of(LOCAL_LENGTH_ERROR, WORK_REQUEST_FLUSHED), statuses(b));
        assertPattern(pair.b.mr, 0);
        assertEquals(ERROR, pair.a.qp.state());
        assertEquals(ERROR, pair.b.qp.state());
    }
}
