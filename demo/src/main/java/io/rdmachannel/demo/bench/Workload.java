package io.rdmachannel.demo.bench;

/**
 * What one measurement does on a connection; its label is the {@code test} of a result.
 */
enum Workload {
    /**
     * Ping-pong: the client writes a message, the server reads all of it and writes it back; each round trip timed.
     */
    LATENCY("latency"),
    /**
     * One-way stream of messages from the client; the server acknowledges the total it read at the end.
     */
    BANDWIDTH("bandwidth");

    private final String label;

    Workload(final String label) {
        this.label = label;
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
