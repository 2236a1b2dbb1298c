package io.rdmachannel.interop.rstream;

import java.util.ArrayList;
import java.util.List;

/**
 * The tests of rstream's default mode: its table of 33 sizes from 64 B to 6 MiB, of which four (64, 4k, 64k, 1m)
 * run unless {@code -S all} is given, and {@code size_to_count}, which gives the latency tests' iterations and the
 * bandwidth tests' transfer counts.
 */
final class TestPlan {

    private static final int[] DEFAULT_SIZES = {1 << 6, 1 << 12, 1 << 16, 1 << 20};

    private TestPlan() {
    }

    /**
     * @param allSizes whether {@code -S all} was given.
     * @return the sizes the default mode runs, in order.
     */
    static int[] sizes(final boolean allSizes) {
        if (!allSizes) {
            return DEFAULT_SIZES.clone();
        }
        final List<Integer> sizes = new ArrayList<>();
        sizes.add(1 << 6);
        for (int shift = 7; shift <= 22; shift++) {
            sizes.add(1 << shift);
            sizes.add((1 << shift) + (1 << (shift - 1)));
        }
        return sizes.stream().mapToInt(Integer::intValue).toArray();
    }

    /**
     * rstream's {@code size_to_count}.
     *
     * @param size the transfer size.
     * @return 100 from 1 MiB, 1,000 from 64 KiB, 10,000 from 1 KiB, else 100,000.
     */
    static int sizeToCount(final int size) {
        if (size >= 1 << 20) {
            return 100;
        } else if (size >= 1 << 16) {
            return 1000;
        } else if (size >= 1 << 10) {
            return 10000;
        }
        return 100000;
    }

    static List<TestSpec> latencyTests(final boolean allSizes, final int countDivisor) {
        final List<TestSpec> tests = new ArrayList<>();
        for (final int size : sizes(allSizes)) {
            tests.add(new TestSpec(PerfReport.sizeString(size) + "_lat", size, 1,
                Math.max(1, sizeToCount(size) / countDivisor)));
        }
        return tests;
    }

    static List<TestSpec> bandwidthTests(final boolean allSizes, final int countDivisor) {
        final List<TestSpec> tests = new ArrayList<>();
        for (final int size : sizes(allSizes)) {
            tests.add(new TestSpec(PerfReport.sizeString(size) + "_bw", size,
                Math.max(1, sizeToCount(size) / countDivisor), 1));
        }
        return tests;
    }
}
