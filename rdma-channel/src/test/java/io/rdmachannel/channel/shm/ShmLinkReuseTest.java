package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.spi.CompletionStatus.SUCCESS;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.rdmachannel.channel.shm.ShmFixture.Config;
import io.rdmachannel.channel.shm.ShmFixture.Side;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Consecutive connections between two devices (two processes, in life) share one link socket: a queue pair that
 * closes lets go of its link with RECYCLE, which the peer's queue pair takes as the end of the connection (it moves to
 * ERROR, as when the socket ends), and the device that connected the socket introduces it to the next connection,
 * whose wake-ups it then carries.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ShmLinkReuseTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldServeConsecutiveConnectionsBetweenTwoDevicesWithOneSocket() throws Exception {
        final ShmDevice first = (ShmDevice) fixture.device();
        final ShmDevice second = (ShmDevice) fixture.device();
        final Config config = new Config().readinessSources(true);
        for (int round = 0; round < 6; round++) {
            final Side a = fixture.side("A" + round, first, config);
            final Side b = fixture.side("B" + round, second, config);
            a.connectTo(b);
            b.connectTo(a);
            // a message each way, each receiver's completion queue armed: the wake-ups travel over the link
            exchange(a, b, round);
            exchange(b, a, round);
            // either side may close first: the other's queue pair hears of it over the link
            final Side closing = round % 2 == 0 ? a : b;
            final Side staying = closing == a ? b : a;
            closing.qp.close();
            ShmFixture.awaitCondition(staying.name + " to see its peer gone",
                () -> staying.qp.state() == QueuePairState.ERROR);
            staying.qp.close();
        }
        assertEquals(1, first.agent().socketsConnected() + second.agent().socketsConnected(),
            "sockets connected for 6 consecutive connections");
    }

    /**
     * Both queue pairs of a connection let go of the link at once, and the next connection takes it at once: the
     * RECYCLE that crosses its introduction names the earlier binding and ends nothing of the new connection.
     */
    @Test
    void shouldNotEndANewConnectionWithTheRecycleOfTheOneBefore() throws Exception {
        final ShmDevice first = (ShmDevice) fixture.device();
        final ShmDevice second = (ShmDevice) fixture.device();
        final Config config = new Config().readinessSources(true);
        Side a = fixture.side("A", first, config);
        Side b = fixture.side("B", second, config);
        a.connectTo(b);
        b.connectTo(a);
        for (int round = 0; round < 100; round++) {
            final Side closingA = a;
            final Side closingB = b;
            a = fixture.side("A" + round, first, config);
            b = fixture.side("B" + round, second, config);
            final Thread other = Thread.ofPlatform().start(() -> closingB.qp.close());
            closingA.qp.close();
            a.connectTo(b);
            b.connectTo(a);
            other.join();
            exchange(a, b, round);
            exchange(b, a, round);
            assertEquals(QueuePairState.READY_TO_SEND, a.qp.state(), a::toString);
            assertEquals(QueuePairState.READY_TO_SEND, b.qp.state(), b::toString);
        }
    }

    private static void exchange(final Side from, final Side to, final int round) throws IOException {
        to.postReceive(round, 0, 64);
        to.cq.requestNotification();
        from.postSend(WorkRequestOpcode.SEND, round, SendFlags.SIGNALED, 0, 16);
        assertEquals(SUCCESS, from.awaitOne().status());
        ShmFixture.awaitTokens("a wake-up of the receiver's readiness source", to.source);
        assertEquals(SUCCESS, to.awaitOne().status());
    }

}
