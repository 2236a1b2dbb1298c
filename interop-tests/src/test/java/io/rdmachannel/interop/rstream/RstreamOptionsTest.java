package io.rdmachannel.interop.rstream;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertAll;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RstreamOptionsTest {

    @Test
    void shouldDefaultToAServerInDefaultModeLikeRstream() {
        final RstreamOptions options = RstreamOptions.parse();

        assertAll(
            () -> assertFalse(options.isClient()),
            () -> assertNull(options.bindAddress()),
            () -> assertEquals(7471, options.port()),
            () -> assertEquals(512 * 1024, options.bufferSize()),
            () -> assertEquals(64, options.inlineSize()),
            () -> assertFalse(options.isCustom()),
            () -> assertFalse(options.isBlocking()),
            () -> assertFalse(options.verify()),
            () -> assertEquals(new TestSpec("custom", 1000, 1000, 1), options.customTest()));
    }

    @Test
    void shouldSelectCustomModeWithAnyOfIterationsCountOrSize() {
        assertTrue(RstreamOptions.parse("-I", "3").isCustom());
        assertTrue(RstreamOptions.parse("-C", "3").isCustom());
        assertTrue(RstreamOptions.parse("-S", "3").isCustom());
        assertFalse(RstreamOptions.parse("-S", "all").isCustom());
        assertEquals(new TestSpec("custom", 65536, 100, 7),
            RstreamOptions.parse("-s", "10.0.0.1", "-S", "65536", "-C100", "-I", "7").customTest());
    }

    @Test
    void shouldTakeOneTestOptionPerFlagAndLetTheLastOfBlockingAndNonBlockingWin() {
        final RstreamOptions blocking = RstreamOptions.parse("-T", "n", "-T", "v", "-Tb");
        final RstreamOptions nonBlocking = RstreamOptions.parse("-T", "block", "-T", "nonblocking");

        assertAll(
            () -> assertTrue(blocking.isBlocking()),
            () -> assertTrue(blocking.verify()),
            () -> assertFalse(nonBlocking.isBlocking()),
            () -> assertTrue(RstreamOptions.parse("-T", "a").isAsync()),
            () -> assertTrue(RstreamOptions.parse("-T", "sockets").useSockets()));
    }

    @Test
    void shouldRefuseWhatTheTwinDoesNotSupport() {
        for (final List<String> args : List.of(List.of("-T", "f"), List.of("-T", "r"), List.of("-k", "5"),
            List.of("-f", "gid"), List.of("-x"), List.of("-p"), List.of("-C", "zero"), List.of("-C", "0"))) {
            assertThrows(IllegalArgumentException.class, () -> RstreamOptions.parse(args.toArray(String[]::new)),
                args::toString);
        }
    }

    @Test
    void shouldPrintUsageAndExitWithOneOnAUsageError() {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();

        final int status = JavaRstream.run(new PrintStream(out, true, StandardCharsets.UTF_8),
            new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8), "-T", "f");

        assertEquals(JavaRstream.EXIT_USAGE, status);
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("usage: JavaRstream"), out::toString);
    }

    @Test
    void shouldPlanTheDefaultModesLatencyAndBandwidthTests() {
        final RstreamOptions options = RstreamOptions.parse("-s", "10.0.0.1");

        assertEquals(List.of(new TestSpec("64_lat", 64, 1, 100000), new TestSpec("4k_lat", 4096, 1, 10000),
            new TestSpec("64k_lat", 65536, 1, 1000), new TestSpec("1m_lat", 1 << 20, 1, 100)), options.latencyTests());
        assertEquals(List.of(new TestSpec("64_bw", 64, 100000, 1), new TestSpec("4k_bw", 4096, 10000, 1),
            new TestSpec("64k_bw", 65536, 1000, 1), new TestSpec("1m_bw", 1 << 20, 100, 1)), options.bandwidthTests());
    }

    @Test
    void shouldPlanAllThirtyThreeSizesAndShortenCountsForTests() {
        final List<TestSpec> all = RstreamOptions.parse("-S", "all").latencyTests();
        final List<TestSpec> shortened = RstreamOptions.parse().countDivisor(1000).bandwidthTests();

        assertEquals(33, all.size());
        assertEquals(new TestSpec("192_lat", 192, 1, 100000), all.get(2));
        assertEquals(new TestSpec("1.5k_lat", 1536, 1, 10000), all.get(8));
        assertEquals(new TestSpec("6m_lat", 6 << 20, 1, 100), all.get(32));
        assertEquals(List.of(100, 10, 1, 1), shortened.stream().map(TestSpec::count).toList());
    }
}
