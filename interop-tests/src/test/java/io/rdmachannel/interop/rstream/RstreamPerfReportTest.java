package io.rdmachannel.interop.rstream;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Locale;

import static org.junit.jupiter.api.Assertions.assertEquals;

class RstreamPerfReportTest {

    @Test
    void shouldPrintRstreamsHeader() {
        assertEquals("name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer", PerfReport.HEADER);
    }

    @Test
    void shouldPrintACustomLineInRstreamsColumns() {
        final String line = PerfReport.line(new TestSpec("custom", 1000, 1000, 1), 2_000_000);

        assertEquals("custom    1000    1k      1       1.9m        2.00s      0.01    1000.00", line);
    }

    @Test
    void shouldComputeGigabitsPerSecondAndMicrosecondsPerTransfer() {
        final TestSpec test = new TestSpec("4k_bw", 4096, 10000, 1);
        final long usec = 123_457;
        final long bytes = 4096L * 10000 * 2;

        final String line = PerfReport.line(test, usec);

        final String expected = String.format(Locale.ROOT, "%8.2fs%10.2f%11.2f", usec / 1e6,
            bytes * 8 / (1000.0 * usec), (double) usec / 1 / (2 * 10000));
        assertEquals("4k_bw     4k      10k     1       78m     " + expected, line);
        assertEquals("    0.12s      5.31       6.17", expected);
    }

    @Test
    void shouldPrintALatencyLineWithTheHalfRoundTrip() {
        final String line = PerfReport.line(new TestSpec("64_lat", 64, 1, 100000), 1_000_000);

        assertEquals("64_lat    64      1       100k    12m         1.00s      0.10       5.00", line);
    }

    @Test
    void shouldPrintInfinityAsGlibcDoesWhenNoTimeElapsed() {
        final String line = PerfReport.line(new TestSpec("custom", 16, 1, 1), 0);

        assertEquals("custom    16      1       1       32          0.00s       inf       0.00", line);
    }

    @Test
    void shouldFormatSizesWithBinaryUnitsAndOneTruncatedDecimalBelowTen() {
        final List<Long> sizes = List.of(64L, 1000L, 1024L, 1536L, 4095L, 65536L, 196608L, 1048576L, 2_000_000L,
            12_800_000L, 1L << 30, 3L << 29);
        final List<String> texts = sizes.stream().map(PerfReport::sizeString).toList();

        assertEquals(List.of("64", "1000", "1k", "1.5k", "3.9k", "64k", "192k", "1m", "1.9m", "12m", "1g", "1.5g"),
            texts);
    }

    @Test
    void shouldFormatCountsWithTruncatedDecimalUnits() {
        final List<String> texts = List.of(1L, 999L, 1000L, 1999L, 100000L, 1_500_000L, 2_000_000_000L).stream()
            .map(PerfReport::countString).toList();

        assertEquals(List.of("1", "999", "1k", "1k", "100k", "1m", "2b"), texts);
    }
}
