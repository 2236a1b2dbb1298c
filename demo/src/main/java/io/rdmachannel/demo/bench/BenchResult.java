package io.rdmachannel.demo.bench;

import java.util.Arrays;

/**
 * One measurement. Fields that do not apply to its test are null: latency has no rates, bandwidth no percentiles.
 *
 * @param transport  rdma, tcp or uds.
 * @param provider   the RDMA provider's name, null for tcp and uds.
 * @param mode       blocking, selector or busy-poll.
 * @param test       latency or bandwidth.
 * @param size       message size in bytes.
 * @param iterations timed round trips (latency) or messages written (bandwidth).
 * @param p50Us      median round trip in microseconds.
 * @param p99Us      99th percentile round trip in microseconds.
 * @param p999Us     99.9th percentile round trip in microseconds.
 * @param meanUs     mean round trip in microseconds (what rdma-core's rstream reports, halved, as usec/xfer).
 * @param mbPerS     megabytes (10^6 bytes) per second.
 * @param msgsPerS   messages per second.
 * @param phases     churn only: where a cycle's time goes (connect, echo, close).
 */
record BenchResult(String transport, String provider, String mode, String test, int size, long iterations,
    Double p50Us, Double p99Us, Double p999Us, Double meanUs, Double mbPerS, Double msgsPerS, ChurnPhases phases) {
    private static final double NANOS_PER_MICRO = 1e3;
    private static final double NANOS_PER_SECOND = 1e9;

    /**
     * A latency result from the round trips in nanoseconds, which this sorts.
     */
    static BenchResult latency(final String transport, final String provider, final String mode, final int size,
        final long[] roundTripNanos) {
        Arrays.sort(roundTripNanos);
        return new BenchResult(transport, provider, mode, Workload.LATENCY.label(), size, roundTripNanos.length,
            micros(roundTripNanos, Percentiles.P50), micros(roundTripNanos, Percentiles.P99),
            micros(roundTripNanos, Percentiles.P999), mean(roundTripNanos) / NANOS_PER_MICRO, null, null, null);
    }

    /**
     * A bandwidth result: {@code messages} of {@code size} bytes in {@code nanos}.
     */
    static BenchResult bandwidth(final String transport, final String provider, final String mode, final int size,
        final long messages, final long nanos) {
        final double seconds = Math.max(1, nanos) / NANOS_PER_SECOND;
        return new BenchResult(transport, provider, mode, Workload.BANDWIDTH.label(), size, messages, null, null,
            null, null, messages * (double) size / 1e6 / seconds, messages / seconds, null);
    }

    /**
     * A churn result from the cycle times in nanoseconds (connect, echo, close), which this sorts, the time all of
     * them took and where it went.
     */
    static BenchResult churn(final String transport, final String provider, final String mode, final int size,
        final long[] cycleNanos, final long totalNanos, final ChurnPhases phases) {
        Arrays.sort(cycleNanos);
        return new BenchResult(transport, provider, mode, Workload.CHURN.label(), size, cycleNanos.length,
            micros(cycleNanos, Percentiles.P50), micros(cycleNanos, Percentiles.P99),
            micros(cycleNanos, Percentiles.P999), mean(cycleNanos) / NANOS_PER_MICRO, null,
            cycleNanos.length / (Math.max(1, totalNanos) / NANOS_PER_SECOND), phases);
    }

    /**
     * The series this result belongs to in a plot: transport, provider and mode.
     */
    String series() {
        return transport + (provider == null ? "" : "/" + provider) + " " + mode;
    }

    /** The mean of {@code nanos}, NaN for none. */
    static double mean(final long[] nanos) {
        double sum = 0;
        for (final long value : nanos) {
            sum += value;
        }
        return nanos.length == 0 ? Double.NaN : sum / nanos.length;
    }

    /** The {@code perMille} percentile of sorted nanoseconds, in microseconds. */
    static double micros(final long[] sorted, final int perMille) {
        return Percentiles.valueAt(sorted, perMille) / NANOS_PER_MICRO;
    }
}
