package io.rdmachannel.demo.bench;

import java.util.List;
import java.util.Locale;

/**
 * Results as text: one JSON object per line, or a table for people.
 */
final class ResultFormat {
    private static final String TABLE_ROW = "%-9s %-14s %-9s %-9s %7s %10s %10s %10s %10s %10s %12s%n";

    private ResultFormat() {
    }

    /**
     * One JSON object with the fields transport, provider, mode, test, size, iterations, p50_us, p99_us, p999_us,
     * mean_us, mb_per_s, msgs_per_s, and for churn where a cycle went (connect_p50_us, connect_mean_us, echo_p50_us,
     * echo_mean_us, close_p50_us, close_mean_us), in that order, null where they do not apply.
     */
    static String json(final BenchResult result) {
        return "{\"transport\":" + string(result.transport())
            + ",\"provider\":" + string(result.provider())
            + ",\"mode\":" + string(result.mode())
            + ",\"test\":" + string(result.test())
            + ",\"size\":" + result.size()
            + ",\"iterations\":" + result.iterations()
            + ",\"p50_us\":" + number(result.p50Us(), 3)
            + ",\"p99_us\":" + number(result.p99Us(), 3)
            + ",\"p999_us\":" + number(result.p999Us(), 3)
            + ",\"mean_us\":" + number(result.meanUs(), 3)
            + ",\"mb_per_s\":" + number(result.mbPerS(), 3)
            + ",\"msgs_per_s\":" + number(result.msgsPerS(), 1)
            + phasesJson(result.phases())
            + "}";
    }

    private static String phasesJson(final ChurnPhases phases) {
        return ",\"connect_p50_us\":" + number(phases == null ? null : phases.connectP50Us(), 3)
            + ",\"connect_mean_us\":" + number(phases == null ? null : phases.connectMeanUs(), 3)
            + ",\"echo_p50_us\":" + number(phases == null ? null : phases.echoP50Us(), 3)
            + ",\"echo_mean_us\":" + number(phases == null ? null : phases.echoMeanUs(), 3)
            + ",\"close_p50_us\":" + number(phases == null ? null : phases.closeP50Us(), 3)
            + ",\"close_mean_us\":" + number(phases == null ? null : phases.closeMeanUs(), 3);
    }

    /**
     * Where the churn results' cycles went on the connecting side, a line per result: connect, echo and close, p50
     * and mean. Empty without churn results.
     */
    static String phases(final List<BenchResult> results) {
        final StringBuilder lines = new StringBuilder();
        for (final BenchResult result : results) {
            final ChurnPhases phases = result.phases();
            if (phases == null) {
                continue;
            }
            if (lines.isEmpty()) {
                lines.append(String.format(Locale.ROOT, "%nchurn cycles on the connecting side, p50 / mean us:%n"));
            }
            lines.append(String.format(Locale.ROOT,
                "  %-24s %-9s %5s: connect %.1f / %.1f, echo %.1f / %.1f, close %.1f / %.1f%n",
                result.transport() + (result.provider() == null ? "" : "/" + result.provider()), result.mode(),
                size(result.size()), phases.connectP50Us(), phases.connectMeanUs(), phases.echoP50Us(),
                phases.echoMeanUs(), phases.closeP50Us(), phases.closeMeanUs()));
        }
        return lines.toString();
    }

    /**
     * A table with a header line and one line per result.
     */
    static String table(final List<BenchResult> results) {
        final StringBuilder table = new StringBuilder();
        table.append(String.format(Locale.ROOT, TABLE_ROW, "transport", "provider", "mode", "test", "size",
            "iterations", "p50 us", "p99 us", "p99.9 us", "MB/s", "msgs/s"));
        for (final BenchResult result : results) {
            table.append(String.format(Locale.ROOT, TABLE_ROW, result.transport(), orDash(result.provider()),
                result.mode(), result.test(), size(result.size()), result.iterations(), cell(result.p50Us(), 1),
                cell(result.p99Us(), 1), cell(result.p999Us(), 1), cell(result.mbPerS(), 1),
                cell(result.msgsPerS(), 0)));
        }
        return table.toString();
    }

    /**
     * The RDMA results next to the TCP and UDS results of the same mode, test and size, measured right after each
     * other: how many times lower the RDMA p50 round trip is, how many times higher its bandwidth. Empty when there
     * is nothing to compare.
     */
    static String ratios(final List<BenchResult> results) {
        final StringBuilder lines = new StringBuilder();
        for (final BenchResult rdma : results) {
            if (!Transport.RDMA.label().equals(rdma.transport())) {
                continue;
            }
            final StringBuilder line = new StringBuilder();
            for (final BenchResult other : results) {
                if (other == rdma || Transport.RDMA.label().equals(other.transport())
                    || !other.mode().equals(rdma.mode()) || !other.test().equals(rdma.test())
                    || other.size() != rdma.size()) {
                    continue;
                }
                if (Workload.CHURN.label().equals(rdma.test())) {
                    line.append(String.format(Locale.ROOT, ", %s %,.0f cycles/s (%.2fx)", other.transport(),
                        other.msgsPerS(), rdma.msgsPerS() / other.msgsPerS()));
                } else if (rdma.p50Us() != null && other.p50Us() != null) {
                    final double lower = other.p50Us() / rdma.p50Us();
                    line.append(lower >= 1
                        ? String.format(Locale.ROOT, ", %s %.1f us (%.1fx lower)", other.transport(), other.p50Us(),
                            lower)
                        : String.format(Locale.ROOT, ", %s %.1f us (%.1fx higher)", other.transport(),
                            other.p50Us(), 1 / lower));
                } else if (rdma.mbPerS() != null && other.mbPerS() != null) {
                    line.append(String.format(Locale.ROOT, ", %s %,.1f MB/s (%.2fx)", other.transport(),
                        other.mbPerS(), rdma.mbPerS() / other.mbPerS()));
                }
            }
            if (line.isEmpty()) {
                continue;
            }
            if (lines.isEmpty()) {
                lines.append(String.format(Locale.ROOT, "%nsame-run ratios (rdma against the others, same mode, test"
                    + " and size):%n"));
            }
            lines.append(String.format(Locale.ROOT, "  %-9s %-9s %5s: rdma ", rdma.mode(), rdma.test(),
                size(rdma.size())));
            if (Workload.CHURN.label().equals(rdma.test())) {
                lines.append(String.format(Locale.ROOT, "%,.0f cycles/s", rdma.msgsPerS()));
            } else {
                lines.append(rdma.p50Us() != null ? String.format(Locale.ROOT, "%.1f us", rdma.p50Us())
                    : String.format(Locale.ROOT, "%,.1f MB/s", rdma.mbPerS()));
            }
            lines.append(line).append(System.lineSeparator());
        }
        return lines.toString();
    }

    /**
     * A size in bytes with the largest exact suffix k or m (x1024): 64, 4k, 1m, 1500.
     */
    static String size(final long bytes) {
        if (bytes != 0 && bytes % (1L << 20) == 0) {
            return (bytes >> 20) + "m";
        }
        if (bytes != 0 && bytes % (1L << 10) == 0) {
            return (bytes >> 10) + "k";
        }
        return Long.toString(bytes);
    }

    static String string(final String value) {
        if (value == null) {
            return "null";
        }
        final StringBuilder quoted = new StringBuilder(value.length() + 2).append('"');
        for (int i = 0; i < value.length(); i++) {
            final char c = value.charAt(i);
            switch (c) {
                case '"' -> quoted.append("\\\"");
                case '\\' -> quoted.append("\\\\");
                case '\n' -> quoted.append("\\n");
                case '\r' -> quoted.append("\\r");
                case '\t' -> quoted.append("\\t");
                default -> {
                    if (c < 0x20) {
                        quoted.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
                    } else {
                        quoted.append(c);
                    }
                }
            }
        }
        return quoted.append('"').toString();
    }

    /**
     * A JSON number with {@code decimals} places, or null (also for NaN and infinities, which JSON cannot hold).
     */
    static String number(final Double value, final int decimals) {
        if (value == null || value.isNaN() || value.isInfinite()) {
            return "null";
        }
        return String.format(Locale.ROOT, "%." + decimals + "f", value);
    }

    private static String cell(final Double value, final int decimals) {
        return value == null ? "-" : String.format(Locale.ROOT, "%,." + decimals + "f", value);
    }

    private static String orDash(final String value) {
        return value == null ? "-" : value;
    }
}
