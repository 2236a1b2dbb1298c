package io.rdmachannel.nio;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The drop-in's settings: destination rules ({@link PathRules}), how long an RDMA attempt may take before a connect
 * that may fall back gives up on it, and the cache of destinations that could not be reached over RDMA. Read once
 * per JVM from system properties, when the first channel needs them.
 */
final class DropInConfiguration {
    /** Rules inline, separated by {@code ;} or new lines. */
    static final String RULES_PROP_NAME = "rdmachannel.rules";
    /** A file of rules, read after the inline rules. */
    static final String RULES_FILE_PROP_NAME = "rdmachannel.rules.file";
    /** How long an RDMA connect that may fall back to TCP may take, in milliseconds. */
    static final String FALLBACK_TIMEOUT_PROP_NAME = "rdmachannel.fallback.timeoutMillis";
    static final long FALLBACK_TIMEOUT_DEFAULT = 2000;
    /** How long a destination that RDMA could not reach goes straight to TCP, in milliseconds; 0 to not remember. */
    static final String FALLBACK_CACHE_MILLIS_PROP_NAME = "rdmachannel.fallback.cacheMillis";
    static final long FALLBACK_CACHE_MILLIS_DEFAULT = 30_000;
    /** The most destinations remembered. */
    static final String FALLBACK_CACHE_SIZE_PROP_NAME = "rdmachannel.fallback.cacheSize";
    static final int FALLBACK_CACHE_SIZE_DEFAULT = 1024;

    private final PathRules rules;
    private final long fallbackTimeoutNanos;
    private final long cacheNanos;
    private final int cacheSize;
    private final Map<InetSocketAddress, Unreachable> unreachable;

    private DropInConfiguration(final PathRules rules, final long fallbackTimeoutMillis, final long cacheMillis,
        final int cacheSize) {
        this.rules = rules;
        this.fallbackTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(fallbackTimeoutMillis);
        this.cacheNanos = TimeUnit.MILLISECONDS.toNanos(cacheMillis);
        this.cacheSize = cacheSize;
        this.unreachable = new LinkedHashMap<>(16, 0.75f, false) {
            private static final long serialVersionUID = 1L;

            @Override
            protected boolean removeEldestEntry(final Map.Entry<InetSocketAddress, Unreachable> eldest) {
                return size() > DropInConfiguration.this.cacheSize;
            }
        };
    }

    /**
     * The settings of this JVM, read from the system properties on first use.
     *
     * @throws IllegalArgumentException naming a property whose value or rule is invalid.
     * @throws UncheckedIOException if the rules file cannot be read.
     */
    static DropInConfiguration get() {
        return Holder.INSTANCE;
    }

    /**
     * Settings from a set of properties (tests).
     */
    static DropInConfiguration from(final Properties properties) {
        PathRules rules = PathRules.NONE;
        final String inline = properties.getProperty(RULES_PROP_NAME);
        if (inline != null) {
            rules = rules.then(PathRules.parse(RULES_PROP_NAME, inline));
        }
        final String file = properties.getProperty(RULES_FILE_PROP_NAME);
        if (file != null && !file.isBlank()) {
            final String text;
            try {
                text = Files.readString(Path.of(file), StandardCharsets.UTF_8);
            } catch (final IOException ex) {
                throw new UncheckedIOException("cannot read the rules file " + RULES_FILE_PROP_NAME + "=" + file, ex);
            }
            rules = rules.then(PathRules.parse(file, text));
        }
        return new DropInConfiguration(rules,
            longProperty(properties, FALLBACK_TIMEOUT_PROP_NAME, FALLBACK_TIMEOUT_DEFAULT, 1),
            longProperty(properties, FALLBACK_CACHE_MILLIS_PROP_NAME, FALLBACK_CACHE_MILLIS_DEFAULT, 0),
            (int) longProperty(properties, FALLBACK_CACHE_SIZE_PROP_NAME, FALLBACK_CACHE_SIZE_DEFAULT, 1));
    }

    private static long longProperty(final Properties properties, final String name, final long defaultValue,
        final long min) {
        final String text = properties.getProperty(name);
        if (text == null) {
            return defaultValue;
        }
        try {
            final long value = Long.parseLong(text.strip());
            if (value < min || value > Integer.MAX_VALUE) {
                throw new IllegalArgumentException(name + " must be in [" + min + ", " + Integer.MAX_VALUE + "]: "
                    + name + "=" + text);
            }
            return value;
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException(name + " must be a whole number: " + name + "=" + text, ex);
        }
    }

    PathRules rules() {
        return rules;
    }

    /**
     * How long an RDMA attempt may take when the connect may fall back to TCP.
     */
    long fallbackTimeoutNanos() {
        return fallbackTimeoutNanos;
    }

    /**
     * Why RDMA could not reach {@code remote} lately, or null.
     */
    synchronized String unreachableReason(final InetSocketAddress remote) {
        final Unreachable entry = unreachable.get(remote);
        if (entry == null) {
            return null;
        }
        if (System.nanoTime() - entry.until >= 0) {
            unreachable.remove(remote);
            return null;
        }
        return entry.reason;
    }

    /**
     * Remember that RDMA could not reach {@code remote}.
     */
    synchronized void rememberUnreachable(final InetSocketAddress remote, final String reason) {
        if (cacheNanos > 0) {
            unreachable.remove(remote);
            unreachable.put(remote, new Unreachable(reason, System.nanoTime() + cacheNanos));
        }
    }

    /**
     * Run {@code task} once after {@code nanos}, on the drop-in's timer thread.
     */
    static ScheduledFuture<?> schedule(final Runnable task, final long nanos) {
        return Timer.EXECUTOR.schedule(task, nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public String toString() {
        return "DropInConfiguration{rules=" + rules + ", fallbackTimeoutMillis="
            + TimeUnit.NANOSECONDS.toMillis(fallbackTimeoutNanos) + ", cacheMillis="
            + TimeUnit.NANOSECONDS.toMillis(cacheNanos) + ", cacheSize=" + cacheSize + '}';
    }

    private record Unreachable(String reason, long until) {
    }

    private static final class Holder {
        static final DropInConfiguration INSTANCE = from(System.getProperties());
    }

    private static final class Timer {
        static final ScheduledExecutorService EXECUTOR = create();

        private static ScheduledExecutorService create() {
            final ScheduledThreadPoolExecutor executor = (ScheduledThreadPoolExecutor) Executors
                .newScheduledThreadPool(1, Thread.ofPlatform().daemon().name("rdmachannel-fallback-timer").factory());
            executor.setRemoveOnCancelPolicy(true);
            return executor;
        }
    }
}
