package io.rdmachannel.channel.spi;

/**
 * Memory-region and queue-pair access flags, with the ibverbs values ({@code IBV_ACCESS_*}).
 */
public final class AccessFlags {
    /** The local side may write the memory (receives and RDMA READ results land there). */
    public static final int LOCAL_WRITE = 1;
    /** A peer may RDMA WRITE into the memory. */
    public static final int REMOTE_WRITE = 1 << 1;
    /** A peer may RDMA READ the memory. */
    public static final int REMOTE_READ = 1 << 2;
    /** A peer may perform atomic operations on the memory. */
    public static final int REMOTE_ATOMIC = 1 << 3;
    /** Every flag this SPI knows. */
    public static final int ALL = LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;
    /** Flags that let a peer reach the memory. */
    public static final int REMOTE = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

    private AccessFlags() {
    }

    /**
     * Validate a flag set. Remote write and remote atomic need local write, as ibverbs requires.
     *
     * @param flags the flags.
     * @return the flags.
     * @throws IllegalArgumentException if a bit is unknown or a required companion flag is missing.
     */
    public static int check(final int flags) {
        if ((flags & ~ALL) != 0) {
            throw new IllegalArgumentException("unknown access flags: accessFlags=0x" + Integer.toHexString(flags));
        }
        if ((flags & (REMOTE_WRITE | REMOTE_ATOMIC)) != 0 && (flags & LOCAL_WRITE) == 0) {
            throw new IllegalArgumentException("remote write and remote atomic need LOCAL_WRITE: accessFlags="
                + toString(flags));
        }
        return flags;
    }

    /**
     * A readable form such as {@code LOCAL_WRITE|REMOTE_WRITE}.
     *
     * @param flags the flags.
     * @return the names joined by {@code |}, or {@code NONE}.
     */
    public static String toString(final int flags) {
        final StringBuilder builder = new StringBuilder();
        append(builder, flags, LOCAL_WRITE, "LOCAL_WRITE");
        append(builder, flags, REMOTE_WRITE, "REMOTE_WRITE");
        append(builder, flags, REMOTE_READ, "REMOTE_READ");
        append(builder, flags, REMOTE_ATOMIC, "REMOTE_ATOMIC");
        if ((flags & ~ALL) != 0) {
            append(builder, flags, flags & ~ALL, "0x" + Integer.toHexString(flags & ~ALL));
        }
        return builder.isEmpty() ? "NONE" : builder.toString();
    }

    private static void append(final StringBuilder builder, final int flags, final int flag, final String name) {
        if ((flags & flag) != 0) {
            if (!builder.isEmpty()) {
                builder.append('|');
            }
            builder.append(name);
        }
    }
}
