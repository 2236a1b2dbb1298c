package io.rdmachannel.interop.contract;

/**
 * Sizes of the heavy contract cases, each a system property with a modest default (pass {@code -Dname=value} to
 * Maven to change them).
 */
final class ContractConfiguration {

    /**
     * Seed of every random size sequence; printed in the state dump of a failed test so it can be replayed.
     */
    static final String SEED_PROP_NAME = "rdmachannel.contract.seed";

    /**
     * Bytes moved by each large-transfer case (one way, or the sum of both directions).
     */
    static final String TRANSFER_BYTES_PROP_NAME = "rdmachannel.contract.transfer.bytes";
    static final long TRANSFER_BYTES_DEFAULT = 1L << 30;

    /**
     * Concurrent connections of the many-connections case.
     */
    static final String CONNECTIONS_PROP_NAME = "rdmachannel.contract.connections";
    static final int CONNECTIONS_DEFAULT = 200;

    /**
     * Bytes the back-pressure case writes past a slow reader.
     */
    static final String BACK_PRESSURE_BYTES_PROP_NAME = "rdmachannel.contract.backpressure.bytes";
    static final long BACK_PRESSURE_BYTES_DEFAULT = 64L << 20;

    /**
     * How far at most a non-blocking writer may get ahead of its reader (bytes buffered in both stacks together).
     */
    static final String BACK_PRESSURE_BOUND_PROP_NAME = "rdmachannel.contract.backpressure.bound";
    static final long BACK_PRESSURE_BOUND_DEFAULT = 64L << 20;

    private ContractConfiguration() {
    }

    static long seed() {
        final Long seed = Long.getLong(SEED_PROP_NAME);
        return seed != null ? seed : System.nanoTime();
    }

    static long transferBytes() {
        return Long.getLong(TRANSFER_BYTES_PROP_NAME, TRANSFER_BYTES_DEFAULT);
    }

    static int connections() {
        return Integer.getInteger(CONNECTIONS_PROP_NAME, CONNECTIONS_DEFAULT);
    }

    static long backPressureBytes() {
        return Long.getLong(BACK_PRESSURE_BYTES_PROP_NAME, BACK_PRESSURE_BYTES_DEFAULT);
    }

    static long backPressureBound() {
        return Long.getLong(BACK_PRESSURE_BOUND_PROP_NAME, BACK_PRESSURE_BOUND_DEFAULT);
    }
}
