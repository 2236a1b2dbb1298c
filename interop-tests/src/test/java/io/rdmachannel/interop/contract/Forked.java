package io.rdmachannel.interop.contract;

import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A task running on its own thread, with the thread kept so that tests can interrupt it or inspect where it blocks.
 *
 * @param thread the thread running the task.
 * @param future the task.
 * @param <T>    the task's result type.
 */
record Forked<T>(Thread thread, FutureTask<T> future) {

    /**
     * Waits for the task and returns its result, rethrowing its failure unwrapped.
     *
     * @param timeout how long to wait at most.
     * @return the task's result.
     * @throws Exception the task's exception, or an {@link AssertionError} on timeout.
     */
    T join(final Duration timeout) throws Exception {
        try {
            return future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
        } catch (final ExecutionException ex) {
            if (ex.getCause() instanceof Exception cause) {
                throw cause;
            }
            if (ex.getCause() instanceof Error error) {
                throw error;
            }
            throw ex;
        } catch (final TimeoutException ex) {
            throw notFinished(timeout, ex);
        }
    }

    /**
     * Waits for the task to fail and returns what it threw.
     *
     * @param timeout how long to wait at most.
     * @return the task's exception or error.
     * @throws InterruptedException if the waiting thread is interrupted.
     */
    Throwable failure(final Duration timeout) throws InterruptedException {
        try {
            final T result = future.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            throw new AssertionError("thread " + thread.getName() + " completed normally with " + result);
        } catch (final ExecutionException ex) {
            return ex.getCause();
        } catch (final TimeoutException ex) {
            throw notFinished(timeout, ex);
        }
    }

    private AssertionError notFinished(final Duration timeout, final TimeoutException ex) {
        return new AssertionError("thread " + thread.getName() + " did not finish within " + timeout
            + ", state=" + thread.getState() + " at " + Await.topFrames(thread, 12), ex);
    }
}
