package io.rdmachannel.interop.contract;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * What one contract test knows about its connections, printed when the test fails: named values (evaluated at dump
 * time, so counters show their last value), the step each thread was at, and the resources to close afterwards.
 * Thread-safe.
 */
final class ConnectionState {

    private final String testName;
    private final Map<String, Supplier<?>> values = new LinkedHashMap<>();
    private final Map<String, String> steps = new LinkedHashMap<>();
    private final Deque<AutoCloseable> resources = new ArrayDeque<>();

    ConnectionState(final String testName) {
        this.testName = testName;
    }

    /**
     * Records a fixed value, for example a seed or an address.
     *
     * @param key   the value's name.
     * @param value the value.
     */
    void put(final String key, final Object value) {
        watch(key, () -> value);
    }

    /**
     * Records a value read when the state is dumped, for example a byte counter or a channel.
     *
     * @param key   the value's name.
     * @param value reads the current value.
     */
    synchronized void watch(final String key, final Supplier<?> value) {
        values.put(key, value);
    }

    /**
     * Records the step the calling thread has reached.
     *
     * @param step what the thread is about to do.
     */
    synchronized void step(final String step) {
        final Thread thread = Thread.currentThread();
        steps.put(thread.getName().isEmpty() ? thread.toString() : thread.getName(), step);
    }

    /**
     * Closes {@code resource} when the test ends (in reverse order of registration), whatever its outcome.
     *
     * @param resource the resource.
     * @param <T>      its type.
     * @return the resource.
     */
    synchronized <T extends AutoCloseable> T closeAtEnd(final T resource) {
        resources.push(resource);
        return resource;
    }

    /**
     * Renders everything known, one entry per line.
     *
     * @return the dump.
     */
    synchronized String dump() {
        final StringBuilder out = new StringBuilder("connection state of ").append(testName).append(':');
        for (final Map.Entry<String, String> step : steps.entrySet()) {
            out.append("\n  step[").append(step.getKey()).append("] = ").append(step.getValue());
        }
        for (final Map.Entry<String, Supplier<?>> value : values.entrySet()) {
            out.append("\n  ").append(value.getKey()).append(" = ").append(render(value.getValue()));
        }
        return out.toString();
    }

    /**
     * Closes every registered resource, newest first, collecting failures.
     *
     * @return the failures, empty if all closed cleanly.
     */
    List<Exception> closeAll() {
        final List<Exception> failures = new ArrayList<>();
        while (true) {
            final AutoCloseable resource;
            synchronized (this) {
                resource = resources.poll();
            }
            if (resource == null) {
                return failures;
            }
            try {
                resource.close();
            } catch (final Exception ex) {
                failures.add(ex);
            }
        }
    }

    private static String render(final Supplier<?> value) {
        try {
            return String.valueOf(value.get());
        } catch (final RuntimeException ex) {
            return "<" + ex + ">";
        }
    }
}
