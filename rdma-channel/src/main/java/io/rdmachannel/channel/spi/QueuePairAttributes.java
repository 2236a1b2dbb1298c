package io.rdmachannel.channel.spi;

import java.util.HexFormat;

/**
 * What a state transition needs (an {@code ibv_qp_attr}). Fluent and reusable. Which fields are read:
 * <ul>
 *   <li>to INIT: {@link #accessFlags(int)} (remote access this queue pair allows), {@link #portNumber(int)};</li>
 *   <li>to READY_TO_RECEIVE: {@link #remoteGid(byte[])}, {@link #remoteQueuePairNumber(int)},
 *       {@link #receivePacketSequenceNumber(int)}, {@link #pathMtu(int)}, {@link #minRnrTimer(int)},
 *       {@link #maxDestinationReadAtomic(int)};</li>
 *   <li>to READY_TO_SEND: {@link #sendPacketSequenceNumber(int)}, {@link #timeout(int)}, {@link #retryCount(int)},
 *       {@link #rnrRetry(int)} (7 retries forever), {@link #maxReadAtomic(int)}.</li>
 * </ul>
 */
public final class QueuePairAttributes {
    /** The RNR retry value that means "retry forever". */
    public static final int RNR_RETRY_INFINITE = 7;

    private static final long[] RNR_TIMER_NANOS = {
        655_360_000L, 10_000L, 20_000L, 30_000L, 40_000L, 60_000L, 80_000L, 120_000L,
        160_000L, 240_000L, 320_000L, 480_000L, 640_000L, 960_000L, 1_280_000L, 1_920_000L,
        2_560_000L, 3_840_000L, 5_120_000L, 7_680_000L, 10_240_000L, 15_360_000L, 20_480_000L, 30_720_000L,
        40_960_000L, 61_440_000L, 81_920_000L, 122_880_000L, 163_840_000L, 245_760_000L, 327_680_000L, 491_520_000L,
    };

    private int accessFlags;
    private int portNumber = 1;
    private byte[] remoteGid;
    private int remoteQueuePairNumber = -1;
    private int receivePacketSequenceNumber;
    private int sendPacketSequenceNumber;
    private int pathMtu = 1024;
    private int minRnrTimer = 12;
    private int timeout = 14;
    private int retryCount = 7;
    private int rnrRetry = RNR_RETRY_INFINITE;
    private int maxReadAtomic = 1;
    private int maxDestinationReadAtomic = 1;

    /**
     * Defaults as rsockets connects: path MTU 1024, RNR timer 12, timeout 14, retry 7, RNR retry 7 (forever).
     */
    public QueuePairAttributes() {
        // defaults are in the field initialisers
    }

    /**
     * Set the remote access the queue pair allows ({@link AccessFlags} remote bits).
     *
     * @param flags the flags.
     * @return this.
     */
    public QueuePairAttributes accessFlags(final int flags) {
        if ((flags & ~AccessFlags.ALL) != 0) {
            throw new IllegalArgumentException("unknown access flags: accessFlags=0x" + Integer.toHexString(flags));
        }
        this.accessFlags = flags;
        return this;
    }

    /**
     * Set the device port; default 1.
     *
     * @param port from 1.
     * @return this.
     */
    public QueuePairAttributes portNumber(final int port) {
        this.portNumber = port;
        return this;
    }

    /**
     * Set the remote GID (the peer device's {@link RdmaDevice#queryGid(int, int)}).
     *
     * @param gid 16 bytes; copied.
     * @return this.
     */
    public QueuePairAttributes remoteGid(final byte[] gid) {
        if (gid.length != 16) {
            throw new IllegalArgumentException("a GID has 16 bytes: length=" + gid.length);
        }
        this.remoteGid = gid.clone();
        return this;
    }

    /**
     * Set the remote queue-pair number.
     *
     * @param number 24 bits.
     * @return this.
     */
    public QueuePairAttributes remoteQueuePairNumber(final int number) {
        this.remoteQueuePairNumber = number;
        return this;
    }

    /**
     * Set the first packet sequence number expected from the peer.
     *
     * @param psn 24 bits.
     * @return this.
     */
    public QueuePairAttributes receivePacketSequenceNumber(final int psn) {
        this.receivePacketSequenceNumber = psn & 0xFFFFFF;
        return this;
    }

    /**
     * Set the first packet sequence number sent.
     *
     * @param psn 24 bits.
     * @return this.
     */
    public QueuePairAttributes sendPacketSequenceNumber(final int psn) {
        this.sendPacketSequenceNumber = psn & 0xFFFFFF;
        return this;
    }

    /**
     * Set the path MTU in bytes: 256, 512, 1024, 2048 or 4096; default 1024.
     *
     * @param bytes the MTU.
     * @return this.
     */
    public QueuePairAttributes pathMtu(final int bytes) {
        if (bytes != 256 && bytes != 512 && bytes != 1024 && bytes != 2048 && bytes != 4096) {
            throw new IllegalArgumentException("pathMtu must be 256, 512, 1024, 2048 or 4096: pathMtu=" + bytes);
        }
        this.pathMtu = bytes;
        return this;
    }

    /**
     * Set the RNR NAK timer code (0 to 31, the IB encoding; 12 is 0.64 ms); default 12.
     *
     * @param code the timer code.
     * @return this.
     */
    public QueuePairAttributes minRnrTimer(final int code) {
        this.minRnrTimer = checkRange("minRnrTimer", code, 0, 31);
        return this;
    }

    /**
     * Set the local ACK timeout code (0 to 31; 4.096 us times 2^code); default 14.
     *
     * @param code the timeout code.
     * @return this.
     */
    public QueuePairAttributes timeout(final int code) {
        this.timeout = checkRange("timeout", code, 0, 31);
        return this;
    }

    /**
     * Set the transport retry count (0 to 7); default 7.
     *
     * @param count the retries.
     * @return this.
     */
    public QueuePairAttributes retryCount(final int count) {
        this.retryCount = checkRange("retryCount", count, 0, 7);
        return this;
    }

    /**
     * Set the RNR retry count (0 to 7, where {@link #RNR_RETRY_INFINITE} retries forever); default 7.
     *
     * @param count the retries.
     * @return this.
     */
    public QueuePairAttributes rnrRetry(final int count) {
        this.rnrRetry = checkRange("rnrRetry", count, 0, 7);
        return this;
    }

    /**
     * Set the RDMA READs this side may have outstanding; default 1.
     *
     * @param count the count.
     * @return this.
     */
    public QueuePairAttributes maxReadAtomic(final int count) {
        this.maxReadAtomic = checkRange("maxReadAtomic", count, 0, 255);
        return this;
    }

    /**
     * Set the RDMA READs the peer may have outstanding against this side; default 1.
     *
     * @param count the count.
     * @return this.
     */
    public QueuePairAttributes maxDestinationReadAtomic(final int count) {
        this.maxDestinationReadAtomic = checkRange("maxDestinationReadAtomic", count, 0, 255);
        return this;
    }

    /**
     * The remote access allowed.
     *
     * @return flags.
     */
    public int accessFlags() {
        return accessFlags;
    }

    /**
     * The port.
     *
     * @return the port number.
     */
    public int portNumber() {
        return portNumber;
    }

    /**
     * The remote GID.
     *
     * @return a copy, or {@code null} if unset.
     */
    public byte[] remoteGid() {
        return remoteGid == null ? null : remoteGid.clone();
    }

    /**
     * The remote queue-pair number.
     *
     * @return the number, -1 if unset.
     */
    public int remoteQueuePairNumber() {
        return remoteQueuePairNumber;
    }

    /**
     * The receive PSN.
     *
     * @return the PSN.
     */
    public int receivePacketSequenceNumber() {
        return receivePacketSequenceNumber;
    }

    /**
     * The send PSN.
     *
     * @return the PSN.
     */
    public int sendPacketSequenceNumber() {
        return sendPacketSequenceNumber;
    }

    /**
     * The path MTU.
     *
     * @return bytes.
     */
    public int pathMtu() {
        return pathMtu;
    }

    /**
     * The RNR timer code.
     *
     * @return the code.
     */
    public int minRnrTimer() {
        return minRnrTimer;
    }

    /**
     * The ACK timeout code.
     *
     * @return the code.
     */
    public int timeout() {
        return timeout;
    }

    /**
     * The retry count.
     *
     * @return the count.
     */
    public int retryCount() {
        return retryCount;
    }

    /**
     * The RNR retry count.
     *
     * @return the count.
     */
    public int rnrRetry() {
        return rnrRetry;
    }

    /**
     * The outstanding RDMA READ limit.
     *
     * @return the count.
     */
    public int maxReadAtomic() {
        return maxReadAtomic;
    }

    /**
     * The peer's outstanding RDMA READ limit.
     *
     * @return the count.
     */
    public int maxDestinationReadAtomic() {
        return maxDestinationReadAtomic;
    }

    /**
     * The RNR NAK timer in nanoseconds for an IB timer code (IBA table 45: 0 is 655.36 ms, 1 is 0.01 ms, ...).
     *
     * @param code 0 to 31.
     * @return the delay in nanoseconds.
     */
    public static long rnrTimerNanos(final int code) {
        checkRange("minRnrTimer", code, 0, 31);
        return RNR_TIMER_NANOS[code];
    }

    private static int checkRange(final String name, final int value, final int min, final int max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(name + "=" + value + " is outside [" + min + ", " + max + "]");
        }
        return value;
    }

    @Override
    public String toString() {
        return "QueuePairAttributes{accessFlags=" + AccessFlags.toString(accessFlags)
            + ", portNumber=" + portNumber
            + ", remoteGid=" + (remoteGid == null ? "null" : HexFormat.of().formatHex(remoteGid))
            + ", remoteQueuePairNumber=" + remoteQueuePairNumber
            + ", receivePsn=" + receivePacketSequenceNumber
            + ", sendPsn=" + sendPacketSequenceNumber
            + ", pathMtu=" + pathMtu
            + ", minRnrTimer=" + minRnrTimer
            + ", timeout=" + timeout
            + ", retryCount=" + retryCount
            + ", rnrRetry=" + rnrRetry
            + ", maxReadAtomic=" + maxReadAtomic
            + ", maxDestinationReadAtomic=" + maxDestinationReadAtomic
            + '}';
    }
}
