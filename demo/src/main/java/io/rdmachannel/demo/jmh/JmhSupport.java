package io.rdmachannel.demo.jmh;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * What the benchmarks share: the JVM flags of their forks and bounded waits for set-up and the data path.
 */
final class JmhSupport {
    /** The JVM flags every rdmachannel JVM needs (rdmachannel.jvm.flags in the parent pom), for the forks. */
    static final String ADD_EXPORTS = "--add-exports";
    static final String ADD_EXPORTS_VALUE = "java.base/jdk.internal.misc=ALL-UNNAMED";
    static final String ENABLE_NATIVE_ACCESS = "--enable-native-access=ALL-UNNAMED";

    /** How long a set-up step may wait for the other side. */
    static final long SETUP_NANOS = TimeUnit.SECONDS.toNanos(10);

    /**
     * Fruitless rounds of a same-thread write/read loop after which the loop gives up: both ends are driven by the
     * one benchmark thread, so a round without progress means the stream is stuck, not slow.
     */
    static final int MAX_IDLE_ROUNDS = 1_000_000;

    private JmhSupport() {
    }

    /**
     * Wait, parking briefly, until the condition holds.
     *
     * @throws IllegalStateException naming {@code what} after {@link #SETUP_NANOS}.
     */
    static void await(final String what, final BooleanSupplier condition) {
        final long deadline = System.nanoTime() + SETUP_NANOS;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("timed out waiting for " + what);
            }
            LockSupport.parkNanos(50_000);
        }
    }

    /**
     * Fail a write/read loop that made no progress for {@link #MAX_IDLE_ROUNDS} rounds.
     *
     * @param idleRounds rounds without progress so far.
     * @param what what is stuck, for the message.
     * @return {@code idleRounds + 1}.
     */
    static int idle(final int idleRounds, final Object what) {
        if (idleRounds >= MAX_IDLE_ROUNDS) {
            throw new IllegalStateException("no progress after " + idleRounds + " rounds: " + what);
        }
        return idleRounds + 1;
    }
}
