package io.rdmachannel.channel.cm;

/**
 * Host policy: which peers may connect. Runs on the CM's event thread before any resource is allocated for the
 * request, so a refused peer costs nothing but the rejection.
 */
@FunctionalInterface
public interface ConnectionRequestFilter {
    /** A filter that lets every request through. */
    ConnectionRequestFilter ACCEPT_ALL = request -> null;

    /**
     * Decide on a request.
     *
     * @param request the request.
     * @return {@code null} to let it through, or the rejection to answer it with.
     */
    Rejection check(ConnectionRequest request);
}
