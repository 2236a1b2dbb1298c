package io.rdmachannel.interop.contract;

import java.util.concurrent.Callable;
import java.util.concurrent.FutureTask;

/**
 * How a contract test drives its channels.
 */
enum IoMode {
    /**
     * Blocking channels, one platform thread per blocking activity.
     */
    BLOCKING("blocking"),

    /**
     * Non-blocking channels driven by a {@link java.nio.channels.Selector} event loop.
     */
    NON_BLOCKING("non-blocking+selector"),

    /**
     * Blocking channels, one virtual thread per blocking activity.
     */
    VIRTUAL_THREADS("virtual-threads");

    private final String displayName;

    IoMode(final String displayName) {
        this.displayName = displayName;
    }

    /**
     * Whether channels are used in blocking mode.
     *
     * @return true for {@link #BLOCKING} and {@link #VIRTUAL_THREADS}.
     */
    boolean blockingChannels() {
        return this != NON_BLOCKING;
    }

    /**
     * A thread builder of this mode's kind: virtual for {@link #VIRTUAL_THREADS}, platform daemon otherwise.
     *
     * @param name the thread's name, shown in state dumps.
     * @return an unstarted thread builder.
     */
    Thread.Builder threadBuilder(final String name) {
        return this == VIRTUAL_THREADS ? Thread.ofVirtual().name(name) : Thread.ofPlatform().daemon().name(name);
    }

    /**
     * Runs a task on a new thread of this mode's kind.
     *
     * @param name the thread's name.
     * @param task the task.
     * @param <T>  the task's result type.
     * @return the running task, whose {@code get} rethrows the task's failure.
     */
    <T> Forked<T> fork(final String name, final Callable<T> task) {
        final FutureTask<T> future = new FutureTask<>(task);
        final Thread thread = threadBuilder(name).start(future);
        return new Forked<>(thread, future);
    }

    @Override
    public String toString() {
        return displayName;
    }
}
