package io.rdmachannel.demo.bench;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class BenchOptionsTest {
    @Test
    void shouldMeasureEverythingByDefault() {
        final BenchOptions options = BenchOptions.parse();

        assertEquals(List.of(Transport.RDMA, Transport.TCP, Transport.UDS), options.transports());
        assertNull(options.provider());
        assertNull(options.address());
        assertEquals(List.of(Mode.BLOCKING, Mode.SELECTOR, Mode.BUSY_POLL), options.modes());
        assertEquals(List.of(Workload.LATENCY, Workload.BANDWIDTH), options.workloads());
        assertEquals(List.of(64, 4096, 65536), options.sizes());
        assertEquals(10_000, options.iterations());
        assertEquals(10_000, options.warmUp());
        assertEquals(0, options.bytes(), "the default");
        // 64 MiB, and at least 32,768 messages
        assertEquals(1 << 20, options.bandwidthMessages(64));
        assertEquals(32_768, options.bandwidthMessages(4096));
        assertEquals(32_768, options.bandwidthMessages(65536));
        assertEquals(1000, options.busyPollMicros());
        assertEquals(300, options.timeoutSeconds());
        assertEquals(false, options.json());
        assertNull(options.plot());
        assertEquals(false, options.registered());
        assertEquals(false, options.stats());
    }

    @Test
    void shouldParseEveryOption() {
        final BenchOptions options = BenchOptions.parse("--transport", "uds,rdma", "--provider=shm", "--address",
            "[2001:db8::1]", "--mode", "busy-poll", "--test", "bandwidth", "--sizes", "1,4k,2M", "--iterations",
            "5", "--warmup", "0", "--bytes", "256m", "--busy-poll-us", "50", "--timeout", "9", "--json", "--plot",
            "out/b.png", "--registered", "--stats");

        assertEquals(List.of(Transport.UDS, Transport.RDMA), options.transports());
        assertEquals("shm", options.provider());
        assertEquals(InetAddress.ofLiteral("2001:db8::1"), options.address());
        assertEquals(List.of(Mode.BUSY_POLL), options.modes());
        assertEquals(List.of(Workload.BANDWIDTH), options.workloads());
        assertEquals(List.of(1, 4096, 2 << 20), options.sizes());
        assertEquals(5, options.iterations());
        assertEquals(0, options.warmUp());
        assertEquals(256L << 20, options.bytes());
        assertEquals(50, options.busyPollMicros());
        assertEquals(9, options.timeoutSeconds());
        assertTrue(options.json());
        assertEquals(Path.of("out/b.png"), options.plot());
        assertTrue(options.registered());
        assertTrue(options.stats());
    }

    @Test
    void shouldReturnNullForHelp() {
        assertNull(BenchOptions.parse("--sizes", "64", "--help"));
        assertNull(BenchOptions.parse("-h"));
    }

    @Test
    void shouldCountWholeMessagesOfTheBandwidthBytes() {
        final BenchOptions options = BenchOptions.parse("--bytes", "1000");

        assertEquals(15, options.bandwidthMessages(64));
        assertEquals(1, options.bandwidthMessages(4096));
    }

    @Test
    void shouldNameTheBadArgument() {
        assertMessage("unknown argument '--size'", "--size", "64");
        assertMessage("unknown argument 'latency'", "latency");
        assertMessage("--sizes needs a value", "--sizes");
        assertMessage("--transport: unknown transport 'ib'", "--transport", "tcp,ib");
        assertMessage("--mode: unknown mode 'polling'", "--mode", "polling");
        assertMessage("--test: unknown test 'throughput'", "--test", "throughput");
        assertMessage("--provider takes shm or native, not 'mlx5'", "--provider", "mlx5");
        assertMessage("--address takes an IPv4 or IPv6 address, not 'localhost'", "--address", "localhost");
        assertMessage("--sizes takes a comma-separated list without empty entries, not '64,,128'", "--sizes",
            "64,,128");
        assertMessage("--mode names selector twice", "--mode", "selector,blocking,selector");
        assertMessage("--sizes takes a whole number with an optional suffix k, m, g or t, not '4kb'", "--sizes",
            "4kb");
        assertMessage("--sizes must be between 1 and 67108864, not '0'", "--sizes", "0");
        assertMessage("--sizes must be between 1 and 67108864, not '65m'", "--sizes", "64,65m");
        assertMessage("--iterations takes a whole number, not '10k'", "--iterations", "10k");
        assertMessage("--iterations must be between 1 and 10000000, not '-3'", "--iterations", "-3");
        assertMessage("--iterations must be between 1 and 10000000, not '10000001'", "--iterations", "10000001");
        assertMessage("--warmup must be between 0 and 100000000, not '100000001'", "--warmup", "100000001");
        assertMessage("--bytes must be between 1 and 1099511627776, not '2t'", "--bytes", "2t");
        assertMessage("--json takes no value", "--json=yes");
        assertMessage("--stats takes no value", "--stats=1");
        assertMessage("--plot takes the name of a .png file, not 'plot.svg'", "--plot", "plot.svg");
    }

    @Test
    void shouldExitWithTwoAndAMessageOnStderrForBadArguments() {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();

        final int status = BenchMain.run(new String[] {"--sizes", "64,x"}, print(out), print(err));

        assertEquals(2, status);
        assertEquals("", out.toString(StandardCharsets.UTF_8));
        assertEquals("rdmachannel bench: --sizes takes a whole number with an optional suffix k, m, g or t,"
            + " not 'x' (try --help)" + System.lineSeparator(), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldExitWithTwoWhenThePlotFolderIsMissing() {
        final ByteArrayOutputStream err = new ByteArrayOutputStream();

        final int status = BenchMain.run(new String[] {"--plot", "/nonexistent-folder/b.png"},
            print(new ByteArrayOutputStream()), print(err));

        assertEquals(2, status);
        assertEquals("rdmachannel bench: --plot: the folder /nonexistent-folder does not exist (try --help)"
            + System.lineSeparator(), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void shouldPrintTheUsageOnStdoutForHelp() {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();

        final int status = BenchMain.run(new String[] {"--help"}, print(out), print(new ByteArrayOutputStream()));

        assertEquals(0, status);
        assertEquals(BenchOptions.USAGE, out.toString(StandardCharsets.UTF_8));
    }

    private static void assertMessage(final String message, final String... args) {
        final IllegalArgumentException ex = assertThrows(IllegalArgumentException.class,
            () -> BenchOptions.parse(args));
        assertEquals(message, ex.getMessage());
    }

    private static PrintStream print(final ByteArrayOutputStream bytes) {
        return new PrintStream(bytes, true, StandardCharsets.UTF_8);
    }
}
