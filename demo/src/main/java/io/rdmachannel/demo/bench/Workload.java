package io.rdmachannel.demo.bench;

/**
 * What one measurement does on a connection; its label is the {@code test} of a result.
 */
enum Workload {
    /**
     * Ping-pong: the client writes a message, the server reads all of it and writes it back; each round trip timed.
     */
    LATENCY(1, "latency"),
    /**
     * One-way stream of messages from the client; the server acknowledges the total it read at the end.
     */
    BANDWIDTH(2, "bandwidth"),
    /**
     * Connection churn: connect, one echo of a SIZE-byte message, close; repeated, each cycle timed. The server
     * serves each connection as a latency session of one message.
     */
    CHURN(3, "churn");

    private final int code;
    private final String label;

    Workload(final int code, final String label) {
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
    static Workload ofCode(final int code) {
        for (final Workload value : values()) {
            if (value.code == code) {
                return value;
            }
        }
        throw new IllegalArgumentException("unknown workload code " + code);
    }

    String label() {
        return label;
    }

    static Workload of(final String label) {
        for (final Workload workload : values()) {
            if (workload.label.equals(label)) {
                return workload;
            }
        }
        throw new IllegalArgumentException("unknown test '" + label + "'");
    }
}
