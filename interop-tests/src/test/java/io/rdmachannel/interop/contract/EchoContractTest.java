package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Echo through a server of the same mode: every byte comes back in order, zero-length writes return 0 and move
 * nothing, and a blocking write accepts the whole buffer at once.
 */
@ContractTest
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class EchoContractTest {

    private static final int[] MESSAGE_SIZES = {0, 1, 1000, 65_537, 1 << 20};
    /**
     * Over IPv6 only the family matters, not the sizes: one size that spans several reads.
     */
    private static final int IPV6_MESSAGE_SIZE = 65_537;
    private static final int MAX_READ = 64 * 1024;

    static Stream<Arguments> echoCases() {
        final Stream<Arguments> ipv4 = ContractTransports.allModes().flatMap(modeCase -> IntStream.of(MESSAGE_SIZES)
            .mapToObj(size -> Arguments.of(modeCase.get()[0], modeCase.get()[1], size)));
        final Stream<Arguments> ipv6 = ContractTransports.ipv6Modes()
            .map(modeCase -> Arguments.of(modeCase.get()[0], modeCase.get()[1], IPV6_MESSAGE_SIZE));
        return Stream.concat(ipv4, ipv6);
    }

    @ParameterizedTest(name = "[{index}] {0} {1} {2} bytes")
    @MethodSource("echoCases")
    void shouldEchoEveryByteInOrder(final ContractTransport transport, final IoMode mode, final int size,
        final ConnectionState state) throws Exception {
        final long seed = ContractConfiguration.seed();
        state.put("seed", seed);
        final EchoServer server = EchoServer.start(transport, mode, 0, state);
        final SocketChannel client = state.closeAtEnd(transport.openSocketChannel());
        state.step("connect");
        client.connect(server.address());

        final PatternSender sender = new PatternSender(SizeSequence.of(0, size, 0, size / 3, 0));
        final PatternReceiver receiver = new PatternReceiver(SizeSequence.random(seed, 1, MAX_READ), MAX_READ, false);
        final Endpoint endpoint = new Endpoint("client", client, sender, receiver).watchedBy(state);
        TransferDriver.run(transport, mode, List.of(endpoint), Duration.ofSeconds(30), state);

        final long total = size + size / 3;
        assertEquals(total, sender.position(), "bytes sent");
        assertEquals(total, receiver.position(), "bytes echoed back");
        assertEquals(sender.checksum(), receiver.checksum(), "CRC32C sent vs received");
        Await.awaitCondition(Await.DEFAULT_TIMEOUT, () -> server.open() == 0, () -> "echo connection closed");
        assertEquals(total, server.echoed(), "bytes the server wrote");
        server.checkHealthy();
    }
}
