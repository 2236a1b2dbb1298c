package io.rdmachannel.demo.bench;

import java.util.Arrays;

/**
 * Where a churn cycle's time goes on the connecting side: the connect (until the channel is connected and the
 * session header written), the echo of the message, the close. Medians and means in microseconds.
 */
record ChurnPhases(double connectP50Us, double connectMeanUs, double echoP50Us, double echoMeanUs,
    double closeP50Us, double closeMeanUs) {

    /**
     * The phases from each cycle's nanoseconds, which this sorts.
     */
    static ChurnPhases of(final long[] connectNanos, final long[] echoNanos, final long[] closeNanos) {
        return new ChurnPhases(p50(connectNanos), mean(connectNanos), p50(echoNanos), mean(echoNanos),
            p50(closeNanos), mean(closeNanos));
    }

    private static double p50(final long[] nanos) {
        Arrays.sort(nanos);
        return BenchResult.micros(nanos, Percentiles.P50);
    }

    private static double mean(final long[] nanos) {
        return BenchResult.mean(nanos) / 1e3;
    }

    /**
     * Each cycle's phases as {@link BenchClient#cycles} measures them.
     */
    static final class Recorder {
        private final long[] connect;
        private final long[] echo;
        private final long[] close;

        Recorder(final int cycles) {
            connect = new long[cycles];
            echo = new long[cycles];
            close = new long[cycles];
        }

        int cycles() {
            return connect.length;
        }

        void record(final int cycle, final long start, final long connected, final long echoed, final long closed) {
            connect[cycle] = connected - start;
            echo[cycle] = echoed - connected;
            close[cycle] = closed - echoed;
        }

        /** The whole cycles' nanoseconds. */
        long[] cycleNanos() {
            final long[] total = new long[connect.length];
            for (int i = 0; i < total.length; i++) {
                total[i] = connect[i] + echo[i] + close[i];
            }
            return total;
        }

        ChurnPhases phases() {
            return of(connect.clone(), echo.clone(), close.clone());
        }
    }
}
