package io.rdmachannel.interop.rstream;

import java.util.Locale;

/**
 * rstream's output: the header and one line per test, with the same columns, widths, unit suffixes and formulas as
 * {@code show_perf} and {@code size_str}/{@code cnt_str} of rdma-core's {@code librdmacm/examples}.
 *
 * <pre>
 * name      bytes   xfers   iters   total       time     Gb/sec    usec/xfer
 * custom    1000    1000    1       1.9m       0.02s      0.80      10.00
 * </pre>
 *
 * Gb/sec is {@code bytes * 8 / (1000 * usec)} and usec/xfer is {@code usec / iterations / (2 * count)}, where
 * bytes counts both directions. rstream keeps the elapsed microseconds in a C {@code float}; so does this class,
 * so that the same elapsed time prints the same digits.
 */
final class PerfReport {

    /** The header line, without the line separator. */
    static final String HEADER = String.format(Locale.ROOT, "%-10s%-8s%-8s%-8s%-8s%8s %10s%13s",
        "name", "bytes", "xfers", "iters", "total", "time", "Gb/sec", "usec/xfer");

    private static final long KIB = 1L << 10;
    private static final long MIB = 1L << 20;
    private static final long GIB = 1L << 30;

    private PerfReport() {
    }

    /**
     * One result line, without the line separator.
     *
     * @param test          the test.
     * @param elapsedMicros the elapsed time of the timed loop in microseconds.
     * @return the line.
     */
    static String line(final TestSpec test, final long elapsedMicros) {
        final float usec = elapsedMicros;
        final long bytes = test.totalBytes();
        final double seconds = usec / 1000000.0;
        final double gbps = (bytes * 8) / (1000.0 * usec);
        final float usecPerTransfer = (usec / test.iterations()) / (test.count() * 2);
        return String.format(Locale.ROOT, "%-10s%-8s%-8s%-8s%-8s", test.name(), sizeString(test.size()),
            countString(test.count()), countString(test.iterations()), sizeString(bytes))
            + fixed(seconds, 8) + "s" + fixed(gbps, 10) + fixed(usecPerTransfer, 11);
    }

    /**
     * A size the way rstream prints it: a binary unit k, m or g, with one decimal below 10 units when it is not 0
     * (truncated, not rounded), e.g. {@code 64}, {@code 1.5k}, {@code 64k}, {@code 1.9m}.
     *
     * @param size the size in bytes.
     * @return the text.
     */
    static String sizeString(final long size) {
        final long base;
        final String unit;
        if (size >= GIB) {
            base = GIB;
            unit = "g";
        } else if (size >= MIB) {
            base = MIB;
            unit = "m";
        } else if (size >= KIB) {
            base = KIB;
            unit = "k";
        } else {
            base = 1;
            unit = "";
        }
        final long fraction = size / base < 10 ? (size % base) * 10 / base : 0;
        return fraction != 0 ? size / base + "." + fraction + unit : size / base + unit;
    }

    /**
     * A count the way rstream prints it: a decimal unit k, m or b, truncated, e.g. {@code 100k}.
     *
     * @param count the count.
     * @return the text.
     */
    static String countString(final long count) {
        if (count >= 1_000_000_000L) {
            return count / 1_000_000_000L + "b";
        } else if (count >= 1_000_000L) {
            return count / 1_000_000L + "m";
        } else if (count >= 1_000L) {
            return count / 1_000L + "k";
        }
        return Long.toString(count);
    }

    // glibc's printf renders a zero elapsed time as inf or -nan (x86's default NaN has the sign bit set).
    private static String fixed(final double value, final int width) {
        final String text;
        if (Double.isNaN(value)) {
            text = "-nan";
        } else if (Double.isInfinite(value)) {
            text = value > 0 ? "inf" : "-inf";
        } else {
            return String.format(Locale.ROOT, "%" + width + ".2f", value);
        }
        return String.format(Locale.ROOT, "%" + width + "s", text);
    }
}
