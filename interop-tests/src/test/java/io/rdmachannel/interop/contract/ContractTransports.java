package io.rdmachannel.interop.contract;

import java.util.List;
import java.util.stream.Stream;

import org.junit.jupiter.api.Named;
import org.junit.jupiter.params.provider.Arguments;

/**
 * The transports and I/O modes every contract test iterates over, as JUnit argument sources.
 * <p>
 * <b>Adding a transport.</b> Implement {@link ContractTransport} for the new provider (for the RDMA channels:
 * {@code name()} such as {@code "rdma-shm"} or {@code "rdma-native"}, {@code provider()} returning an
 * {@code RdmaSelectorProvider} bound to that verbs provider, {@code loopbackAddress()} the address its listeners
 * accept on) and add one instance to {@link #ALL}. Nothing else changes: every parameterised contract test then runs
 * on it in every mode, with the transport's name in the display name. A transport that is not available on the
 * machine (no device, no provider) should be left out of the list by a check done once here, not skipped test by
 * test.
 */
final class ContractTransports {

    /**
     * Every transport under test; the JDK oracle comes first.
     */
    static final List<ContractTransport> ALL = List.of(
        new JdkTcpTransport(),
        new RdmaShmTransport());

    private ContractTransports() {
    }

    /**
     * Argument source: each transport.
     *
     * @return one argument set per transport.
     */
    static Stream<Arguments> transports() {
        return ALL.stream().map(transport -> Arguments.of(named(transport)));
    }

    /**
     * Argument source: each transport in each of the three modes.
     *
     * @return one argument set per transport and mode.
     */
    static Stream<Arguments> allModes() {
        return cross(IoMode.values());
    }

    /**
     * Argument source: each transport with blocking channels, on platform threads and on virtual threads.
     *
     * @return one argument set per transport and blocking mode.
     */
    static Stream<Arguments> blockingModes() {
        return cross(IoMode.BLOCKING, IoMode.VIRTUAL_THREADS);
    }

    static Named<ContractTransport> named(final ContractTransport transport) {
        return Named.of(transport.name(), transport);
    }

    private static Stream<Arguments> cross(final IoMode... modes) {
        return ALL.stream().flatMap(transport -> Stream.of(modes).map(mode -> Arguments.of(named(transport), mode)));
    }
}
