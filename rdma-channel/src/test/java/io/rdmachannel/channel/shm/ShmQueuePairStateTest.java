package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.spi.QueuePairState.ERROR;
import static io.rdmachannel.channel.spi.QueuePairState.INIT;
import static io.rdmachannel.channel.spi.QueuePairState.READY_TO_RECEIVE;
import static io.rdmachannel.channel.spi.QueuePairState.READY_TO_SEND;
import static io.rdmachannel.channel.spi.QueuePairState.RESET;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.shm.ShmFixture.Completion;
import io.rdmachannel.channel.shm.ShmFixture.Pair;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Queue-pair creation limits and every state transition.
 */
class ShmQueuePairStateTest {
    private static final List<QueuePairState> STATES = List.of(RESET, INIT, READY_TO_RECEIVE, READY_TO_SEND, ERROR);
    private static final Set<String> LEGAL = Set.of("RESET>INIT", "INIT>INIT", "INIT>READY_TO_RECEIVE",
        "READY_TO_RECEIVE>READY_TO_SEND", "READY_TO_SEND>READY_TO_SEND");

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldRunCloseActionsOnceAfterTheQueuePairIsGone() throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        final QueuePair qp = pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
            .receiveCompletionQueue(cq));
        final List<String> ran = new CopyOnWriteArrayList<>();
        qp.whenClosed(() -> ran.add("first, queue pairs open: " + device.resources().queuePairs()));
        qp.whenClosed(() -> {
            throw new IllegalStateException("an action that throws");
        });
        qp.whenClosed(() -> ran.add("third"));
        assertEquals(List.of(), ran);
        qp.close();
        qp.close();
        assertEquals(List.of("first, queue pairs open: 0", "third"), ran);
        qp.whenClosed(() -> ran.add("after close"));
        assertEquals("after close", ran.getLast());
    }

    @Test
    void shouldCreateAQueuePairInReset() throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        final QueuePair first = fixture.own(pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
            .receiveCompletionQueue(cq).maxSendWorkRequests(5).maxReceiveWorkRequests(7).maxInlineData(100)));
        final QueuePair second = fixture.own(pd.createQueuePair(new QueuePairInitAttributes()
            .sendCompletionQueue(cq).receiveCompletionQueue(cq)));
        assertEquals(RESET, first.state());
        assertEquals(QueuePairType.RC, first.type());
        assertSame(pd, first.protectionDomain());
        assertEquals(5, first.maxSendWorkRequests());
        assertEquals(7, first.maxReceiveWorkRequests());
        assertEquals(100, first.maxInlineData());
        assertEquals(16, second.maxSendWorkRequests());
        assertEquals(0, second.maxInlineData());
        assertNotEquals(first.number(), second.number());
        assertEquals(0, first.number() & ~0xFFFFFF);
    }

    static Stream<Arguments> badLimits() {
        return Stream.of(
            Arguments.of((UnaryOperator<QueuePairInitAttributes>) a -> a.maxSendWorkRequests(0),
                "maxSendWorkRequests=0 is outside [1, 16384]"),
            Arguments.of((UnaryOperator<QueuePairInitAttributes>) a -> a.maxSendWorkRequests(16385),
                "maxSendWorkRequests=16385 is outside [1, 16384]"),
            Arguments.of((UnaryOperator<QueuePairInitAttributes>) a -> a.maxReceiveWorkRequests(0),
                "maxReceiveWorkRequests=0 is outside [1, 16384]"),
            Arguments.of((UnaryOperator<QueuePairInitAttributes>) a -> a.maxSendSge(17),
                "maxSendSge=17 is outside [1, 16]"),
            Arguments.of((UnaryOperator<QueuePairInitAttributes>) a -> a.maxReceiveSge(0),
                "maxReceiveSge=0 is outside [1, 16]"),
            Arguments.of((UnaryOperator<QueuePairInitAttributes>) a -> a.maxInlineData(1025),
                "maxInlineData=1025 is outside [0, 1024]"),
            Arguments.of((UnaryOperator<QueuePairInitAttributes>) a -> a.maxInlineData(-1),
                "maxInlineData=-1 is outside [0, 1024]"),
            Arguments.of((UnaryOperator<QueuePairInitAttributes>) a -> a.receiveCompletionQueue(null),
                "a queue pair needs a send and a receive completion queue"));
    }

    @ParameterizedTest
    @MethodSource("badLimits")
    void shouldRejectAttributesOutsideTheDeviceLimits(final UnaryOperator<QueuePairInitAttributes> adjust,
        final String message) throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = device.allocateProtectionDomain();
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class, () -> pd.createQueuePair(
            adjust.apply(new QueuePairInitAttributes().sendCompletionQueue(cq).receiveCompletionQueue(cq))));
        assertEquals(message, ex.getMessage());
        pd.close();
    }

    @Test
    void shouldRejectAForeignCompletionQueueAndOtherTypes() throws Exception {
        final RdmaDevice device = fixture.device();
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        final CompletionQueue foreign = fixture.own(fixture.device().createCompletionQueue(16, null, 0));
        assertEquals("the completion queue belongs to another device", assertThrows(IllegalArgumentException.class,
            () -> pd.createQueuePair(new QueuePairInitAttributes().sendCompletionQueue(cq)
                .receiveCompletionQueue(foreign))).getMessage());
        assertEquals("XRC target queue pairs are created through their XRC domain: XrcDomain.createTargetQueuePair()",
            assertThrows(IllegalArgumentException.class, () -> pd.createQueuePair(new QueuePairInitAttributes()
                .type(QueuePairType.XRC_RECV).sendCompletionQueue(cq).receiveCompletionQueue(cq))).getMessage());
        assertEquals("an XRC initiator queue pair has no receive side: set no receive completion queue and no "
            + "shared receive queue", assertThrows(IllegalArgumentException.class, () -> pd.createQueuePair(
                new QueuePairInitAttributes().type(QueuePairType.XRC_SEND).sendCompletionQueue(cq)
                    .receiveCompletionQueue(cq))).getMessage());
    }

    static Stream<Arguments> transitions() {
        final List<Arguments> arguments = new ArrayList<>();
        for (final QueuePairState from : STATES) {
            for (final QueuePairState to : STATES) {
                arguments.add(Arguments.of(from, to));
            }
        }
        return arguments.stream();
    }

    @ParameterizedTest(name = "{0} to {1}")
    @MethodSource("transitions")
    @Timeout(10)
    void shouldAllowExactlyTheVerbsTransitions(final QueuePairState from, final QueuePairState to)
        throws Exception {
        final Pair pair = fixture.pair(new ShmFixture.Config().sameDevice(true).connect(false));
        final QueuePair qp = pair.a.qp;
        moveTo(pair, from);
        assertEquals(from, qp.state());
        final QueuePairAttributes attributes = attributesFor(pair, to);
        if (to == ERROR || to == RESET || LEGAL.contains(from + ">" + to)) {
            qp.modify(to, attributes);
            assertEquals(to, qp.state());
            return;
        }
        final IllegalStateException ex = assertThrows(IllegalStateException.class, () -> qp.modify(to, attributes));
        final String allowed = switch (to) {
            case INIT -> "[RESET, INIT]";
            case READY_TO_RECEIVE -> "[INIT]";
            default -> "[READY_TO_RECEIVE, READY_TO_SEND]";
        };
        assertEquals("queue pair " + qp.number() + " cannot move from " + from + " to " + to + "; allowed from "
            + allowed, ex.getMessage());
        assertEquals(from, qp.state());
    }

    private static void moveTo(final Pair pair, final QueuePairState state) throws IOException {
        if (state == RESET) {
            return;
        }
        final QueuePair qp = pair.a.qp;
        if (state == ERROR) {
            qp.modify(ERROR, null);
            return;
        }
        for (final QueuePairState step : List.of(INIT, READY_TO_RECEIVE, READY_TO_SEND)) {
            qp.modify(step, attributesFor(pair, step));
            if (step == state) {
                return;
            }
        }
    }

    private static QueuePairAttributes attributesFor(final Pair pair, final QueuePairState target)
        throws IOException {
        return switch (target) {
            case INIT -> new QueuePairAttributes().accessFlags(ShmFixture.FULL_ACCESS);
            case READY_TO_RECEIVE -> new QueuePairAttributes().remoteGid(pair.b.device.queryGid(1, 0))
                .remoteQueuePairNumber(pair.b.qp.number());
            case READY_TO_SEND -> new QueuePairAttributes();
            default -> null;
        };
    }

    @Test
    void shouldRequireAttributesWhereATransitionReadsThem() throws Exception {
        final Pair pair = fixture.pair(new ShmFixture.Config().sameDevice(true).connect(false));
        final QueuePair qp = pair.a.qp;
        assertEquals("moving to INIT needs attributes",
            assertThrows(IllegalArgumentException.class, () -> qp.modify(INIT, null)).getMessage());
        qp.modify(INIT, new QueuePairAttributes());
        assertEquals("moving to READY_TO_RECEIVE needs attributes",
            assertThrows(IllegalArgumentException.class, () -> qp.modify(READY_TO_RECEIVE, null)).getMessage());
        final QueuePairAttributes noGid = new QueuePairAttributes().remoteQueuePairNumber(pair.b.qp.number());
        assertEquals("moving to READY_TO_RECEIVE needs the remote GID and queue pair number: " + noGid,
            assertThrows(IllegalArgumentException.class, () -> qp.modify(READY_TO_RECEIVE, noGid)).getMessage());
        final QueuePairAttributes noNumber = new QueuePairAttributes().remoteGid(pair.b.device.queryGid(1, 0));
        assertEquals("moving to READY_TO_RECEIVE needs the remote GID and queue pair number: " + noNumber,
            assertThrows(IllegalArgumentException.class, () -> qp.modify(READY_TO_RECEIVE, noNumber)).getMessage());
        assertEquals(INIT, qp.state());
        assertEquals("the shm provider does not support moving to SEND_QUEUE_DRAINED",
            assertThrows(IllegalArgumentException.class,
                () -> qp.modify(QueuePairState.SEND_QUEUE_DRAINED, new QueuePairAttributes())).getMessage());
        assertEquals("the shm provider does not support moving to SEND_QUEUE_ERROR",
            assertThrows(IllegalArgumentException.class,
                () -> qp.modify(QueuePairState.SEND_QUEUE_ERROR, new QueuePairAttributes())).getMessage());
        assertEquals(INIT, qp.state());
    }

    @Test
    void shouldFailToConnectToAMissingPeer() throws Exception {
        final Pair pair = fixture.pair(new ShmFixture.Config().connect(false));
        final QueuePair qp = pair.a.qp;
        qp.modify(INIT, new QueuePairAttributes());
        final byte[] gid = pair.b.device.queryGid(1, 0);
        final String gidHex = HexFormat.of().formatHex(gid);
        final IOException noQp = assertThrows(IOException.class, () -> qp.modify(READY_TO_RECEIVE,
            new QueuePairAttributes().remoteGid(gid).remoteQueuePairNumber(0xABCDE)));
        assertEquals("no queue pair 703710 on shm device " + gidHex, noQp.getMessage());
        final byte[] unknown = gid.clone();
        unknown[15] ^= 1;
        final IOException noDevice = assertThrows(IOException.class, () -> qp.modify(READY_TO_RECEIVE,
            new QueuePairAttributes().remoteGid(unknown).remoteQueuePairNumber(1)));
        assertTrue(noDevice.getMessage().startsWith("no shm device with GID " + HexFormat.of().formatHex(unknown)
            + " is open on this host (looked in "), noDevice.getMessage());
        assertEquals(INIT, qp.state());
        pair.b.qp.modify(INIT, new QueuePairAttributes());
        ShmFixture.connect(qp, ShmFixture.FULL_ACCESS, gid, pair.b.qp.number(), UnaryOperator.identity());
        assertEquals(READY_TO_SEND, qp.state());
    }

    @Test
    @Timeout(10)
    void shouldDiscardWorkOnResetAndConnectAgain() throws Exception {
        final Pair pair = fixture.pair();
        pair.a.postReceive(1, 0, 64);
        pair.b.postReceive(2, 0, 64);
        pair.a.qp.modify(RESET, null);
        pair.b.qp.modify(RESET, null);
        assertEquals(RESET, pair.a.qp.state());
        assertEquals(List.of(), pair.a.poll());
        assertEquals(List.of(), pair.b.poll());
        pair.a.connectTo(pair.b);
        pair.b.connectTo(pair.a);
        for (int round = 0; round < 2; round++) {
            pair.b.postReceive(10 + round, 0, 64);
            pair.a.postSend(WorkRequestOpcode.SEND, 20 + round, SendFlags.SIGNALED, 0, 8);
            assertEquals(new Completion(20 + round, CompletionStatus.SUCCESS,
                CompletionOpcode.SEND, 8, false, 0, pair.a.qp.number()),
                pair.a.awaitOne());
            assertEquals(new Completion(10 + round, CompletionStatus.SUCCESS,
                CompletionOpcode.RECV, 8, false, 0, pair.b.qp.number()),
                pair.b.awaitOne());
        }
        pair.a.postReceive(3, 0, 64);
        pair.b.postSend(WorkRequestOpcode.SEND, 4, SendFlags.SIGNALED, 0, 5);
        assertEquals(CompletionStatus.SUCCESS, pair.b.awaitOne().status());
        assertEquals(3, pair.a.awaitOne().id());
    }

    @Test
    @Timeout(10)
    void shouldFlushOnAMoveToError() throws Exception {
        final Pair pair = fixture.pair();
        pair.a.postReceive(1, 0, 64);
        pair.a.postReceive(2, 0, 64);
        pair.a.qp.modify(ERROR, null);
        assertEquals(ERROR, pair.a.qp.state());
        final List<Completion> flushed = pair.a.await(2);
        assertEquals(List.of(1L, 2L), flushed.stream().map(Completion::id).toList());
        assertTrue(flushed.stream().allMatch(c -> c.status() == CompletionStatus.WORK_REQUEST_FLUSHED));
        pair.a.postReceive(3, 0, 64);
        pair.a.postSend(WorkRequestOpcode.SEND, 4, 0, 0, 8);
        final List<Completion> later = pair.a.await(2);
        assertEquals(Set.of(3L, 4L), Set.of(later.get(0).id(), later.get(1).id()));
        assertTrue(later.stream().allMatch(c -> c.status() == CompletionStatus.WORK_REQUEST_FLUSHED));
    }
}
