package io.rdmachannel.channel.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * What a provider's resource runs once it is closed ({@link QueuePair#whenClosed}): actions added before the close
 * run on the closing thread, in the order they were added; an action added after it runs at once. Thread-safe. An
 * action that throws does not keep the others from running.
 */
public final class CloseActions {
    private List<Runnable> actions = new ArrayList<>(1);
    private boolean ran;

    /**
     * No actions yet.
     */
    public CloseActions() {
    }

    /**
     * Add an action, or run it now if {@link #run()} ran already.
     *
     * @param action what to run.
     */
    public void add(final Runnable action) {
        Objects.requireNonNull(action, "action");
        synchronized (this) {
            if (!ran) {
                actions.add(action);
                return;
            }
        }
        runQuietly(action);
    }

    /**
     * Run the actions added so far, once; later calls do nothing.
     */
    public void run() {
        final List<Runnable> toRun;
        synchronized (this) {
            if (ran) {
                return;
            }
            ran = true;
            toRun = actions;
            actions = List.of();
        }
        for (final Runnable action : toRun) {
            runQuietly(action);
        }
    }

    private static void runQuietly(final Runnable action) {
        try {
            action.run();
        } catch (final RuntimeException ex) {
            final Thread thread = Thread.currentThread();
            thread.getUncaughtExceptionHandler().uncaughtException(thread, ex);
        }
    }
}
