package io.rdmachannel.demo;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Prints what the echo client's connections measured: per connection, then over all of them.
 */
final class ClientReport {
    private ClientReport() {
    }

    /**
     * What the comparison needs of one transport's run.
     *
     * @param transport the transport's name.
     * @param p50Micros the median round trip over all connections.
     * @param megabytesPerSecond the bulk throughput over all connections, each way.
     */
    record Summary(String transport, double p50Micros, double megabytesPerSecond) {
    }

    /**
     * Print the ratios of two runs of the same workload: how many times lower the first's median round trip, and
     * how many times higher its bulk throughput.
     */
    static void compare(final Summary first, final Summary second) {
        System.out.printf(Locale.ROOT, "same run, same workload: ping-pong p50 %s %.1f us, %s %.1f us: %s %s;"
            + " bulk %s %.1f MB/s, %s %.1f MB/s: %s %.2fx%n", first.transport(), first.p50Micros(),
            second.transport(), second.p50Micros(), first.transport(), first.p50Micros() <= second.p50Micros()
                ? String.format(Locale.ROOT, "%.1fx lower", second.p50Micros() / first.p50Micros())
                : String.format(Locale.ROOT, "%.1fx higher", first.p50Micros() / second.p50Micros()),
            first.transport(), first.megabytesPerSecond(), second.transport(), second.megabytesPerSecond(),
            first.transport(), first.megabytesPerSecond() / second.megabytesPerSecond());
    }

    static Summary print(final String transport, final List<EchoClient.Result> results) {
        long bytes = 0;
        long firstStart = Long.MAX_VALUE;
        long lastEnd = Long.MIN_VALUE;
        for (final EchoClient.Result result : results) {
            System.out.printf(Locale.ROOT, "client: %s connection %d ping-pong: %s%n", transport, result.id(),
                percentiles(result.roundTrips()));
            final long nanos = result.bulkEnd() - result.bulkStart();
            System.out.printf(Locale.ROOT, "client: %s connection %d bulk: %s sent and echoed back in %.3f s, %.1f"
                + " MB/s each way, CRC32C %08x matches, then end of stream%n", transport, result.id(),
                Main.size(result.bulkBytes()),
                nanos / 1e9, megabytesPerSecond(result.bulkBytes(), nanos), result.checksum());
            bytes += result.bulkBytes();
            firstStart = Math.min(firstStart, result.bulkStart());
            lastEnd = Math.max(lastEnd, result.bulkEnd());
        }
        final long[] all = results.stream().flatMapToLong(result -> Arrays.stream(result.roundTrips())).sorted()
            .toArray();
        final String connections = Main.count(results.size(), "connection");
        System.out.printf(Locale.ROOT, "client: %s all %s ping-pong: %s%n", transport, connections,
            percentiles(all));
        final double throughput = megabytesPerSecond(bytes, lastEnd - firstStart);
        System.out.printf(Locale.ROOT, "client: %s all %s bulk: %s each way in %.3f s, %.1f MB/s each way,"
            + " every checksum OK%n", transport, connections, Main.size(bytes), (lastEnd - firstStart) / 1e9,
            throughput);
        return new Summary(transport, percentile(all, 0.5), throughput);
    }

    /**
     * Nearest-rank percentiles of sorted round trips, in microseconds.
     */
    private static String percentiles(final long[] sorted) {
        return String.format(Locale.ROOT, "%d round trips, p50 %.1f us, p99 %.1f us, p99.9 %.1f us, max %.1f us",
            sorted.length, percentile(sorted, 0.5), percentile(sorted, 0.99), percentile(sorted, 0.999),
            sorted[sorted.length - 1] / 1e3);
    }

    private static double percentile(final long[] sorted, final double fraction) {
        final int rank = (int) Math.ceil(fraction * sorted.length);
        return sorted[Math.max(0, Math.min(sorted.length, rank) - 1)] / 1e3;
    }

    private static double megabytesPerSecond(final long bytes, final long nanos) {
        return nanos <= 0 ? 0 : bytes / (nanos / 1e9) / 1e6;
    }
}
