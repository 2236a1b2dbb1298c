package io.rdmachannel.channel.stream;

/**
 * Told by the engine that an armed endpoint's readiness may have changed. Called from an engine thread; must not
 * block or call back into the endpoint with locks held.
 */
@FunctionalInterface
public interface ReadinessObserver {
    /**
     * The endpoint may be readable, writable, acceptable, connected, failed or closed now; re-check its ready ops.
     */
    void onReadiness();
}
