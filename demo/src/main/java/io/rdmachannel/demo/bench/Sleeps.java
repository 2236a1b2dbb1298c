package io.rdmachannel.demo.bench;

/**
 * Sleeping for the benchmark tools, whose waits are not meant to be interrupted.
 */
final class Sleeps {
    private Sleeps() {
    }

    /**
     * Sleep {@code millis} ms; an interrupt keeps the thread's flag and ends the tool's run as an
     * {@link IllegalStateException}.
     */
    static void sleep(final long millis) {
        try {
            Thread.sleep(millis);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ex);
        }
    }
}
