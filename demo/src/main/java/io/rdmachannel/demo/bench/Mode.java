package io.rdmachannel.demo.bench;

/**
 * How both ends wait for their channel: the same mode runs on the client and the server of a measurement.
 */
enum Mode {
    /**
     * Blocking channels; RDMA channels keep their default busy poll ({@code rdmachannel.stream.pollingTimeMicros}).
     */
    BLOCKING(1, "blocking"),
    /**
     * Non-blocking channels, each waiting in a {@code Selector} of its own provider when it cannot make progress.
     */
    SELECTOR(2, "selector"),
    /**
     * RDMA: blocking channels with {@code RDMA_BUSY_POLL} set; TCP and UDS: non-blocking channels read and written
     * in a spinning loop.
     */
    BUSY_POLL(3, "busy-poll");

    private final int code;
    private final String label;

    Mode(final int code, final String label) {
        this.code = code;
        this.label = label;
    }

    /**
     * The value in the session header; fixed, so reordering the constants cannot change the wire.
     */
    int code() {
        return code;
    }

    /**
     * The constant with this session-header code.
     *
     * @throws IllegalArgumentException for an unknown code.
     */
    static Mode ofCode(final int code) {
        for (final Mode value : values()) {
            if (value.code == code) {
                return value;
            }
        }
        throw new IllegalArgumentException("unknown mode code " + code);
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
