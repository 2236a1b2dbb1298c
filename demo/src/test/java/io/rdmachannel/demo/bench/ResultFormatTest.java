package io.rdmachannel.demo.bench;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ResultFormatTest {
    @Test
    void shouldFormatALatencyResultAsJsonWithNullRates() {
        final long[] nanos = {3_000, 1_000, 2_000, 4_000};

        final BenchResult result = BenchResult.latency("rdma", "shm", "busy-poll", 64, nanos);

        assertEquals("{\"transport\":\"rdma\",\"provider\":\"shm\",\"mode\":\"busy-poll\",\"test\":\"latency\","
            + "\"size\":64,\"iterations\":4,\"p50_us\":2.000,\"p99_us\":4.000,\"p999_us\":4.000,"
            + "\"mean_us\":2.500,\"mb_per_s\":null,\"msgs_per_s\":null"
            + ",\"connect_p50_us\":null,\"connect_mean_us\":null,\"echo_p50_us\":null,\"echo_mean_us\":null,"
            + "\"close_p50_us\":null,\"close_mean_us\":null}", ResultFormat.json(result));
    }

    @Test
    void shouldFormatABandwidthResultAsJsonWithNullPercentiles() {
        final BenchResult result = BenchResult.bandwidth("tcp", null, "selector", 65536, 1000, 500_000_000L);

        assertEquals("{\"transport\":\"tcp\",\"provider\":null,\"mode\":\"selector\",\"test\":\"bandwidth\","
            + "\"size\":65536,\"iterations\":1000,\"p50_us\":null,\"p99_us\":null,\"p999_us\":null,"
            + "\"mean_us\":null,\"mb_per_s\":131.072,\"msgs_per_s\":2000.0"
            + ",\"connect_p50_us\":null,\"connect_mean_us\":null,\"echo_p50_us\":null,\"echo_mean_us\":null,"
            + "\"close_p50_us\":null,\"close_mean_us\":null}", ResultFormat.json(result));
    }

    @Test
    void shouldSayWhereTheChurnCyclesWentOnTheConnectingSide() {
        final ChurnPhases.Recorder rdma = new ChurnPhases.Recorder(3);
        rdma.record(0, 0, 200_000, 290_000, 320_000);
        rdma.record(1, 1_000_000, 1_100_000, 1_160_000, 1_180_000);
        rdma.record(2, 2_000_000, 2_300_000, 2_400_000, 2_440_000);
        final ChurnPhases.Recorder tcp = new ChurnPhases.Recorder(1);
        tcp.record(0, 0, 40_000, 160_000, 170_000);
        final List<BenchResult> results = List.of(
            BenchResult.churn("rdma", "shm", "blocking", 64, rdma.cycleNanos(), 1_000_000_000L, rdma.phases()),
            BenchResult.churn("tcp", null, "blocking", 64, tcp.cycleNanos(), 1_000_000_000L, tcp.phases()),
            BenchResult.latency("tcp", null, "blocking", 64, new long[] {50_000}));

        final String n = System.lineSeparator();
        assertEquals(n + "churn cycles on the connecting side, p50 / mean us:" + n
            + "  rdma/shm                 blocking     64: connect 200.0 / 200.0, echo 90.0 / 83.3, close 30.0 / 30.0"
            + n
            + "  tcp                      blocking     64: connect 40.0 / 40.0, echo 120.0 / 120.0, close 10.0 / 10.0"
            + n, ResultFormat.phases(results));
        assertEquals(320.0, results.get(0).p50Us(), "a cycle is its three phases");
        assertEquals("", ResultFormat.phases(results.subList(2, 3)));
        assertEquals("{\"transport\":\"tcp\",\"provider\":null,\"mode\":\"blocking\",\"test\":\"churn\","
            + "\"size\":64,\"iterations\":1,\"p50_us\":170.000,\"p99_us\":170.000,\"p999_us\":170.000,"
            + "\"mean_us\":170.000,\"mb_per_s\":null,\"msgs_per_s\":1.0,\"connect_p50_us\":40.000,"
            + "\"connect_mean_us\":40.000,\"echo_p50_us\":120.000,\"echo_mean_us\":120.000,\"close_p50_us\":10.000,"
            + "\"close_mean_us\":10.000}", ResultFormat.json(results.get(1)));
    }

    @Test
    void shouldEscapeStringsAndNullNonFiniteNumbers() {
        assertEquals("\"a\\\"b\\\\c\\n\\u0001\"", ResultFormat.string("a\"b\\c\n\u0001"));
        assertEquals("null", ResultFormat.string(null));
        assertEquals("null", ResultFormat.number(Double.NaN, 3));
        assertEquals("null", ResultFormat.number(Double.POSITIVE_INFINITY, 3));
        assertEquals("null", ResultFormat.number(null, 3));
        assertEquals("1234567.5", ResultFormat.number(1_234_567.5, 1));
    }

    @Test
    void shouldPrintATableWithDashesWhereAFieldDoesNotApply() {
        final List<BenchResult> results = List.of(
            BenchResult.latency("uds", null, "blocking", 4096, new long[] {12_345}),
            BenchResult.bandwidth("rdma", "shm", "blocking", 1 << 20, 64, 1_000_000_000L));

        final String n = System.lineSeparator();
        assertEquals(
            "transport provider       mode      test         size iterations     p50 us     p99 us   p99.9 us"
                + "       MB/s       msgs/s" + n
            + "uds       -              blocking  latency        4k          1       12.3       12.3       12.3"
                + "          -            -" + n
            + "rdma      shm            blocking  bandwidth      1m         64          -          -          -"
                + "       67.1           64" + n,
            ResultFormat.table(results));
    }

    @Test
    void shouldCompareRdmaWithTheOthersOfTheSameModeTestAndSize() {
        final List<BenchResult> results = List.of(
            BenchResult.latency("rdma", "shm", "busy-poll", 64, new long[] {1_000}),
            BenchResult.latency("tcp", null, "busy-poll", 64, new long[] {7_000}),
            BenchResult.latency("tcp", null, "blocking", 64, new long[] {50_000}),
            BenchResult.latency("rdma", "shm", "blocking", 64, new long[] {100_000}),
            BenchResult.bandwidth("rdma", "shm", "busy-poll", 65536, 1000, 10_000_000L),
            BenchResult.bandwidth("uds", null, "busy-poll", 65536, 1000, 5_000_000L));

        final String n = System.lineSeparator();
        assertEquals(n + "same-run ratios (rdma against the others, same mode, test and size):" + n
            + "  busy-poll latency      64: rdma 1.0 us, tcp 7.0 us (7.0x lower)" + n
            + "  blocking  latency      64: rdma 100.0 us, tcp 50.0 us (2.0x higher)" + n
            + "  busy-poll bandwidth   64k: rdma 6,553.6 MB/s, uds 13,107.2 MB/s (0.50x)" + n,
            ResultFormat.ratios(results));
        assertEquals("", ResultFormat.ratios(results.subList(1, 3)));
    }

    @Test
    void shouldShowSizesWithTheLargestExactSuffix() {
        assertEquals("64", ResultFormat.size(64));
        assertEquals("1500", ResultFormat.size(1500));
        assertEquals("4k", ResultFormat.size(4096));
        assertEquals("64k", ResultFormat.size(65536));
        assertEquals("2m", ResultFormat.size(2 << 20));
    }
}
