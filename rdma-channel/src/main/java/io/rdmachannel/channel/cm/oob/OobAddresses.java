package io.rdmachannel.channel.cm.oob;

import io.rdmachannel.channel.IbSocketAddress;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.NetworkInterface;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.function.Predicate;

/**
 * How the {@code oob} connection manager reads the two address families. An {@link InetSocketAddress} is the side
 * channel's address. An {@link IbSocketAddress} is a RoCE GID, which is an IP address of the device's interface
 * ({@code ::ffff:a.b.c.d} for IPv4, an IPv6 address as itself; the all-zero GID is the wildcard): the side channel
 * goes to that IP address, and the GID the peer answers with must be the one dialed (checked by the handshake on
 * RoCE). A link-local GID ({@code fe80::/10}) needs an interface: the one that owns it when it is local, else the
 * only interface on which the provider's devices have a link-local GID.
 *
 * <p>Only stream port-space service IDs ({@code ib:[GID]:PORT}) and the default P_Key are taken: the side channel
 * has a port, and a queue pair moved by hand uses P_Key index 0.
 */
final class OobAddresses {
    private OobAddresses() {
    }

    /**
     * The IP socket address (RDMA port, not the side channel's) of an address either family.
     *
     * @param address an {@link InetSocketAddress} or {@link IbSocketAddress}.
     * @param isLocal whether it is an address of this host (to bind), else a peer's (to connect to).
     * @param localGid which GIDs the provider's devices have, to find the interface of a peer's link-local GID.
     * @throws UnsupportedAddressTypeException for another type, or a GID address the side channel cannot reach.
     * @throws UnresolvedAddressException for an unresolved host name.
     */
    static InetSocketAddress toInet(final SocketAddress address, final boolean isLocal,
        final Predicate<byte[]> localGid) {
        if (address instanceof InetSocketAddress inet) {
            if (inet.isUnresolved()) {
                throw new UnresolvedAddressException();
            }
            return inet;
        }
        if (!(address instanceof IbSocketAddress ib)) {
            throw new Unsupported("the oob connection manager takes InetSocketAddress or IbSocketAddress, not "
                + (address == null ? "null" : address.getClass().getName()));
        }
        if (!ib.hasPort()) {
            throw new Unsupported(ib + ": the oob connection manager takes stream port-space addresses "
                + "(ib:[GID]:PORT), not other service IDs");
        }
        if (ib.pkey() != IbSocketAddress.DEFAULT_PKEY) {
            throw new Unsupported(ib + ": the oob connection manager connects in the default partition only "
                + "(P_Key 0xffff)");
        }
        return new InetSocketAddress(ipOf(ib, isLocal, localGid), ib.port());
    }

    private static InetAddress ipOf(final IbSocketAddress ib, final boolean isLocal,
        final Predicate<byte[]> localGid) {
        final byte[] gid = ib.gid();
        try {
            if (isIpv4Mapped(gid)) {
                return InetAddress.getByAddress(Arrays.copyOfRange(gid, 12, 16));
            }
            final InetAddress ip = InetAddress.getByAddress(gid);
            if (!ip.isLinkLocalAddress()) {
                return ip;
            }
            return isLocal ? ownLinkLocal(ib, gid) : peerLinkLocal(ib, gid, localGid);
        } catch (final UnknownHostException | SocketException ex) {
            final Unsupported unsupported = new Unsupported(ib + ": " + ex.getMessage());
            unsupported.initCause(ex);
            throw unsupported;
        }
    }

    /** This host's link-local address with the GID's bytes, with the scope of the interface that owns it. */
    private static InetAddress ownLinkLocal(final IbSocketAddress ib, final byte[] gid) throws SocketException {
        for (final NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            for (final InetAddress ip : Collections.list(nif.getInetAddresses())) {
                if (ip instanceof Inet6Address && Arrays.equals(ip.getAddress(), gid)) {
                    return ip;
                }
            }
        }
        throw new Unsupported(ib + ": no interface of this host has the link-local address of this GID");
    }

    /**
     * A peer's link-local GID on the interface that reaches it: the only interface that is up and has a link-local
     * address that is a GID of one of our devices, else the only one up with a link-local address at all.
     */
    private static InetAddress peerLinkLocal(final IbSocketAddress ib, final byte[] gid,
        final Predicate<byte[]> localGid) throws SocketException, UnknownHostException {
        final List<NetworkInterface> withLinkLocal = new ArrayList<>();
        final List<NetworkInterface> rdma = new ArrayList<>();
        for (final NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
            if (!nif.isUp() || nif.isLoopback()) {
                continue;
            }
            boolean linkLocal = false;
            boolean isRdma = false;
            for (final InetAddress ip : Collections.list(nif.getInetAddresses())) {
                if (ip instanceof Inet6Address && ip.isLinkLocalAddress()) {
                    linkLocal = true;
                    isRdma |= localGid.test(ip.getAddress());
                }
            }
            if (linkLocal) {
                withLinkLocal.add(nif);
            }
            if (isRdma) {
                rdma.add(nif);
            }
        }
        final List<NetworkInterface> candidates = rdma.isEmpty() ? withLinkLocal : rdma;
        if (candidates.size() != 1) {
            throw new Unsupported(ib + ": a link-local GID needs the interface that reaches it, and "
                + (candidates.isEmpty() ? "no interface" : "more than one (" + names(candidates) + ")")
                + " could: use the peer's IPv4-mapped GID (ib:[::ffff:a.b.c.d]:PORT) or a global one");
        }
        return Inet6Address.getByAddress(null, gid, candidates.getFirst());
    }

    private static String names(final List<NetworkInterface> interfaces) {
        return String.join(", ", interfaces.stream().map(NetworkInterface::getName).toList());
    }

    private static boolean isIpv4Mapped(final byte[] gid) {
        for (int i = 0; i < 10; i++) {
            if (gid[i] != 0) {
                return false;
            }
        }
        return gid[10] == (byte) 0xff && gid[11] == (byte) 0xff;
    }

    /**
     * An address in the family the user chose: as it is, or as the RoCE GID of its IP address (the wildcard as the
     * all-zero GID).
     */
    static SocketAddress present(final InetSocketAddress address, final boolean gidAddressing) {
        if (!gidAddressing) {
            return address;
        }
        final InetAddress ip = address.getAddress();
        final byte[] gid = ip.isAnyLocalAddress() ? new byte[IbSocketAddress.GID_LENGTH] : OobDevices.gidOf(ip);
        return IbSocketAddress.of(gid, address.getPort());
    }

    /** An unsupported address, with why. */
    static final class Unsupported extends UnsupportedAddressTypeException {
        private static final long serialVersionUID = 1L;

        private final String message;

        Unsupported(final String message) {
            this.message = message;
        }

        @Override
        public String getMessage() {
            return message;
        }
    }
}
