package io.rdmachannel.nio;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ProtocolFamily;
import java.net.SocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.Objects;

import io.rdmachannel.channel.IbSocketAddress;

/**
 * Address checks shared by the channels (the JDK's Net.checkAddress plus InfiniBand addresses).
 */
final class Addresses {
    private Addresses() {
    }

    /**
     * Check an address given to connect or bind.
     *
     * @throws NullPointerException if null.
     * @throws UnsupportedAddressTypeException for other address types, or IPv6 on an INET channel.
     * @throws UnresolvedAddressException for an unresolved address.
     */
    static SocketAddress check(final SocketAddress address, final ProtocolFamily family) {
        Objects.requireNonNull(address);
        if (address instanceof IbSocketAddress) {
            return address;
        }
        if (!(address instanceof InetSocketAddress inet)) {
            throw new UnsupportedAddressTypeException();
        }
        if (inet.isUnresolved()) {
            throw new UnresolvedAddressException();
        }
        if (family == StandardProtocolFamily.INET && !(inet.getAddress() instanceof Inet4Address)) {
            throw new UnsupportedAddressTypeException();
        }
        return inet;
    }

    /**
     * Check a remote address; a wildcard address means the loopback address, as in the JDK.
     */
    static SocketAddress checkRemote(final SocketAddress address, final ProtocolFamily family) {
        final SocketAddress checked = check(address, family);
        if (checked instanceof InetSocketAddress inet && inet.getAddress().isAnyLocalAddress()) {
            final InetAddress loopback = inet.getAddress() instanceof Inet6Address ? ipv6Loopback() : ipv4Loopback();
            return new InetSocketAddress(loopback, inet.getPort());
        }
        return checked;
    }

    /**
     * The wildcard address with port 0 for {@code bind(null)}.
     */
    static InetSocketAddress anyLocal(final ProtocolFamily family) {
        return family == StandardProtocolFamily.INET ? new InetSocketAddress(ipv4Any(), 0) : new InetSocketAddress(0);
    }

    private static InetAddress ipv4Any() {
        return byAddress(new byte[4]);
    }

    private static InetAddress ipv4Loopback() {
        return byAddress(new byte[] {127, 0, 0, 1});
    }

    private static InetAddress ipv6Loopback() {
        final byte[] bytes = new byte[16];
        bytes[15] = 1;
        return byAddress(bytes);
    }

    private static InetAddress byAddress(final byte[] bytes) {
        try {
            return InetAddress.getByAddress(bytes);
        } catch (final UnknownHostException ex) {
            throw new AssertionError(ex);
        }
    }
}
