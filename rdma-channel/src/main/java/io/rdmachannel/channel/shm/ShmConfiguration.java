package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.internal.Settings.intProperty;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Properties;

/**
 * Settings of the shared-memory provider: system property names and defaults, read when a device is opened.
 */
public final class ShmConfiguration {
    /** Directory holding the per-user folder of shared files and sockets. */
    public static final String DIRECTORY_PROP_NAME = "rdmachannel.shm.dir";
    /** Default: {@code /dev/shm/rdmachannel-<user>} where {@code /dev/shm} exists, else under java.io.tmpdir. */
    public static final String DIRECTORY_DEFAULT = defaultDirectory();

    /** Deepest send or receive queue a queue pair may ask for. */
    public static final String MAX_QUEUE_PAIR_WORK_REQUESTS_PROP_NAME = "rdmachannel.shm.maxQueuePairWorkRequests";
    /** Default for {@link #MAX_QUEUE_PAIR_WORK_REQUESTS_PROP_NAME}. */
    public static final int MAX_QUEUE_PAIR_WORK_REQUESTS_DEFAULT = 16384;

    /** Largest completion queue. */
    public static final String MAX_COMPLETION_QUEUE_ENTRIES_PROP_NAME = "rdmachannel.shm.maxCompletionQueueEntries";
    /** Default for {@link #MAX_COMPLETION_QUEUE_ENTRIES_PROP_NAME}. */
    public static final int MAX_COMPLETION_QUEUE_ENTRIES_DEFAULT = 1 << 20;

    /** Most scatter/gather entries per work request. */
    public static final String MAX_SGE_PROP_NAME = "rdmachannel.shm.maxSge";
    /** Default for {@link #MAX_SGE_PROP_NAME}. */
    public static final int MAX_SGE_DEFAULT = 16;

    /** Most bytes a send may carry inline. */
    public static final String MAX_INLINE_DATA_PROP_NAME = "rdmachannel.shm.maxInlineData";
    /** Default for {@link #MAX_INLINE_DATA_PROP_NAME}. */
    public static final int MAX_INLINE_DATA_DEFAULT = 1024;

    /** Most memory regions one device may have registered at once. */
    public static final String MAX_MEMORY_REGIONS_PROP_NAME = "rdmachannel.shm.maxMemoryRegions";
    /** Default for {@link #MAX_MEMORY_REGIONS_PROP_NAME}. */
    public static final int MAX_MEMORY_REGIONS_DEFAULT = 1 << 16;

    /**
     * RNR NAK delay in microseconds used instead of the responder's {@code minRnrTimer}; 0 uses the queue pair's
     * value. A receive posted on the responder wakes a waiting sender at once in any case.
     */
    public static final String RNR_TIMER_PROP_NAME = "rdmachannel.shm.rnrTimerMicros";
    /** Default for {@link #RNR_TIMER_PROP_NAME}. */
    public static final long RNR_TIMER_DEFAULT = 0;

    /**
     * The transport the device emulates: {@code ib} (InfiniBand/RoCE semantics, the default) or {@code iwarp}. An
     * iWARP device offers no {@link io.rdmachannel.channel.spi.DeviceCapability#RDMA_WRITE_WITH_IMMEDIATE}: posting
     * RDMA WRITE WITH IMMEDIATE or SEND WITH IMMEDIATE is refused, as siw and cxgb4 refuse it; and the passive side of
     * a connection may execute no request before a receive completed on it (iWARP's "the active side sends first",
     * enforced in MPA): a violation fails the connection. Both ends of a connection must use the same transport.
     */
    public static final String TRANSPORT_PROP_NAME = "rdmachannel.shm.transport";
    /** Default for {@link #TRANSPORT_PROP_NAME}. */
    public static final String TRANSPORT_DEFAULT = "ib";

    /**
     * Most bytes of shared files a device keeps mapped and idle for reuse (queue-pair blocks, completion-queue words,
     * memory regions): a connection that ends returns its files here, zeroed, and the next one takes them instead of
     * creating, mapping, unmapping and deleting files. 0 pools nothing.
     */
    public static final String POOL_MAX_IDLE_BYTES_PROP_NAME = "rdmachannel.shm.poolMaxIdleBytes";
    /** Default for {@link #POOL_MAX_IDLE_BYTES_PROP_NAME}: 64 MiB. */
    public static final int POOL_MAX_IDLE_BYTES_DEFAULT = 64 << 20;

    /**
     * How long, in milliseconds, an idle pooled file, a mapping of a peer's file that no access used, or the
     * mappings of a peer device without connections are kept before they are unmapped (and pooled files deleted).
     */
    public static final String POOL_IDLE_MILLIS_PROP_NAME = "rdmachannel.shm.poolIdleMillis";
    /** Default for {@link #POOL_IDLE_MILLIS_PROP_NAME}. */
    public static final int POOL_IDLE_MILLIS_DEFAULT = 2000;

    /**
     * How long, in milliseconds, connecting a queue pair to a peer device may wait for the peer process's agent to
     * accept its link (a stopped or hung process accepts none; its backlog fills); then the connect fails.
     */
    public static final String LINK_CONNECT_TIMEOUT_MILLIS_PROP_NAME = "rdmachannel.shm.linkConnectTimeoutMillis";
    /** Default for {@link #LINK_CONNECT_TIMEOUT_MILLIS_PROP_NAME}. */
    public static final int LINK_CONNECT_TIMEOUT_MILLIS_DEFAULT = 10_000;

    /**
     * The transport semantics a shm device emulates.
     */
    public enum Transport {
        /** InfiniBand or RoCE: RDMA WRITE WITH IMMEDIATE, no ordering rule at connection start. */
        INFINIBAND("ib", 0),
        /** iWARP: no immediate data; the active side of a connection sends first. */
        IWARP("iwarp", 1);

        private final String propertyValue;
        private final int code;

        Transport(final String propertyValue, final int code) {
            this.propertyValue = propertyValue;
            this.code = code;
        }

        /**
         * The value of {@link #TRANSPORT_PROP_NAME} that selects this transport.
         *
         * @return {@code ib} or {@code iwarp}.
         */
        public String propertyValue() {
            return propertyValue;
        }

        /**
         * The ibverbs code ({@code enum ibv_transport_type}): 0 for InfiniBand, 1 for iWARP.
         *
         * @return the code.
         */
        public int code() {
            return code;
        }

        static Transport fromCode(final int code) {
            return code == IWARP.code ? IWARP : code == INFINIBAND.code ? INFINIBAND : null;
        }

        static Transport fromProperty(final String value) {
            final String wanted = value.trim().toLowerCase(Locale.ROOT);
            for (final Transport transport : values()) {
                if (transport.propertyValue.equals(wanted)) {
                    return transport;
                }
            }
            throw new IllegalArgumentException(TRANSPORT_PROP_NAME + " must be ib or iwarp: " + TRANSPORT_PROP_NAME
                + "=" + value);
        }
    }

    private final Path directory;
    private final int maxQueuePairWorkRequests;
    private final int maxCompletionQueueEntries;
    private final int maxSge;
    private final int maxInlineData;
    private final int maxMemoryRegions;
    private final long rnrTimerMicros;
    private final Transport transport;
    private final long poolMaxIdleBytes;
    private final long poolIdleMillis;
    private final long linkConnectTimeoutMillis;

    private ShmConfiguration(final Path directory, final int maxQueuePairWorkRequests,
        final int maxCompletionQueueEntries, final int maxSge, final int maxInlineData, final int maxMemoryRegions,
        final long rnrTimerMicros, final Transport transport, final long poolMaxIdleBytes,
        final long poolIdleMillis, final long linkConnectTimeoutMillis) {
        this.directory = directory;
        this.maxQueuePairWorkRequests = maxQueuePairWorkRequests;
        this.maxCompletionQueueEntries = maxCompletionQueueEntries;
        this.maxSge = maxSge;
        this.maxInlineData = maxInlineData;
        this.maxMemoryRegions = maxMemoryRegions;
        this.rnrTimerMicros = rnrTimerMicros;
        this.transport = transport;
        this.poolMaxIdleBytes = poolMaxIdleBytes;
        this.poolIdleMillis = poolIdleMillis;
        this.linkConnectTimeoutMillis = linkConnectTimeoutMillis;
    }

    /**
     * Read the settings from system properties and validate them.
     *
     * @return the settings.
     * @throws IllegalArgumentException naming a property whose value is invalid.
     */
    public static ShmConfiguration fromSystemProperties() {
        return fromProperties(System.getProperties());
    }

    /**
     * Read the settings from properties and validate them.
     *
     * @param properties the source, e.g. the system properties.
     * @return the settings.
     * @throws IllegalArgumentException naming a property whose value is invalid.
     */
    static ShmConfiguration fromProperties(final Properties properties) {
        return new ShmConfiguration(
            Path.of(properties.getProperty(DIRECTORY_PROP_NAME, DIRECTORY_DEFAULT)).toAbsolutePath(),
            intProperty(properties, MAX_QUEUE_PAIR_WORK_REQUESTS_PROP_NAME, MAX_QUEUE_PAIR_WORK_REQUESTS_DEFAULT, 1,
                1 << 24),
            intProperty(properties, MAX_COMPLETION_QUEUE_ENTRIES_PROP_NAME, MAX_COMPLETION_QUEUE_ENTRIES_DEFAULT, 1,
                1 << 26),
            intProperty(properties, MAX_SGE_PROP_NAME, MAX_SGE_DEFAULT, 1, 256),
            intProperty(properties, MAX_INLINE_DATA_PROP_NAME, MAX_INLINE_DATA_DEFAULT, 0, 1 << 16),
            intProperty(properties, MAX_MEMORY_REGIONS_PROP_NAME, MAX_MEMORY_REGIONS_DEFAULT, 1, 1 << 20),
            intProperty(properties, RNR_TIMER_PROP_NAME, (int) RNR_TIMER_DEFAULT, 0, 10_000_000),
            Transport.fromProperty(properties.getProperty(TRANSPORT_PROP_NAME, TRANSPORT_DEFAULT)),
            intProperty(properties, POOL_MAX_IDLE_BYTES_PROP_NAME, POOL_MAX_IDLE_BYTES_DEFAULT, 0, Integer.MAX_VALUE),
            intProperty(properties, POOL_IDLE_MILLIS_PROP_NAME, POOL_IDLE_MILLIS_DEFAULT, 1, 3_600_000),
            intProperty(properties, LINK_CONNECT_TIMEOUT_MILLIS_PROP_NAME, LINK_CONNECT_TIMEOUT_MILLIS_DEFAULT, 1,
                3_600_000));
    }

    /**
     * The per-user directory.
     *
     * @return an absolute path.
     */
    public Path directory() {
        return directory;
    }

    /**
     * The queue-depth limit.
     *
     * @return work requests.
     */
    public int maxQueuePairWorkRequests() {
        return maxQueuePairWorkRequests;
    }

    /**
     * The completion-queue limit.
     *
     * @return entries.
     */
    public int maxCompletionQueueEntries() {
        return maxCompletionQueueEntries;
    }

    /**
     * The scatter/gather limit.
     *
     * @return entries.
     */
    public int maxSge() {
        return maxSge;
    }

    /**
     * The inline limit.
     *
     * @return bytes.
     */
    public int maxInlineData() {
        return maxInlineData;
    }

    /**
     * The memory-region limit.
     *
     * @return regions.
     */
    public int maxMemoryRegions() {
        return maxMemoryRegions;
    }

    /**
     * The RNR delay override.
     *
     * @return microseconds, 0 for none.
     */
    public long rnrTimerMicros() {
        return rnrTimerMicros;
    }

    /**
     * The transport the device emulates.
     *
     * @return InfiniBand or iWARP.
     */
    public Transport transport() {
        return transport;
    }

    /**
     * The most bytes of idle pooled files.
     *
     * @return bytes, 0 for no pooling.
     */
    public long poolMaxIdleBytes() {
        return poolMaxIdleBytes;
    }

    /**
     * How long idle pooled files and unused peer mappings are kept.
     *
     * @return milliseconds.
     */
    public long poolIdleMillis() {
        return poolIdleMillis;
    }

    /**
     * How long a link's connect waits for a peer's agent.
     *
     * @return milliseconds.
     */
    public long linkConnectTimeoutMillis() {
        return linkConnectTimeoutMillis;
    }

    private static String defaultDirectory() {
        final String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9._-]", "_");
        final Path devShm = Path.of("/dev/shm");
        final Path parent = Files.isDirectory(devShm) && Files.isWritable(devShm)
            ? devShm : Path.of(System.getProperty("java.io.tmpdir"));
        return parent.resolve("rdmachannel-" + user).toString();
    }

    @Override
    public String toString() {
        return "ShmConfiguration{directory=" + directory
            + ", maxQueuePairWorkRequests=" + maxQueuePairWorkRequests
            + ", maxCompletionQueueEntries=" + maxCompletionQueueEntries
            + ", maxSge=" + maxSge
            + ", maxInlineData=" + maxInlineData
            + ", maxMemoryRegions=" + maxMemoryRegions
            + ", rnrTimerMicros=" + rnrTimerMicros
            + ", transport=" + transport.propertyValue()
            + ", poolMaxIdleBytes=" + poolMaxIdleBytes
            + ", poolIdleMillis=" + poolIdleMillis
            + ", linkConnectTimeoutMillis=" + linkConnectTimeoutMillis
            + '}';
    }
}
