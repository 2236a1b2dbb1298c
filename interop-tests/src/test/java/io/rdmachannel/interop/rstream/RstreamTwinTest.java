package io.rdmachannel.interop.rstream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.net.ProtocolException;
import java.net.SocketException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Callable;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The twin against itself on the default provider (shm here) over 127.0.0.1: a server and a client, each a
 * {@link JavaRstream} with its own pattern counters and output, on two threads of this JVM.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class RstreamTwinTest {

    private static final long RUN_TIMEOUT_SECONDS = 90;
    private static final Pattern RESULT_LINE = Pattern.compile(
        "\\S+ {1,9}\\S+ +\\S+ +\\S+ +\\S+ +\\d+\\.\\d\\ds +\\d+\\.\\d\\d +\\d+\\.\\d\\d");

    private final ExecutorService executor = Executors.newFixedThreadPool(2);

    @AfterEach
    void shutDown() throws InterruptedException {
        executor.shutdownNow();
        assertTrue(executor.awaitTermination(30, TimeUnit.SECONDS), "the twins did not stop");
    }

    @ParameterizedTest(name = "-T {0}")
    @ValueSource(strings = {"b", "n", "a"})
    void shouldPassCustomModeWithVerification(final String mode) throws Exception {
        final Pair pair = runPair(List.of("-S", "1000", "-C", "50", "-I", "5", "-T", "v", "-T", mode),
            UnaryOperator.identity(), UnaryOperator.identity());

        pair.assertBothExitedWith(JavaRstream.EXIT_SUCCESS);
        for (final Run run : List.of(pair.server, pair.client)) {
            assertEquals(2, run.lines().size(), run::toString);
            assertTrue(run.lines().get(1).startsWith("custom    1000    50      5       488k    "), run::toString);
            assertResultLine(run, run.lines().get(1));
        }
    }

    @ParameterizedTest(name = "-T {0}")
    @ValueSource(strings = {"b", "n"})
    void shouldPassWithASmallBufferThatForcesFrequentCreditsAndGrants(final String mode) throws Exception {
        final Pair pair = runPair(List.of("-B", "4096", "-S", "10000", "-C", "20", "-I", "5", "-T", "v", "-T", mode),
            UnaryOperator.identity(), UnaryOperator.identity());

        pair.assertBothExitedWith(JavaRstream.EXIT_SUCCESS);
        assertTrue(pair.client.lines().get(1).startsWith("custom    9.7k    20      5       1.9m    "),
            pair::toString);
    }

    @Test
    void shouldRunAShortenedDefaultModeOverTwoConnectionsWithOneRunningCounter() throws Exception {
        final Pair pair = runPair(List.of("-T", "v"), options -> options.countDivisor(1000),
            options -> options.countDivisor(1000));

        pair.assertBothExitedWith(JavaRstream.EXIT_SUCCESS);
        final List<String> names = List.of("name", "64_lat", "4k_lat", "64k_lat", "1m_lat", "64_bw", "4k_bw", "64k_bw",
            "1m_bw");
        for (final Run run : List.of(pair.server, pair.client)) {
            assertEquals(names, run.lines().stream().map(line -> line.split(" ", 2)[0]).toList(), run::toString);
            run.lines().stream().skip(1).forEach(line -> assertResultLine(run, line));
        }
        assertTrue(pair.client.lines().get(1).startsWith("64_lat    64      1       100     "), pair::toString);
        assertTrue(pair.client.lines().get(5).startsWith("64_bw     64      100     1       "), pair::toString);
    }

    @Test
    void shouldFailVerificationWhereTheClientCorruptedAByte() throws Exception {
        final long corrupted = 16 + 3 * 1000 + 7;
        final Pair pair = runPair(List.of("-S", "1000", "-C", "10", "-I", "2", "-T", "v", "-T", "b"),
            UnaryOperator.identity(), options -> options.corruptSentByte(corrupted));

        assertEquals(JavaRstream.EXIT_FAILURE, pair.server.status, pair::toString);
        assertEquals(List.of(PerfReport.HEADER, "data verification failed byte " + corrupted), pair.server.lines(),
            pair::toString);
        assertEquals(JavaRstream.EXIT_FAILURE, pair.client.status, pair::toString);
        assertEquals(List.of(PerfReport.HEADER), pair.client.lines(), pair::toString);
    }

    @Test
    void shouldCheckTheSyncMessagesToo() throws Exception {
        final Pair pair = runPair(List.of("-S", "1000", "-C", "10", "-I", "2", "-T", "v"),
            options -> options.corruptSentByte(5), UnaryOperator.identity());

        assertEquals(JavaRstream.EXIT_FAILURE, pair.client.status, pair::toString);
        assertEquals(List.of(PerfReport.HEADER, "data verification failed byte 5"), pair.client.lines(),
            pair::toString);
        assertEquals(JavaRstream.EXIT_FAILURE, pair.server.status, pair::toString);
        // the server's failed transfer (the client left) says on which connection, in which state
        assertTrue(pair.server.err.lines().anyMatch(line -> line.contains("RsocketConnection{")
            && line.startsWith("  on io.rdmachannel.nio.RdmaSocketChannel[")), pair::toString);
    }

    @Test
    void shouldExplainAFailedTransferByItsCausesAndTheChannel() throws Exception {
        final SocketException reset = new SocketException("Connection reset");
        reset.initCause(new ProtocolException("credit limit 70000 beyond the window"));
        reset.getCause().addSuppressed(new IOException("announced twice"));
        reset.addSuppressed(new IOException("send completed with a flush error on queue pair 17"));
        try (SocketChannel channel = SocketChannel.open()) {
            assertEquals(List.of(
                "  suppressed: java.io.IOException: send completed with a flush error on queue pair 17",
                "  caused by: java.net.ProtocolException: credit limit 70000 beyond the window",
                "    suppressed: java.io.IOException: announced twice",
                "  on " + channel), explained(reset, channel));
        }
    }

    @Test
    void shouldStopExplainingWhereTheCausesLeadBackToOneAlreadyPrinted() throws Exception {
        final SocketException reset = new SocketException("Connection reset");
        final IOException cause = new IOException("flushed");
        reset.initCause(cause);
        cause.addSuppressed(reset);
        try (SocketChannel channel = SocketChannel.open()) {
            assertEquals(List.of(
                "  caused by: java.io.IOException: flushed",
                "    suppressed: [circular reference: java.net.SocketException: Connection reset]",
                "  on " + channel), explained(reset, channel));
        }
    }

    private static List<String> explained(final Throwable failure, final SocketChannel channel) {
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        JavaRstream.explain(new PrintStream(err, true, StandardCharsets.UTF_8), failure, channel);
        return err.toString(StandardCharsets.UTF_8).lines().toList();
    }

    @Test
    void shouldRunTheSameTestsOverTheJdksSockets() throws Exception {
        final Pair pair = runPair(List.of("-S", "1000", "-C", "20", "-I", "2", "-T", "v", "-T", "s"),
            UnaryOperator.identity(), UnaryOperator.identity());

        pair.assertBothExitedWith(JavaRstream.EXIT_SUCCESS);
    }

    private static void assertResultLine(final Run run, final String line) {
        assertTrue(RESULT_LINE.matcher(line).matches(), () -> "not a result line: '" + line + "' in " + run);
    }

    private Pair runPair(final List<String> args, final UnaryOperator<RstreamOptions> serverHooks,
        final UnaryOperator<RstreamOptions> clientHooks) throws Exception {
        final List<String> serverArgs = new ArrayList<>(args);
        serverArgs.addAll(List.of("-b", "127.0.0.1", "-p", "0"));
        final Twin server = new Twin(serverHooks.apply(RstreamOptions.parse(serverArgs.toArray(String[]::new))));
        final Future<Integer> serverStatus = executor.submit((Callable<Integer>) server.rstream::run);
        final InetSocketAddress listening;
        try {
            listening = server.rstream.listening().get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (final Exception e) {
            throw new AssertionError("the server does not listen: " + server.finish(serverStatus), e);
        }
        final List<String> clientArgs = new ArrayList<>(args);
        clientArgs.addAll(List.of("-s", "127.0.0.1", "-p", Integer.toString(listening.getPort())));
        final Twin client = new Twin(clientHooks.apply(RstreamOptions.parse(clientArgs.toArray(String[]::new))));
        final Future<Integer> clientStatus = executor.submit((Callable<Integer>) client.rstream::run);
        return new Pair(server.finish(serverStatus), client.finish(clientStatus));
    }

    private static final class Twin {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ByteArrayOutputStream err = new ByteArrayOutputStream();
        private final JavaRstream rstream;

        Twin(final RstreamOptions options) {
            rstream = new JavaRstream(options, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        }

        Run finish(final Future<Integer> status) throws Exception {
            try {
                return new Run(status.get(RUN_TIMEOUT_SECONDS, TimeUnit.SECONDS), text(out), text(err));
            } catch (final TimeoutException e) {
                status.cancel(true);
                return fail("timed out after " + RUN_TIMEOUT_SECONDS + " s; so far: "
                    + new Run(-1, text(out), text(err)), e);
            }
        }

        private static synchronized String text(final ByteArrayOutputStream stream) {
            return stream.toString(StandardCharsets.UTF_8);
        }
    }

    private record Run(int status, String out, String err) {
        List<String> lines() {
            return out.lines().toList();
        }

        @Override
        public String toString() {
            return "exit " + status + "\n--- stdout\n" + out + "--- stderr\n" + err;
        }
    }

    private record Pair(Run server, Run client) {
        void assertBothExitedWith(final int status) {
            assertEquals(status, server.status, this::toString);
            assertEquals(status, client.status, this::toString);
        }

        @Override
        public String toString() {
            return "\n=== server " + server + "\n=== client " + client;
        }
    }
}
