package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * {@value ContractConfiguration#CONNECTIONS_PROP_NAME} (default 200) connections open at once through one
 * selector-driven echo server; the clients run in each mode (blocking on a small pool, one client selector, or a
 * virtual thread per side), and every byte of every connection is verified.
 */
@ContractTest
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ManyConnectionsContractTest {

    private static final int MAX_CHUNK = 16 * 1024;
    private static final long BYTES_PER_CONNECTION = 64 * 1024;
    private static final int POOL_THREADS = 4;
    private static final Duration EXCHANGE_TIMEOUT = Duration.ofSeconds(60);

    @AcrossModes
    void shouldEchoOnEveryConnectionThroughOneSelector(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final long seed = ContractConfiguration.seed();
        final int connections = ContractConfiguration.connections();
        state.put("seed", seed);
        final SelectorEchoServer server = (SelectorEchoServer) EchoServer.start(transport, IoMode.NON_BLOCKING,
            connections, state);

        final List<Endpoint> endpoints = new ArrayList<>();
        for (int i = 0; i < connections; i++) {
            state.step("connect " + i);
            final SocketChannel channel = state.closeAtEnd(transport.openSocketChannel());
            channel.connect(server.address());
            endpoints.add(new Endpoint("client-" + i, channel,
                new PatternSender(SizeSequence.random(seed + i, 1, MAX_CHUNK, BYTES_PER_CONNECTION)),
                new PatternReceiver(SizeSequence.random(seed - i, 1, MAX_CHUNK), MAX_CHUNK, false)));
        }
        state.step("await all accepted");
        Await.awaitCondition(Await.DEFAULT_TIMEOUT, () -> server.open() == connections,
            () -> connections + " connections open at the server, " + server);
        state.watch("endpoints", () -> endpoints.stream().filter(e -> !e.receiver().eof()).limit(5).toList());

        if (mode == IoMode.BLOCKING) {
            exchangeOnPool(endpoints, state);
        } else {
            TransferDriver.run(transport, mode, endpoints, EXCHANGE_TIMEOUT, state);
        }

        for (final Endpoint endpoint : endpoints) {
            assertEquals(BYTES_PER_CONNECTION, endpoint.receiver().position(), endpoint.name() + " bytes echoed");
            assertEquals(endpoint.sender().checksum(), endpoint.receiver().checksum(), endpoint.name() + " CRC32C");
        }
        assertEquals(connections, server.maxOpen(), "connections open at once in the server's selector");
        Await.awaitCondition(Await.DEFAULT_TIMEOUT, () -> server.open() == 0, () -> "server closed every connection");
        assertEquals(connections * BYTES_PER_CONNECTION, server.echoed(), "bytes echoed in total");
        server.checkHealthy();
    }

    /**
     * Blocking clients on a few platform threads: each connection is served by one task in lock-step (write a chunk,
     * read its echo), which cannot deadlock however few threads there are.
     */
    private static void exchangeOnPool(final List<Endpoint> endpoints, final ConnectionState state)
        throws Exception {
        final ExecutorService pool = Executors.newFixedThreadPool(POOL_THREADS);
        try {
            final List<Future<?>> tasks = new ArrayList<>();
            for (final Endpoint endpoint : endpoints) {
                tasks.add(pool.submit(() -> {
                    lockStep(endpoint, state);
                    return null;
                }));
            }
            for (final Future<?> task : tasks) {
                task.get(EXCHANGE_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static void lockStep(final Endpoint endpoint, final ConnectionState state) throws Exception {
        final SocketChannel channel = endpoint.channel();
        final PatternSender sender = endpoint.sender();
        final PatternReceiver receiver = endpoint.receiver();
        state.step(endpoint.name() + " exchange");
        while (sender.writeOnce(channel) >= 0) {
            while (receiver.position() < sender.position()) {
                if (receiver.readOnce(channel) < 0) {
                    throw new AssertionError(endpoint.name() + ": end of stream before the echo of "
                        + sender.position() + " bytes");
                }
            }
        }
        channel.shutdownOutput();
        if (receiver.readOnce(channel) >= 0) {
            throw new AssertionError(endpoint.name() + ": more data after the echo of everything sent");
        }
        state.step(endpoint.name() + " done");
    }
}
