package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.util.HexFormat;
import java.util.Properties;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The shm provider emulating iWARP ({@code rdmachannel.shm.transport=iwarp}): no immediate data, and the passive
 * side of a connection sends nothing before the active side's first message arrived.
 */
@Timeout(30)
class ShmIwarpTest {
    private static final ShmConfiguration.Transport IWARP = ShmConfiguration.Transport.IWARP;
    private static final ShmConfiguration.Transport INFINIBAND = ShmConfiguration.Transport.INFINIBAND;

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldReadTheTransportSetting() {
        final Properties properties = new Properties();
        assertEquals(INFINIBAND, ShmConfiguration.fromProperties(properties).transport());
        properties.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME, " iWARP ");
        assertEquals(IWARP, ShmConfiguration.fromProperties(properties).transport());
        properties.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME, "roce");
        final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
            () -> ShmConfiguration.fromProperties(properties));
        assertEquals("rdmachannel.shm.transport must be ib or iwarp: rdmachannel.shm.transport=roce",
            refused.getMessage());
    }

    @Test
    void shouldOfferNoWriteWithImmediateOnIwarp() throws IOException {
        final RdmaDevice iwarp = fixture.device(IWARP);
        assertFalse(iwarp.attributes().has(DeviceCapability.RDMA_WRITE_WITH_IMMEDIATE), iwarp::toString);
        assertTrue(iwarp.attributes().has(DeviceCapability.SHARED_RECEIVE_QUEUE), iwarp::toString);
        final RdmaDevice infiniband = fixture.device(INFINIBAND);
        assertTrue(infiniband.attributes().has(DeviceCapability.RDMA_WRITE_WITH_IMMEDIATE), infiniband::toString);
    }

    @ParameterizedTest
    @EnumSource(value = WorkRequestOpcode.class, names = {"RDMA_WRITE_WITH_IMM", "SEND_WITH_IMM"})
    void shouldRefuseImmediateDataAtPostAsIwarpProvidersDo(final WorkRequestOpcode opcode) throws IOException {
        final ShmFixture.Pair pair = fixture.pair(new ShmFixture.Config().transport(IWARP));
        pair.b.postReceive(1, 0, 64);
        final IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
            () -> pair.a.postRdma(opcode, 2, SendFlags.SIGNALED, 0, 8, pair.b.mr.address(), pair.b.mr.remoteKey()));
        assertEquals(opcode + " is not supported on an iWARP device (rdmachannel.shm.transport=iwarp): iWARP has no"
            + " immediate data; queue pair " + pair.a.qp.number(), refused.getMessage());
        // nothing was posted: the queue pair goes on working
        pair.a.postSend(WorkRequestOpcode.SEND, 3, SendFlags.SIGNALED, 0, 8);
        final ShmFixture.Completion sent = pair.a.awaitOne();
        assertEquals(3, sent.id());
        assertEquals(CompletionStatus.SUCCESS, sent.status());
        final ShmFixture.Completion received = pair.b.awaitOne();
        assertEquals(CompletionOpcode.RECV, received.opcode());
        assertEquals(8, received.byteLength());
        assertEquals(QueuePairState.READY_TO_SEND, pair.a.qp.state());
    }

    @Test
    void shouldFailTheConnectionWhenThePassiveSideSendsFirst() throws IOException {
        final ShmFixture.Pair pair = passivePair(IWARP);
        pair.a.postReceive(1, 0, 64);
        pair.b.postSend(WorkRequestOpcode.SEND, 7, SendFlags.SIGNALED, 0, 4);
        final ShmFixture.Completion failed = pair.b.awaitOne();
        assertEquals(7, failed.id());
        assertEquals(CompletionStatus.REMOTE_OPERATION_ERROR, failed.status());
        assertTrue(((ShmQueuePair) pair.b.qp).brokeSendFirstRule(), pair::toString);
        ShmFixture.awaitCondition("both queue pairs in ERROR", () -> pair.a.qp.state() == QueuePairState.ERROR
            && pair.b.qp.state() == QueuePairState.ERROR);
        // the active side learns it as a broken connection: its receive is flushed, nothing arrived
        final ShmFixture.Completion flushed = pair.a.awaitOne();
        assertEquals(1, flushed.id());
        assertEquals(CompletionStatus.WORK_REQUEST_FLUSHED, flushed.status());
    }

    @Test
    void shouldCountOnlyACompletedReceiveAsTheActiveSidesFirstMessage() throws IOException {
        final ShmFixture.Pair pair = passivePair(IWARP);
        // MPA would accept this plain WRITE as the initiator's first FPDU; the emulation insists on a receive
        pair.a.postRdma(WorkRequestOpcode.RDMA_WRITE, 1, SendFlags.SIGNALED, 0, 16, pair.b.mr.address(),
            pair.b.mr.remoteKey());
        assertEquals(CompletionStatus.SUCCESS, pair.a.awaitOne().status());
        pair.b.postRdma(WorkRequestOpcode.RDMA_WRITE, 2, SendFlags.SIGNALED, 0, 16, pair.a.mr.address(),
            pair.a.mr.remoteKey());
        assertEquals(CompletionStatus.REMOTE_OPERATION_ERROR, pair.b.awaitOne().status());
        assertTrue(((ShmQueuePair) pair.b.qp).brokeSendFirstRule(), pair::toString);
    }

    @Test
    void shouldLetThePassiveSideSendOnceTheActiveSidesFirstMessageArrived() throws IOException {
        final ShmFixture.Pair pair = passivePair(IWARP);
        pair.b.postReceive(1, 0, 64);
        pair.a.postReceive(2, 0, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 3, SendFlags.SIGNALED, 0, 4);
        assertEquals(CompletionStatus.SUCCESS, pair.a.awaitOne().status());
        assertEquals(CompletionStatus.SUCCESS, pair.b.awaitOne().status());
        pair.b.postSend(WorkRequestOpcode.SEND, 4, SendFlags.SIGNALED, 0, 4);
        pair.b.postRdma(WorkRequestOpcode.RDMA_WRITE, 5, SendFlags.SIGNALED, 0, 16, pair.a.mr.address(),
            pair.a.mr.remoteKey());
        for (final ShmFixture.Completion completion : pair.b.await(2)) {
            assertEquals(CompletionStatus.SUCCESS, completion.status(), completion::toString);
        }
        assertEquals(2, pair.a.awaitOne().id());
        assertFalse(((ShmQueuePair) pair.b.qp).brokeSendFirstRule(), pair::toString);
        assertEquals(QueuePairState.READY_TO_SEND, pair.b.qp.state());
    }

    @Test
    void shouldLetThePassiveSideSendFirstOnInfiniBand() throws IOException {
        final ShmFixture.Pair pair = passivePair(INFINIBAND);
        pair.a.postReceive(1, 0, 64);
        pair.b.postSend(WorkRequestOpcode.SEND, 2, SendFlags.SIGNALED, 0, 4);
        assertEquals(CompletionStatus.SUCCESS, pair.b.awaitOne().status());
        assertEquals(CompletionStatus.SUCCESS, pair.a.awaitOne().status());
        assertFalse(((ShmQueuePair) pair.b.qp).brokeSendFirstRule(), pair::toString);
    }

    @Test
    void shouldRefuseToConnectAnInfiniBandQueuePairToAnIwarpOne() throws IOException {
        final ShmFixture.Pair pair = fixture.pair(new ShmFixture.Config().transports(INFINIBAND, IWARP)
            .connect(false));
        final IOException refused = assertThrows(IOException.class, () -> pair.a.connectTo(pair.b));
        assertEquals("queue pair " + pair.b.qp.number() + " on shm device "
            + HexFormat.of().formatHex(pair.b.device.queryGid(1, 0)) + " uses the iwarp transport, this device ib:"
            + " both ends need the same rdmachannel.shm.transport", refused.getMessage());
    }

    /**
     * A connected pair whose B was accepted passively, as the shm connection manager marks it.
     */
    private ShmFixture.Pair passivePair(final ShmConfiguration.Transport transport) throws IOException {
        final ShmFixture.Pair pair = fixture.pair(new ShmFixture.Config().transport(transport).connect(false));
        ((ShmQueuePair) pair.b.qp).markPassive();
        pair.a.connectTo(pair.b);
        pair.b.connectTo(pair.a);
        return pair;
    }
}
