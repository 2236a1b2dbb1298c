package io.rdmachannel.demo.bench;

/**
 * Percentiles of a sorted sample by the nearest-rank method: the smallest value that at least the given share of the
 * sample does not exceed. Per-mille keeps 99.9 exact.
 */
final class Percentiles {
    static final int P50 = 500;
    static final int P99 = 990;
    static final int P999 = 999;

    private Percentiles() {
    }

    /**
     * The value at {@code perMille} thousandths of {@code sorted}, which is sorted ascending and not empty.
     *
     * @throws IllegalArgumentException on an empty sample or a share outside 1 to 1000.
     */
    static long valueAt(final long[] sorted, final int perMille) {
        if (sorted.length == 0) {
            throw new IllegalArgumentException("no values: sorted.length=0");
        }
        if (perMille < 1 || perMille > 1000) {
            throw new IllegalArgumentException("perMille=" + perMille + " is not in 1..1000");
        }
        final long rank = ((long) sorted.length * perMille + 999) / 1000;
        return sorted[(int) rank - 1];
    }
}
