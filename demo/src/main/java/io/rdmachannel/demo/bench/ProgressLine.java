package io.rdmachannel.demo.bench;

import java.io.PrintStream;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The progress of a run on stderr: a line per measurement, {@code [3/36] rdma/shm blocking latency 64: ...}. On a
 * terminal the line is redrawn with the share done; otherwise a share is printed at most every 10 seconds.
 */
final class ProgressLine {
    private static final long QUIET_NANOS = TimeUnit.SECONDS.toNanos(10);

    private final PrintStream err;
    private final boolean terminal;
    private final int total;
    private String prefix = "";
    private long started;
    private long lastPrinted;

    ProgressLine(final PrintStream err, final boolean terminal, final int total) {
        this.err = err;
        this.terminal = terminal;
        this.total = total;
    }

    /**
     * Whether stderr goes to a terminal, so that a line can be redrawn.
     */
    static boolean isTerminal() {
        return System.console() != null && System.console().isTerminal();
    }

    synchronized void begin(final int index, final String what) {
        prefix = "[" + index + "/" + total + "] " + what;
        started = System.nanoTime();
        lastPrinted = started;
        if (terminal) {
            err.print("\r" + prefix + " ...");
        } else {
            err.println(prefix + " ...");
        }
        err.flush();
    }

    /**
     * The share of the current measurement done, from 0 to 1.
     */
    synchronized void update(final double done) {
        final long now = System.nanoTime();
        final String line = String.format(Locale.ROOT, "%s %3.0f%% (%.0f s)", prefix, done * 100,
            (now - started) / 1e9);
        if (terminal) {
            err.print("\r" + line);
            err.flush();
        } else if (now - lastPrinted >= QUIET_NANOS) {
            lastPrinted = now;
            err.println(line);
        }
    }

    synchronized void end(final String outcome) {
        err.printf(Locale.ROOT, "%s%s: %s (%.1f s)%n", terminal ? "\r\033[K" : "", prefix, outcome,
            (System.nanoTime() - started) / 1e9);
        err.flush();
    }
}
