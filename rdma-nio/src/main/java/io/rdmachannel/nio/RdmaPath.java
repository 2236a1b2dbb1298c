package io.rdmachannel.nio;

import java.util.Objects;

/**
 * The path a channel took: the value of {@link RdmaSocketOptions#RDMA_PATH}. A connected socket channel runs over
 * RDMA (on a verbs provider, {@code shm} or {@code native}) or over TCP (the platform's channel), and says why; a
 * bound server channel listens over RDMA, TCP, or both. Immutable.
 */
public final class RdmaPath {
    /**
     * The kind of path.
     */
    public enum Kind {
        /** The stream runs over RDMA. */
        RDMA,
        /** The stream runs over TCP, through the platform's channels. */
        TCP,
        /** A server channel listening for RDMA and TCP peers. */
        RDMA_AND_TCP
    }

    private final Kind kind;
    private final String provider;
    private final String reason;

    private RdmaPath(final Kind kind, final String provider, final String reason) {
        this.kind = Objects.requireNonNull(kind, "kind");
        this.provider = provider;
        this.reason = Objects.requireNonNull(reason, "reason");
    }

    static RdmaPath rdma(final String provider, final String reason) {
        return new RdmaPath(Kind.RDMA, Objects.requireNonNull(provider, "provider"), reason);
    }

    static RdmaPath tcp(final String reason) {
        return new RdmaPath(Kind.TCP, null, reason);
    }

    static RdmaPath both(final String provider, final String reason) {
        return new RdmaPath(Kind.RDMA_AND_TCP, Objects.requireNonNull(provider, "provider"), reason);
    }

    /**
     * The kind of path.
     *
     * @return RDMA, TCP, or both (server channels).
     */
    public Kind kind() {
        return kind;
    }

    /**
     * Whether RDMA carries (or, for a server channel, may carry) the stream.
     *
     * @return true for {@link Kind#RDMA} and {@link Kind#RDMA_AND_TCP}.
     */
    public boolean isRdma() {
        return kind != Kind.TCP;
    }

    /**
     * The verbs provider of the RDMA part.
     *
     * @return {@code shm} or {@code native}, or {@code null} for {@link Kind#TCP}.
     */
    public String provider() {
        return provider;
    }

    /**
     * Why this path: the rule or setting that chose it, or, after a fallback to TCP, why RDMA could not be used.
     *
     * @return the reason, e.g. {@code "fallback: Connection refused (no RDMA listener)"}.
     */
    public String reason() {
        return reason;
    }

    @Override
    public boolean equals(final Object other) {
        return other instanceof RdmaPath that && kind == that.kind && Objects.equals(provider, that.provider)
            && reason.equals(that.reason);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, provider, reason);
    }

    /**
     * For example {@code rdma:shm (policy RDMA_ONLY)}, {@code tcp (fallback: Connection refused)} or
     * {@code rdma:native+tcp (no rules: RDMA and TCP)}.
     */
    @Override
    public String toString() {
        final String name = switch (kind) {
            case RDMA -> "rdma:" + provider;
            case TCP -> "tcp";
            case RDMA_AND_TCP -> "rdma:" + provider + "+tcp";
        };
        return name + " (" + reason + ")";
    }
}
