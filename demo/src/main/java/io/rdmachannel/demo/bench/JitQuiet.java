package io.rdmachannel.demo.bench;

import java.util.function.LongConsumer;
import java.util.function.LongSupplier;

/**
 * Waits, after the JVM warm-up, until this JVM's JIT compilers have gone quiet, so that the measurements do not share
 * the CPU with compilations the warm-up queued. Where compiling is slow (an emulated guest, where a C2 compilation
 * takes seconds and the compiler threads share the one emulation thread with the measured ones) the queue outlasts
 * any fixed warm-up and, left running, took half of a measurement's time.
 *
 * <p>Quiet means: the total compilation time grew by at most {@link #QUIET_PERCENT}% of the wall time over
 * {@link #QUIET_READINGS} readings in a row, {@link #READING_MILLIS} ms apart.
 */
final class JitQuiet {
    static final long READING_MILLIS = 500;
    static final int QUIET_READINGS = 2;
    static final long QUIET_PERCENT = 1;
    /** Longest wait: the measurements start then, compiling or not (and say so). */
    static final long LIMIT_MILLIS = 120_000;

    private JitQuiet() {
    }

    /**
     * Wait until the compilers are quiet or {@code limitMillis} passed.
     *
     * @param compileMillis the total compilation time so far, in ms.
     * @param clockMillis a monotonic clock in ms.
     * @param sleep sleeps the given ms.
     * @param limitMillis the longest wait.
     * @return the ms waited until quiet, or -1 if the limit passed first.
     */
    static long await(final LongSupplier compileMillis, final LongSupplier clockMillis, final LongConsumer sleep,
        final long limitMillis) {
        final long start = clockMillis.getAsLong();
        long compiled = compileMillis.getAsLong();
        long at = start;
        int quiet = 0;
        while (quiet < QUIET_READINGS) {
            if (at - start >= limitMillis) {
                return -1;
            }
            sleep.accept(READING_MILLIS);
            final long now = clockMillis.getAsLong();
            final long nowCompiled = compileMillis.getAsLong();
            quiet = (nowCompiled - compiled) * 100 <= (now - at) * QUIET_PERCENT ? quiet + 1 : 0;
            compiled = nowCompiled;
            at = now;
        }
        return at - start;
    }
}
