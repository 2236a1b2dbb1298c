package io.rdmachannel.channel.spi;

/**
 * Send work-request flags, with the ibverbs values ({@code IBV_SEND_*}).
 */
public final class SendFlags {
    /** Wait for earlier RDMA READs to complete before this request starts. */
    public static final int FENCE = 1;
    /** Generate a completion for this request at the sender. */
    public static final int SIGNALED = 1 << 1;
    /** Wake a receiver that armed its completion queue for solicited events only. */
    public static final int SOLICITED = 1 << 2;
    /** Copy the payload at post time; the buffers may be reused as soon as the post returns and need no lkey. */
    public static final int INLINE = 1 << 3;
    /** Every flag this SPI knows. */
    public static final int ALL = FENCE | SIGNALED | SOLICITED | INLINE;

    private SendFlags() {
    }
}
