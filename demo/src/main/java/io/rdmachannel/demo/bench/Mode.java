package io.rdmachannel.demo.bench;

/**
 * How both ends wait for their channel: the same mode runs on the client and the server of a measurement.
 */
enum Mode {
    /**
     * Blocking channels; RDMA channels keep their default busy poll ({@code rdmachannel.stream.pollingTimeMicros}).
     */
    BLOCKING("blocking"),
    /**
     * Non-blocking channels, each waiting in a {@code Selector} of its own provider when it cannot make progress.
     */
    SELECTOR("selector"),
    /**
     * RDMA: blocking channels with {@code RDMA_BUSY_POLL} set; TCP and UDS: non-blocking channels read and written
     * in a spinning loop.
     */
    BUSY_POLL("busy-poll");

    private final String label;

    Mode(final String label) {
        this.label = label;
    }

    String label() {
        return label;
    }

    static Mode of(final String label) {
        for (final Mode mode : values()) {
            if (mode.label.equals(label)) {
                return mode;
            }
        }
        throw new IllegalArgumentException("unknown mode '" + label + "'");
    }
}
