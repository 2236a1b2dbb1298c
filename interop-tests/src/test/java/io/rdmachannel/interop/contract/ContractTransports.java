package io.rdmachannel.interop.contract;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.IOException;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.channels.ServerSocketChannel;
import java.util.List;
import java.util.Objects;
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
 * <p>
 * <b>IPv6.</b> {@link #IPV6} holds the same transports over the IPv6 loopback {@code ::1}, or nothing when this
 * machine cannot bind {@code ::1} (checked once, with the JDK's channels), and the native transport over an IPv6
 * address of the RDMA device's interface ({@code rdma-native-ipv6}; 2001:db8::1 in the soft-RoCE guest) when that
 * address is configured on this machine. They run only where the address family
 * matters: the sources {@link #transportsBothFamilies()} and {@link #allModesBothFamilies()} (annotations
 * {@link AcrossTransportsAndFamilies} and {@link AcrossModesAndFamilies}) used by echo, half-close, connect, accept
 * and the address tests; everything else runs over IPv4 only, to keep the suite's run time down.
 */
final class ContractTransports {

    /**
     * Every transport under test; the JDK oracle comes first. {@code rdma-shm-iwarp} runs the whole suite in the
     * stream's message mode, on shm devices emulating iWARP; it has no IPv6 twin (the address family does not
     * change how messages travel). {@code rdma-shm-nodes} runs it with listeners and clients on two shm nodes, so
     * that every connection crosses nodes as a connection between two processes does; {@code rdma-shm-procs} runs it
     * with every client in a child JVM ({@link ProcessesTransport}), so that it does cross processes ({@code
     * rdma-shm-procs-srq} in SRQ mode, {@code rdma-shm-procs-xrc} in XRC mode; {@code rdma-shm-xrc} is XRC mode in
     * one JVM).
     * {@code rdma-shm-oob} runs it
     * with the queue pairs connected by the {@code oob} manager (a TCP side channel) instead of shm's rendezvous;
     * {@code rdma-native-oob} does the same on a real device (the soft-RoCE guest) instead of rdma_cm; the
     * {@code -srq} twins run it in SRQ mode (every channel sets {@code RDMA_SHARED_RECEIVE_QUEUE}); the
     * {@code -gid} twins bind and connect by the RoCE GID of the address ({@code ib:[::ffff:a.b.c.d]:port}).
     */
    static final List<ContractTransport> ALL = selected(Stream.of(
        new JdkTcpTransport(),
        new RdmaTransport(RdmaTransport.SHM, "shm", InetAddress.getLoopbackAddress()),
        new RdmaTransport(RdmaTransport.SHM, "shm", InetAddress.getLoopbackAddress())
            .inSrqMode(RdmaTransport.SHM_SRQ),
        new RdmaTransport(RdmaTransport.SHM, "shm", InetAddress.getLoopbackAddress())
            .inXrcMode(RdmaTransport.SHM_XRC),
        new RdmaTransport(RdmaTransport.SHM_IWARP, RdmaTransport.IWARP_FABRIC, InetAddress.getLoopbackAddress()),
        new RdmaTransport(RdmaTransport.SHM_NODES, RdmaTransport.NODES_FABRIC, InetAddress.getLoopbackAddress()),
        new ProcessesTransport(null),
        new ProcessesTransport(RdmaSocketOptions.RDMA_SHARED_RECEIVE_QUEUE),
        new ProcessesTransport(RdmaSocketOptions.RDMA_XRC),
        new RdmaTransport(RdmaTransport.SHM_OOB, RdmaTransport.OOB_FABRIC, InetAddress.getLoopbackAddress()),
        new RdmaTransport(RdmaTransport.SHM_OOB_GID, RdmaTransport.OOB_FABRIC, InetAddress.getLoopbackAddress(), true),
        nativeTransport(RdmaTransport.NATIVE, "native", false),
        srq(nativeTransport(RdmaTransport.NATIVE, "native", false), RdmaTransport.NATIVE_SRQ),
        nativeTransport(RdmaTransport.NATIVE_OOB, RdmaTransport.NATIVE_OOB_FABRIC, false),
        nativeTransport(RdmaTransport.NATIVE_OOB_GID, RdmaTransport.NATIVE_OOB_FABRIC, true),
        nativeSiwTransport(),
        DropInTransport.ifInstalled(dropInAddress())));

    /**
     * The transports over the IPv6 loopback; empty if the machine cannot bind {@code ::1}.
     */
    static final List<ContractTransport> IPV6 = selected(Stream.concat(ipv6Loopback() == null ? Stream.empty()
        : Stream.of(new JdkTcpTransport(JdkTcpTransport.NAME + "-ipv6", ipv6Loopback()),
            new RdmaTransport(RdmaTransport.SHM + "-ipv6", "shm", ipv6Loopback())),
        Stream.ofNullable(nativeIpv6Transport())));

    /**
     * System property with a comma-separated list of transport names to run (all when unset), e.g.
     * {@code rdma-native} in the soft-RoCE guest.
     */
    static final String TRANSPORTS_PROP_NAME = "rdmachannel.contract.transports";

    /**
     * System property with the address the native transport's listeners bind to: an address of the RDMA device's
     * interface (rxe0's in the soft-RoCE guest).
     */
    static final String NATIVE_ADDRESS_PROP_NAME = "rdmachannel.contract.native.address";

    /**
     * System property with the IPv6 address the native transport's IPv6 listeners bind to: an address of the RDMA
     * device's interface (rxe0's in the soft-RoCE guest, {@value #NATIVE_ADDRESS6_DEFAULT}).
     */
    static final String NATIVE_ADDRESS6_PROP_NAME = "rdmachannel.contract.native.address6";

    private static final String NATIVE_ADDRESS6_DEFAULT = "2001:db8::1";

    /**
     * System property with the address of the soft-iWARP device's interface ({@code rdma-native-siw}; siw0's in the
     * guest, {@value #NATIVE_SIW_ADDRESS_DEFAULT}).
     */
    static final String NATIVE_SIW_ADDRESS_PROP_NAME = "rdmachannel.contract.native.siwAddress";

    private static final String NATIVE_SIW_ADDRESS_DEFAULT = "198.51.100.1";

    /**
     * System property with the address the drop-in transport's listeners bind to (default the loopback; an address
     * of the RDMA device's interface for RDMA on the native provider).
     */
    static final String DROPIN_ADDRESS_PROP_NAME = "rdmachannel.contract.dropin.address";

    private static InetAddress dropInAddress() {
        final String configured = System.getProperty(DROPIN_ADDRESS_PROP_NAME);
        try {
            return configured == null ? InetAddress.getLoopbackAddress() : InetAddress.getByName(configured);
        } catch (final UnknownHostException ex) {
            throw new IllegalStateException("bad " + DROPIN_ADDRESS_PROP_NAME + ": " + configured, ex);
        }
    }

    private static ContractTransport srq(final RdmaTransport transport, final String name) {
        return transport == null ? null : transport.inSrqMode(name);
    }

    /**
     * A native transport (over rdma_cm, or over oob) when an RDMA device is usable here (the soft-RoCE guest), else
     * nothing.
     */
    private static RdmaTransport nativeTransport(final String name, final String fabric, final boolean byGid) {
        if (!RdmaProviders.byName("native").isAvailable()) {
            return null;
        }
        try {
            return new RdmaTransport(name, fabric,
                InetAddress.getByName(System.getProperty(NATIVE_ADDRESS_PROP_NAME, "192.0.2.1")), byGid);
        } catch (final UnknownHostException ex) {
            throw new IllegalStateException("bad " + NATIVE_ADDRESS_PROP_NAME, ex);
        }
    }

    /**
     * The native transport over soft-iWARP ({@code rdma-native-siw}: siw0 on 198.51.100.1 in the guest, where the
     * stream runs in message mode) when an iWARP device has that address here, else nothing; an address given in
     * {@link #NATIVE_SIW_ADDRESS_PROP_NAME} must be one of this machine's.
     */
    private static ContractTransport nativeSiwTransport() {
        if (!RdmaProviders.byName("native").isAvailable()) {
            return null;
        }
        final String configured = System.getProperty(NATIVE_SIW_ADDRESS_PROP_NAME);
        final InetAddress address;
        try {
            address = InetAddress.ofLiteral(configured != null ? configured : NATIVE_SIW_ADDRESS_DEFAULT);
            if (NetworkInterface.getByInetAddress(address) == null) {
                if (configured != null) {
                    throw new IllegalStateException(NATIVE_SIW_ADDRESS_PROP_NAME + "=" + configured
                        + " is not an address of this machine");
                }
                return null;
            }
        } catch (final IllegalArgumentException | SocketException ex) {
            throw new IllegalStateException("bad " + NATIVE_SIW_ADDRESS_PROP_NAME + ": " + configured, ex);
        }
        return new RdmaTransport(RdmaTransport.NATIVE + "-siw", "native", address);
    }

    /**
     * The native transport over IPv6 when an RDMA device is usable here and the IPv6 address is one of this
     * machine's, else nothing; an address given in {@link #NATIVE_ADDRESS6_PROP_NAME} must be one of this machine's.
     */
    private static ContractTransport nativeIpv6Transport() {
        if (!RdmaProviders.byName("native").isAvailable()) {
            return null;
        }
        final String configured = System.getProperty(NATIVE_ADDRESS6_PROP_NAME);
        final InetAddress address;
        try {
            address = InetAddress.ofLiteral(configured != null ? configured : NATIVE_ADDRESS6_DEFAULT);
        } catch (final IllegalArgumentException ex) {
            throw new IllegalStateException("bad " + NATIVE_ADDRESS6_PROP_NAME + ": " + configured, ex);
        }
        if (!(address instanceof Inet6Address)) {
            throw new IllegalStateException(NATIVE_ADDRESS6_PROP_NAME + " is not an IPv6 address: " + configured);
        }
        final boolean local;
        try {
            local = NetworkInterface.getByInetAddress(address) != null;
        } catch (final SocketException ex) {
            throw new IllegalStateException("cannot list the network interfaces", ex);
        }
        if (!local && configured != null) {
            throw new IllegalStateException(NATIVE_ADDRESS6_PROP_NAME + "=" + configured
                + " is not an address of this machine");
        }
        return local ? new RdmaTransport(RdmaTransport.NATIVE + "-ipv6", "native", address) : null;
    }

    private static List<ContractTransport> selected(final Stream<ContractTransport> transports) {
        final String wanted = System.getProperty(TRANSPORTS_PROP_NAME, "");
        final List<String> names = wanted.isBlank() ? List.of() : List.of(wanted.split(","));
        return transports.filter(Objects::nonNull)
            .filter(transport -> names.isEmpty() || names.contains(transport.name()))
            .map(transport -> transport instanceof RdmaTransport rdma && rdma.isNative() ? rdma.warmedUp() : transport)
            .toList();
    }

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
     * Argument source: each transport over IPv4 and, where available, IPv6.
     *
     * @return one argument set per transport and address family.
     */
    static Stream<Arguments> transportsBothFamilies() {
        return bothFamilies().map(transport -> Arguments.of(named(transport)));
    }

    /**
     * Argument source: each transport in each of the three modes.
     *
     * @return one argument set per transport and mode.
     */
    static Stream<Arguments> allModes() {
        return cross(ALL.stream(), IoMode.values());
    }

    /**
     * Argument source: each transport over IPv4 and, where available, IPv6, in each of the three modes.
     *
     * @return one argument set per transport, address family and mode.
     */
    static Stream<Arguments> allModesBothFamilies() {
        return cross(bothFamilies(), IoMode.values());
    }

    /**
     * Argument source: each IPv6 transport in each of the three modes (nothing if the machine has no IPv6).
     *
     * @return one argument set per IPv6 transport and mode.
     */
    static Stream<Arguments> ipv6Modes() {
        return cross(IPV6.stream(), IoMode.values());
    }

    /**
     * Argument source: each transport with blocking channels, on platform threads and on virtual threads.
     *
     * @return one argument set per transport and blocking mode.
     */
    static Stream<Arguments> blockingModes() {
        return cross(ALL.stream(), IoMode.BLOCKING, IoMode.VIRTUAL_THREADS);
    }

    /**
     * A transport of another provider than {@code transport}'s, for tests that mix providers.
     *
     * @param transport the transport under test.
     * @return the first transport in {@link #ALL} whose provider differs, else the JDK oracle (when
     *     {@link #TRANSPORTS_PROP_NAME} selected RDMA transports only).
     */
    static ContractTransport foreignTo(final ContractTransport transport) {
        return ALL.stream().filter(other -> other.provider() != transport.provider()).findFirst()
            .orElseGet(JdkTcpTransport::new);
    }

    static Named<ContractTransport> named(final ContractTransport transport) {
        return Named.of(transport.name(), transport);
    }

    private static Stream<ContractTransport> bothFamilies() {
        return Stream.concat(ALL.stream(), IPV6.stream());
    }

    private static Stream<Arguments> cross(final Stream<ContractTransport> transports, final IoMode... modes) {
        return transports.flatMap(transport -> Stream.of(modes).map(mode -> Arguments.of(named(transport), mode)));
    }

    /**
     * The IPv6 loopback if a listener can bind it here, else null.
     */
    private static InetAddress ipv6Loopback() {
        return Ipv6.LOOPBACK;
    }

    /**
     * Checked once, on first use.
     */
    private static final class Ipv6 {
        static final InetAddress LOOPBACK = probe();

        private static InetAddress probe() {
            try (ServerSocketChannel probe = ServerSocketChannel.open()) {
                final InetAddress loopback = InetAddress.getByName("::1");
                probe.bind(new InetSocketAddress(loopback, 0));
                return loopback instanceof Inet6Address ? loopback : null;
            } catch (final IOException | UnsupportedOperationException ex) {
                return null;
            }
        }
    }
}
