package io.rdmachannel.channel.stream;

import static io.rdmachannel.channel.internal.Settings.booleanProperty;
import static io.rdmachannel.channel.internal.Settings.intProperty;
import static io.rdmachannel.channel.internal.Settings.invalid;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/**
 * Settings of the rsockets stream: property names and defaults (the compiled-in values of rdma-core v44's
 * {@code rsocket.c}), read once and validated together.
 *
 * <p>Sizes that travel on the wire are only advertised: the peer learns our receive queue depth (credits), the
 * first half of our receive ring, our target SGL entries and our iomap entries from the connection data. The rest
 * is local. The limits on what a peer may advertise ({@link #PEER_MAX_TARGET_SGL_ENTRIES_PROP_NAME},
 * {@link #PEER_MAX_DATA_BUFFER_LENGTH_PROP_NAME}) configure the {@link ConnectionDataValidator}.
 */
public final class StreamConfiguration {
    /** Smallest queue pair depth ({@code RS_QP_MIN_SIZE}). */
    public static final int QUEUE_PAIR_MIN_SIZE = 16;
    /** Largest queue pair depth ({@code RS_QP_MAX_SIZE}): credits are a u16 and 0xFFFF is kept free. */
    public static final int QUEUE_PAIR_MAX_SIZE = 0xFFFE;
    /** Smallest send or receive ring: two low-water marks. */
    public static final int MIN_BUFFER_LENGTH = 4096;
    /** Largest send or receive ring: 1 GiB. */
    public static final int MAX_BUFFER_LENGTH = 1 << 30;

    /** Send queue depth ({@code sqsize_default}). */
    public static final String SEND_QUEUE_SIZE_PROP_NAME = "rdmachannel.stream.sendQueueSize";
    /** Default for {@link #SEND_QUEUE_SIZE_PROP_NAME}. */
    public static final int SEND_QUEUE_SIZE_DEFAULT = 384;

    /** Receive queue depth, advertised as our credits ({@code rqsize_default}). */
    public static final String RECEIVE_QUEUE_SIZE_PROP_NAME = "rdmachannel.stream.receiveQueueSize";
    /** Default for {@link #RECEIVE_QUEUE_SIZE_PROP_NAME}. */
    public static final int RECEIVE_QUEUE_SIZE_DEFAULT = 384;

    /** Largest data chunk sent inline; the provider may round it up ({@code inline_default}). */
    public static final String INLINE_DATA_LENGTH_PROP_NAME = "rdmachannel.stream.inlineDataLength";
    /** Default for {@link #INLINE_DATA_LENGTH_PROP_NAME}. */
    public static final int INLINE_DATA_LENGTH_DEFAULT = 64;

    /** Receive ring length; advertised in halves ({@code mem_default}). */
    public static final String RECEIVE_BUFFER_LENGTH_PROP_NAME = "rdmachannel.stream.receiveBufferLength";
    /** Default for {@link #RECEIVE_BUFFER_LENGTH_PROP_NAME}: 128 KiB. */
    public static final int RECEIVE_BUFFER_LENGTH_DEFAULT = 128 * 1024;

    /** Send staging ring length ({@code wmem_default}). */
    public static final String SEND_BUFFER_LENGTH_PROP_NAME = "rdmachannel.stream.sendBufferLength";
    /** Default for {@link #SEND_BUFFER_LENGTH_PROP_NAME}: 128 KiB. */
    public static final int SEND_BUFFER_LENGTH_DEFAULT = 128 * 1024;

    /** Iomap entries we accept; rounded through the 8-bit scale as rsockets does ({@code iomap_size}). */
    public static final String IOMAP_ENTRIES_PROP_NAME = "rdmachannel.stream.iomapEntries";
    /** Default for {@link #IOMAP_ENTRIES_PROP_NAME}. */
    public static final int IOMAP_ENTRIES_DEFAULT = 0;

    /** Control messages outstanding at once, a power of two below the send queue depth ({@code RS_QP_CTRL_SIZE}). */
    public static final String CONTROL_WINDOW_PROP_NAME = "rdmachannel.stream.controlWindow";
    /** Default for {@link #CONTROL_WINDOW_PROP_NAME}. */
    public static final int CONTROL_WINDOW_DEFAULT = 4;

    /**
     * Entries of our target SGL, the slots our receive ring is advertised through ({@code RS_SGL_SIZE}); at most
     * 256, what a peer with the default {@link #PEER_MAX_TARGET_SGL_ENTRIES_PROP_NAME} accepts.
     */
    public static final String TARGET_SGL_ENTRIES_PROP_NAME = "rdmachannel.stream.targetSglEntries";
    /** Default for {@link #TARGET_SGL_ENTRIES_PROP_NAME}. */
    public static final int TARGET_SGL_ENTRIES_DEFAULT = 2;

    /** Largest payload of one DATA message ({@code RS_MAX_TRANSFER}). */
    public static final String MAX_TRANSFER_LENGTH_PROP_NAME = "rdmachannel.stream.maxTransferLength";
    /** Default for {@link #MAX_TRANSFER_LENGTH_PROP_NAME}. */
    public static final int MAX_TRANSFER_LENGTH_DEFAULT = 65536;

    /** First chunk of a send call, doubled per message up to the maximum ({@code RS_OLAP_START_SIZE}). */
    public static final String TRANSFER_START_LENGTH_PROP_NAME = "rdmachannel.stream.transferStartLength";
    /** Default for {@link #TRANSFER_START_LENGTH_PROP_NAME}. */
    public static final int TRANSFER_START_LENGTH_DEFAULT = 2048;

    /** Free send ring bytes needed before posting ({@code RS_SNDLOWAT}). */
    public static final String SEND_LOW_WATER_MARK_PROP_NAME = "rdmachannel.stream.sendLowWaterMark";
    /** Default for {@link #SEND_LOW_WATER_MARK_PROP_NAME}. */
    public static final int SEND_LOW_WATER_MARK_DEFAULT = 2048;

    /**
     * Whether DATA messages may be posted unsignalled (outside message mode and sends from the caller's buffer):
     * only the one that leaves the send slots or the ring below half is signalled, and its completion brings back
     * what the others held. Fewer completions to produce and poll per message.
     */
    public static final String UNSIGNALED_SENDS_PROP_NAME = "rdmachannel.stream.unsignaledSends";

    /** Busy-poll time before blocking on the completion channel, in microseconds ({@code polling_time}). */
    public static final String POLLING_TIME_PROP_NAME = "rdmachannel.stream.pollingTimeMicros";
    /** Default for {@link #POLLING_TIME_PROP_NAME}. */
    public static final int POLLING_TIME_DEFAULT = 50;

    /**
     * How long a write waits for the sends it posted straight from the caller's buffer (a registered buffer, or any
     * direct buffer on a device that reads local memory with the CPU) before it fails the connection: a peer that
     * granted credits without posting receives for them would otherwise hold the write, and its buffer, for ever.
     */
    public static final String SEND_COMPLETION_TIMEOUT_PROP_NAME = "rdmachannel.stream.sendCompletionTimeoutMillis";
    /** Default for {@link #SEND_COMPLETION_TIMEOUT_PROP_NAME}. */
    public static final int SEND_COMPLETION_TIMEOUT_DEFAULT = 10_000;

    /**
     * How long a closed connection may wait, on the transport's timer thread, for its DISCONNECT (and so for every
     * byte written before it) to be delivered before it is released anyway: a socket's close returns at once and
     * the kernel keeps delivering, so does this. A peer that is gone ends the wait sooner (the device's retries run
     * out, or the connection manager reports the disconnect); only a peer that takes packets but never posts
     * receives for them holds a closed connection this long. The device retries a lost packet for seconds, so a
     * short value cuts the end of a stream off on a lossy or loaded fabric: the peer then reads a reset.
     */
    public static final String CLOSE_LINGER_PROP_NAME = "rdmachannel.stream.closeLingerMillis";
    /** Default for {@link #CLOSE_LINGER_PROP_NAME}: a minute, Linux's {@code tcp_fin_timeout}. */
    public static final int CLOSE_LINGER_DEFAULT = 60_000;

    /**
     * How many ended connections' memory (send ring, receive ring, target SGL, registered on the device) each device
     * context keeps for the next connections of the same sizes; 0 frees it with every connection.
     */
    public static final String MEMORY_POOL_SIZE_PROP_NAME = "rdmachannel.stream.memoryPoolSize";
    /** Default for {@link #MEMORY_POOL_SIZE_PROP_NAME}. */
    public static final int MEMORY_POOL_SIZE_DEFAULT = 16;

    /**
     * Whether connections take their receives from one shared receive queue per device (SRQ mode) instead of a
     * receive queue each: a connection then holds only {@link #SHARED_RECEIVE_CREDITS_PROP_NAME} credits of its own
     * while idle and borrows up to {@link #RECEIVE_QUEUE_SIZE_PROP_NAME} from the shared pool while busy. The
     * default of every listener and connection; {@code RDMA_SHARED_RECEIVE_QUEUE} sets it for one.
     */
    public static final String SHARED_RECEIVE_QUEUE_PROP_NAME = "rdmachannel.stream.sharedReceiveQueue";
    /**
     * Whether connections ask for the XRC mode (docs/xrc-stream-mode.md), the default of every listener and
     * connection; RC stays the default.
     */
    public static final String XRC_PROP_NAME = "rdmachannel.stream.xrc";

    /** The most receives a device's shared receive queue holds (at most the device's limit). */
    public static final String SHARED_RECEIVE_QUEUE_SIZE_PROP_NAME = "rdmachannel.stream.sharedReceiveQueueSize";
    /** Default for {@link #SHARED_RECEIVE_QUEUE_SIZE_PROP_NAME}. */
    public static final int SHARED_RECEIVE_QUEUE_SIZE_DEFAULT = 131072;

    /**
     * The credits a connection in SRQ mode always keeps reserved in the shared receive queue (at most its
     * {@link #RECEIVE_QUEUE_SIZE_PROP_NAME}): what it starts with and never falls below, so no other connection can
     * starve it.
     */
    public static final String SHARED_RECEIVE_CREDITS_PROP_NAME = "rdmachannel.stream.sharedReceiveCredits";
    /** Default for {@link #SHARED_RECEIVE_CREDITS_PROP_NAME}. */
    public static final int SHARED_RECEIVE_CREDITS_DEFAULT = 8;

    /** How long, in milliseconds, an ended connection's memory is kept for the next connection. */
    public static final String MEMORY_POOL_IDLE_MILLIS_PROP_NAME = "rdmachannel.stream.memoryPoolIdleMillis";
    /** Default for {@link #MEMORY_POOL_IDLE_MILLIS_PROP_NAME}. */
    public static final int MEMORY_POOL_IDLE_MILLIS_DEFAULT = 2000;

    /**
     * How long a write must have stalled (ended with bytes left, for the peer's credits or for send resources, until
     * a later write sent something) before the stall is recorded as an {@code io.rdmachannel.WriteStalled} Flight
     * Recorder event.
     */
    public static final String STALL_EVENT_THRESHOLD_PROP_NAME = "rdmachannel.stream.stallEventMillis";
    /** Default for {@link #STALL_EVENT_THRESHOLD_PROP_NAME}. */
    public static final int STALL_EVENT_THRESHOLD_DEFAULT = 20;

    /**
     * Keepalive period in seconds for connections with {@code SO_KEEPALIVE} ({@code TCP_KEEPIDLE}): each period a
     * zero-length RDMA WRITE the peer never sees, so a dead peer shows up as a failed send.
     */
    public static final String KEEP_ALIVE_TIME_PROP_NAME = "rdmachannel.stream.keepAliveSeconds";
    /** Default for {@link #KEEP_ALIVE_TIME_PROP_NAME}: the kernel's {@code tcp_keepalive_time} as rsockets reads it, or
     * 7200. */
    public static final int KEEP_ALIVE_TIME_DEFAULT = kernelKeepAliveTime();

    /**
     * Attempts of address and of route resolution, each with a timeout of {@code 1000 << attempt} ms: one plus the
     * {@code RS_CONN_RETRIES} (6) retries of rsockets.
     */
    public static final String RESOLVE_ATTEMPTS_PROP_NAME = "rdmachannel.stream.resolveAttempts";
    /** Default for {@link #RESOLVE_ATTEMPTS_PROP_NAME}. */
    public static final int RESOLVE_ATTEMPTS_DEFAULT = 7;

    /**
     * Transport retry count of the connection, 0 to 7: how often an unacknowledged request is sent again before it
     * fails with "transport retry counter exceeded", which is how a peer that vanished without a word is found (by
     * keepalive on an idle connection). The side that connects chooses it for both ends (rdma_cm's REQ carries it).
     */
    public static final String RETRY_COUNT_PROP_NAME = "rdmachannel.stream.retryCount";
    /**
     * Default for {@link #RETRY_COUNT_PROP_NAME}: 6, not the 7 rsockets asks for, because soft-RoCE (rxe) retries
     * forever at 7 (as the specification says of RNR retries only), so a vanished peer was never found there.
     */
    public static final int RETRY_COUNT_DEFAULT = 6;

    /** RNR retry count of the connection, 0 to 7; 7 retries forever, which rsockets' flow control relies on. */
    public static final String RNR_RETRY_COUNT_PROP_NAME = "rdmachannel.stream.rnrRetryCount";
    /** Default for {@link #RNR_RETRY_COUNT_PROP_NAME}. */
    public static final int RNR_RETRY_COUNT_DEFAULT = 7;

    /** Most target SGL entries a peer may advertise. */
    public static final String PEER_MAX_TARGET_SGL_ENTRIES_PROP_NAME = "rdmachannel.stream.peerMaxTargetSglEntries";
    /** Default for {@link #PEER_MAX_TARGET_SGL_ENTRIES_PROP_NAME}. */
    public static final int PEER_MAX_TARGET_SGL_ENTRIES_DEFAULT =
        ConnectionDataValidator.MAX_TARGET_SGL_ENTRIES_DEFAULT;

    /** Largest first receive region a peer may advertise, in bytes. */
    public static final String PEER_MAX_DATA_BUFFER_LENGTH_PROP_NAME = "rdmachannel.stream.peerMaxDataBufferLength";
    /** Default for {@link #PEER_MAX_DATA_BUFFER_LENGTH_PROP_NAME}: 1 GiB. */
    public static final int PEER_MAX_DATA_BUFFER_LENGTH_DEFAULT =
        ConnectionDataValidator.MAX_DATA_BUFFER_LENGTH_DEFAULT;

    private final int sendQueueSize;
    private final int receiveQueueSize;
    private final int inlineDataLength;
    private final int receiveBufferLength;
    private final int sendBufferLength;
    private final int iomapEntries;
    private final int controlWindow;
    private final int targetSglEntries;
    private final int maxTransferLength;
    private final int transferStartLength;
    private final int sendLowWaterMark;
    private final boolean unsignaledSends;
    private final int pollingTimeMicros;
    private final int keepAliveSeconds;
    private final int sendCompletionTimeoutMillis;
    private final int closeLingerMillis;
    private final int memoryPoolSize;
    private final int memoryPoolIdleMillis;
    private final boolean sharedReceiveQueue;
    private final boolean xrc;
    private final int sharedReceiveQueueSize;
    private final int sharedReceiveCredits;
    private final int stallEventMillis;
    private final int resolveAttempts;
    private final int retryCount;
    private final int rnrRetryCount;
    private final int peerMaxTargetSglEntries;
    private final int peerMaxDataBufferLength;

    private StreamConfiguration(final Properties properties) {
        sendQueueSize = intProperty(properties, SEND_QUEUE_SIZE_PROP_NAME, SEND_QUEUE_SIZE_DEFAULT,
            QUEUE_PAIR_MIN_SIZE, QUEUE_PAIR_MAX_SIZE);
        receiveQueueSize = intProperty(properties, RECEIVE_QUEUE_SIZE_PROP_NAME, RECEIVE_QUEUE_SIZE_DEFAULT,
            QUEUE_PAIR_MIN_SIZE, QUEUE_PAIR_MAX_SIZE);
        inlineDataLength = intProperty(properties, INLINE_DATA_LENGTH_PROP_NAME, INLINE_DATA_LENGTH_DEFAULT,
            0, 0xFFFF);
        receiveBufferLength = intProperty(properties, RECEIVE_BUFFER_LENGTH_PROP_NAME, RECEIVE_BUFFER_LENGTH_DEFAULT,
            MIN_BUFFER_LENGTH, MAX_BUFFER_LENGTH);
        sendBufferLength = intProperty(properties, SEND_BUFFER_LENGTH_PROP_NAME, SEND_BUFFER_LENGTH_DEFAULT,
            MIN_BUFFER_LENGTH, MAX_BUFFER_LENGTH);
        iomapEntries = ConnectionDataDescriptor.roundIomapEntries(intProperty(properties, IOMAP_ENTRIES_PROP_NAME,
            IOMAP_ENTRIES_DEFAULT, 0, ConnectionDataDescriptor.MAX_IOMAP_VALUE));
        controlWindow = intProperty(properties, CONTROL_WINDOW_PROP_NAME, CONTROL_WINDOW_DEFAULT, 1, 64);
        targetSglEntries = intProperty(properties, TARGET_SGL_ENTRIES_PROP_NAME, TARGET_SGL_ENTRIES_DEFAULT,
            1, ConnectionDataValidator.MAX_TARGET_SGL_ENTRIES_DEFAULT);
        maxTransferLength = intProperty(properties, MAX_TRANSFER_LENGTH_PROP_NAME, MAX_TRANSFER_LENGTH_DEFAULT,
            1, ImmediateData.MAX_OPERAND);
        transferStartLength = intProperty(properties, TRANSFER_START_LENGTH_PROP_NAME, TRANSFER_START_LENGTH_DEFAULT,
            1, ImmediateData.MAX_OPERAND);
        sendLowWaterMark = intProperty(properties, SEND_LOW_WATER_MARK_PROP_NAME, SEND_LOW_WATER_MARK_DEFAULT,
            1, MAX_BUFFER_LENGTH / 2);
        unsignaledSends = booleanProperty(properties, UNSIGNALED_SENDS_PROP_NAME, true);
        pollingTimeMicros = intProperty(properties, POLLING_TIME_PROP_NAME, POLLING_TIME_DEFAULT, 0, 1_000_000);
        keepAliveSeconds = intProperty(properties, KEEP_ALIVE_TIME_PROP_NAME, KEEP_ALIVE_TIME_DEFAULT, 1,
            Integer.MAX_VALUE);
        sendCompletionTimeoutMillis = intProperty(properties, SEND_COMPLETION_TIMEOUT_PROP_NAME,
            SEND_COMPLETION_TIMEOUT_DEFAULT, 1, 3_600_000);
        closeLingerMillis = intProperty(properties, CLOSE_LINGER_PROP_NAME, CLOSE_LINGER_DEFAULT, 1, 3_600_000);
        memoryPoolSize = intProperty(properties, MEMORY_POOL_SIZE_PROP_NAME, MEMORY_POOL_SIZE_DEFAULT, 0, 4096);
        memoryPoolIdleMillis = intProperty(properties, MEMORY_POOL_IDLE_MILLIS_PROP_NAME,
            MEMORY_POOL_IDLE_MILLIS_DEFAULT, 1, 3_600_000);
        sharedReceiveQueue = booleanProperty(properties, SHARED_RECEIVE_QUEUE_PROP_NAME, false);
        xrc = booleanProperty(properties, XRC_PROP_NAME, false);
        sharedReceiveQueueSize = intProperty(properties, SHARED_RECEIVE_QUEUE_SIZE_PROP_NAME,
            SHARED_RECEIVE_QUEUE_SIZE_DEFAULT, 64, 1 << 24);
        sharedReceiveCredits = intProperty(properties, SHARED_RECEIVE_CREDITS_PROP_NAME,
            SHARED_RECEIVE_CREDITS_DEFAULT, 2, QUEUE_PAIR_MAX_SIZE);
        stallEventMillis = intProperty(properties, STALL_EVENT_THRESHOLD_PROP_NAME, STALL_EVENT_THRESHOLD_DEFAULT, 1,
            3_600_000);
        resolveAttempts = intProperty(properties, RESOLVE_ATTEMPTS_PROP_NAME, RESOLVE_ATTEMPTS_DEFAULT, 1, 10);
        retryCount = intProperty(properties, RETRY_COUNT_PROP_NAME, RETRY_COUNT_DEFAULT, 0, 7);
        rnrRetryCount = intProperty(properties, RNR_RETRY_COUNT_PROP_NAME, RNR_RETRY_COUNT_DEFAULT, 0, 7);
        peerMaxTargetSglEntries = intProperty(properties, PEER_MAX_TARGET_SGL_ENTRIES_PROP_NAME,
            PEER_MAX_TARGET_SGL_ENTRIES_DEFAULT, 1, ConnectionDataValidator.MAX_TARGET_SGL_ENTRIES_LIMIT);
        peerMaxDataBufferLength = intProperty(properties, PEER_MAX_DATA_BUFFER_LENGTH_PROP_NAME,
            PEER_MAX_DATA_BUFFER_LENGTH_DEFAULT, 1, Integer.MAX_VALUE);
    }

    /**
     * The defaults, ignoring system properties.
     *
     * @return the settings.
     */
    public static StreamConfiguration defaults() {
        return fromProperties(new Properties());
    }

    /**
     * Read the settings from system properties and validate them.
     *
     * @return the settings.
     * @throws IllegalArgumentException naming a property whose value is invalid.
     */
    public static StreamConfiguration fromSystemProperties() {
        return fromProperties(System.getProperties());
    }

    /**
     * Read the settings from properties, defaults for those not set, and validate them.
     *
     * @param properties the source.
     * @return the settings.
     * @throws IllegalArgumentException naming a property whose value is invalid.
     */
    public static StreamConfiguration fromProperties(final Properties properties) {
        return new StreamConfiguration(properties).validate();
    }

    /**
     * The queue pair depth rsockets really uses for a requested one ({@code rs_set_qp_size}): at most the device's
     * limit and {@link #QUEUE_PAIR_MAX_SIZE}, at least {@link #QUEUE_PAIR_MIN_SIZE}.
     *
     * @param requested             the configured depth.
     * @param deviceMaxWorkRequests the device's {@code max_qp_wr}.
     * @return the depth to create the queue pair with.
     */
    public static int clampQueuePairSize(final int requested, final int deviceMaxWorkRequests) {
        final int max = Math.min(deviceMaxWorkRequests, QUEUE_PAIR_MAX_SIZE);
        if (requested > max) {
            return max;
        }
        return Math.max(requested, QUEUE_PAIR_MIN_SIZE);
    }

    private StreamConfiguration validate() {
        if ((receiveBufferLength & 1) != 0) {
            throw invalid(RECEIVE_BUFFER_LENGTH_PROP_NAME + " must be even, it is advertised in halves",
                RECEIVE_BUFFER_LENGTH_PROP_NAME, receiveBufferLength);
        }
        if (Integer.bitCount(controlWindow) != 1 || controlWindow >= sendQueueSize) {
            throw invalid(CONTROL_WINDOW_PROP_NAME + " must be a power of two below " + SEND_QUEUE_SIZE_PROP_NAME
                + "=" + sendQueueSize, CONTROL_WINDOW_PROP_NAME, controlWindow);
        }
        if (transferStartLength > maxTransferLength) {
            throw invalid(TRANSFER_START_LENGTH_PROP_NAME + " must not exceed " + MAX_TRANSFER_LENGTH_PROP_NAME
                + "=" + maxTransferLength, TRANSFER_START_LENGTH_PROP_NAME, transferStartLength);
        }
        if (sendLowWaterMark > sendBufferLength / 2) {
            throw invalid(SEND_LOW_WATER_MARK_PROP_NAME + " must be at most half of " + SEND_BUFFER_LENGTH_PROP_NAME
                + "=" + sendBufferLength, SEND_LOW_WATER_MARK_PROP_NAME, sendLowWaterMark);
        }
        return this;
    }

    /**
     * A validator of peers' connection data with this configuration's limits.
     *
     * @return a new validator.
     */
    public ConnectionDataValidator newConnectionDataValidator() {
        return new ConnectionDataValidator()
            .maxTargetSglEntries(peerMaxTargetSglEntries)
            .maxDataBufferLength(peerMaxDataBufferLength);
    }

    /**
     * The send queue depth.
     *
     * @return work requests.
     */
    public int sendQueueSize() {
        return sendQueueSize;
    }

    /**
     * The receive queue depth, advertised as our credits.
     *
     * @return work requests.
     */
    public int receiveQueueSize() {
        return receiveQueueSize;
    }

    /**
     * The inline threshold.
     *
     * @return bytes.
     */
    public int inlineDataLength() {
        return inlineDataLength;
    }

    /**
     * The receive ring length.
     *
     * @return bytes, even.
     */
    public int receiveBufferLength() {
        return receiveBufferLength;
    }

    /**
     * The send staging ring length.
     *
     * @return bytes.
     */
    public int sendBufferLength() {
        return sendBufferLength;
    }

    /**
     * The iomap entries we accept, already rounded through the scale encoding.
     *
     * @return entries.
     */
    public int iomapEntries() {
        return iomapEntries;
    }

    /**
     * The control window.
     *
     * @return control messages outstanding at once, a power of two.
     */
    public int controlWindow() {
        return controlWindow;
    }

    /**
     * The entries of our target SGL.
     *
     * @return entries.
     */
    public int targetSglEntries() {
        return targetSglEntries;
    }

    /**
     * The largest DATA payload.
     *
     * @return bytes.
     */
    public int maxTransferLength() {
        return maxTransferLength;
    }

    /**
     * The first chunk of a send call.
     *
     * @return bytes.
     */
    public int transferStartLength() {
        return transferStartLength;
    }

    /**
     * The send low-water mark.
     *
     * @return bytes.
     */
    public int sendLowWaterMark() {
        return sendLowWaterMark;
    }

    /**
     * Whether DATA messages may be posted unsignalled ({@link #UNSIGNALED_SENDS_PROP_NAME}).
     *
     * @return true by default.
     */
    public boolean unsignaledSends() {
        return unsignaledSends;
    }

    /**
     * The busy-poll time.
     *
     * @return microseconds.
     */
    public int pollingTimeMicros() {
        return pollingTimeMicros;
    }

    /**
     * The keepalive period.
     *
     * @return seconds.
     */
    public int keepAliveSeconds() {
        return keepAliveSeconds;
    }

    /**
     * How long a write waits for its sends from the caller's buffer.
     *
     * @return milliseconds.
     */
    public int sendCompletionTimeoutMillis() {
        return sendCompletionTimeoutMillis;
    }

    /**
     * How long a closed connection waits at most for its DISCONNECT to be delivered.
     *
     * @return milliseconds.
     */
    public int closeLingerMillis() {
        return closeLingerMillis;
    }

    /**
     * How many ended connections' memory sets a device context keeps.
     *
     * @return the number of idle sets kept, 0 for none.
     */
    public int memoryPoolSize() {
        return memoryPoolSize;
    }

    /**
     * Whether connections share a receive queue per device by default (SRQ mode).
     *
     * @return true for SRQ mode.
     */
    public boolean sharedReceiveQueue() {
        return sharedReceiveQueue;
    }

    /**
     * See {@link #XRC_PROP_NAME}.
     *
     * @return whether connections ask for the XRC mode.
     */
    public boolean xrc() {
        return xrc;
    }

    /**
     * The most receives a device's shared receive queue holds.
     *
     * @return receives, before the device's limit.
     */
    public int sharedReceiveQueueSize() {
        return sharedReceiveQueueSize;
    }

    /**
     * The credits a connection in SRQ mode keeps reserved.
     *
     * @return credits, before the connection's receive queue size.
     */
    public int sharedReceiveCredits() {
        return sharedReceiveCredits;
    }

    /**
     * How long an ended connection's memory set is kept.
     *
     * @return milliseconds.
     */
    public int memoryPoolIdleMillis() {
        return memoryPoolIdleMillis;
    }

    /**
     * How long a write stall lasts before it is recorded as a Flight Recorder event.
     *
     * @return milliseconds.
     */
    public int stallEventMillis() {
        return stallEventMillis;
    }

    private static int kernelKeepAliveTime() {
        try {
            final String text = Files.readString(Path.of(
                "/proc/sys/net/ipv4/tcp_keepalive_time")).trim();
            final int seconds = Integer.parseInt(text);
            return seconds > 0 ? seconds : 7200;
        } catch (final IOException | RuntimeException ex) {
            return 7200;
        }
    }

    /**
     * The attempts of address and of route resolution.
     *
     * @return attempts.
     */
    public int resolveAttempts() {
        return resolveAttempts;
    }

    /**
     * The transport retry count.
     *
     * @return 0 to 7.
     */
    public int retryCount() {
        return retryCount;
    }

    /**
     * The RNR retry count.
     *
     * @return 0 to 7, 7 meaning forever.
     */
    public int rnrRetryCount() {
        return rnrRetryCount;
    }

    /**
     * The most target SGL entries a peer may advertise.
     *
     * @return entries.
     */
    public int peerMaxTargetSglEntries() {
        return peerMaxTargetSglEntries;
    }

    /**
     * The largest first receive region a peer may advertise.
     *
     * @return bytes.
     */
    public int peerMaxDataBufferLength() {
        return peerMaxDataBufferLength;
    }

    @Override
    public String toString() {
        return "StreamConfiguration{sendQueueSize=" + sendQueueSize
            + ", receiveQueueSize=" + receiveQueueSize
            + ", inlineDataLength=" + inlineDataLength
            + ", receiveBufferLength=" + receiveBufferLength
            + ", sendBufferLength=" + sendBufferLength
            + ", iomapEntries=" + iomapEntries
            + ", controlWindow=" + controlWindow
            + ", targetSglEntries=" + targetSglEntries
            + ", maxTransferLength=" + maxTransferLength
            + ", transferStartLength=" + transferStartLength
            + ", sendLowWaterMark=" + sendLowWaterMark
            + ", pollingTimeMicros=" + pollingTimeMicros
            + ", keepAliveSeconds=" + keepAliveSeconds
            + ", sendCompletionTimeoutMillis=" + sendCompletionTimeoutMillis
            + ", closeLingerMillis=" + closeLingerMillis
            + ", memoryPoolSize=" + memoryPoolSize
            + ", memoryPoolIdleMillis=" + memoryPoolIdleMillis
            + ", sharedReceiveQueue=" + sharedReceiveQueue
            + ", sharedReceiveQueueSize=" + sharedReceiveQueueSize
            + ", sharedReceiveCredits=" + sharedReceiveCredits
            + ", stallEventMillis=" + stallEventMillis
            + ", resolveAttempts=" + resolveAttempts
            + ", retryCount=" + retryCount
            + ", rnrRetryCount=" + rnrRetryCount
            + ", peerMaxTargetSglEntries=" + peerMaxTargetSglEntries
            + ", peerMaxDataBufferLength=" + peerMaxDataBufferLength
            + '}';
    }
}
