package io.rdmachannel.channel.stream;

/**
 * Releasing several things in a row: each is released whatever the others did, the first failure is kept and the
 * later ones are added to it as suppressed, and the caller rethrows it once all ran.
 */
final class Closing {
    private Closing() {
    }

    /**
     * Close {@code resource} ({@code null} is skipped).
     *
     * @param resource what to close.
     * @param failure  the failure of an earlier step, or {@code null}.
     * @return the failure to carry on with: {@code failure}, or this step's, or {@code failure} with this step's
     *     suppressed.
     */
    static RuntimeException close(final AutoCloseable resource, final RuntimeException failure) {
        if (resource == null) {
            return failure;
        }
        try {
            resource.close();
            return failure;
        } catch (final Exception ex) {
            return add(failure, ex instanceof RuntimeException runtime ? runtime
                : new IllegalStateException("closing " + resource + " failed", ex));
        }
    }

    /**
     * Carry on with the first failure: {@code thrown} if there was none, else {@code failure} with it suppressed.
     */
    static RuntimeException add(final RuntimeException failure, final RuntimeException thrown) {
        if (failure == null) {
            return thrown;
        }
        failure.addSuppressed(thrown);
        return failure;
    }
}
