package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.IbSocketAddress;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * How the shm connection manager names listeners and carries addresses. Both address families map onto the same
 * rendezvous: an IP address and port, or an InfiniBand GID and service ID (with P_Key). A listener on a wildcard
 * (the any-address, or an all-zero GID) is found for every address of its family with its port or service ID that
 * is this host's: the connection manager refuses other hosts' addresses before it looks.
 *
 * <pre>
 *  listener name (IP): "&lt;host&gt;_&lt;port&gt;", or "any_&lt;port&gt;" for the wildcard
 *  listener name (IB): "ib_&lt;gid hex&gt;_&lt;sid hex&gt;", or "ib_any_&lt;sid hex&gt;" for the wildcard
 *  encoded address: kind u8 (1 = IP, 2 = IB), then IP: length u8, bytes, port u16; IB: gid[16], pkey u16, sid u64
 * </pre>
 */
final class ShmAddresses {
    private static final int KIND_INET = 1;
    private static final int KIND_IB = 2;
    private static final byte[] ANY_GID = new byte[IbSocketAddress.GID_LENGTH];

    private ShmAddresses() {
    }

    /**
     * Check an address and resolve a wildcard target to the loopback (IP) as the JDK does.
     *
     * @throws UnsupportedAddressTypeException for another address type.
     * @throws UnresolvedAddressException for an unresolved IP address.
     */
    static SocketAddress check(final SocketAddress address) {
        if (address instanceof InetSocketAddress inet) {
            if (inet.isUnresolved()) {
                throw new UnresolvedAddressException();
            }
            return inet;
        }
        if (address instanceof IbSocketAddress) {
            return address;
        }
        throw new UnsupportedAddressTypeException();
    }

    static boolean isWildcard(final SocketAddress address) {
        return address instanceof InetSocketAddress inet ? inet.getAddress().isAnyLocalAddress()
            : Arrays.equals(((IbSocketAddress) address).gid(), ANY_GID);
    }

    static int port(final SocketAddress address) {
        return address instanceof InetSocketAddress inet ? inet.getPort()
            : (int) (((IbSocketAddress) address).serviceId() & 0xFFFF);
    }

    /**
     * The same host with another port (for IB: the stream port-space service ID of that port, same P_Key).
     */
    static SocketAddress withPort(final SocketAddress address, final int port) {
        if (address instanceof InetSocketAddress inet) {
            return new InetSocketAddress(inet.getAddress(), port);
        }
        final IbSocketAddress ib = (IbSocketAddress) address;
        return IbSocketAddress.of(ib.gid(), ib.pkey(), IbSocketAddress.serviceIdOf(port));
    }

    /**
     * Whether the address names a port: IP always; IB when its service ID is in the stream port space.
     */
    static boolean hasPort(final SocketAddress address) {
        return address instanceof InetSocketAddress || ((IbSocketAddress) address).hasPort();
    }

    /**
     * The listener name of an address, and of the wildcard of its family when {@code wildcard} is set.
     */
    static String listenerName(final SocketAddress address, final boolean wildcard) {
        if (address instanceof InetSocketAddress inet) {
            final InetAddress host = inet.getAddress();
            return (wildcard || host.isAnyLocalAddress() ? "any" : host.getHostAddress().replace('%', '-')) + "_"
                + inet.getPort();
        }
        final IbSocketAddress ib = (IbSocketAddress) address;
        return "ib_" + (wildcard || isWildcard(ib) ? "any" : HexFormat.of().formatHex(ib.gid())) + "_"
            + Long.toHexString(ib.serviceId());
    }

    /**
     * The address to connect to: a wildcard IP target means the loopback, as the JDK connects.
     */
    static SocketAddress target(final SocketAddress address) {
        if (address instanceof InetSocketAddress inet && inet.getAddress().isAnyLocalAddress()) {
            return new InetSocketAddress(InetAddress.getLoopbackAddress(), inet.getPort());
        }
        return address;
    }

    /**
     * The requester's own address for a connection to {@code target}: the same host or device as the target
     * (for IB, the requester's device GID) with an ephemeral port, unless the caller bound one.
     */
    static SocketAddress source(final SocketAddress local, final SocketAddress target, final byte[] deviceGid,
        final int ephemeralPort) {
        if (local != null && port(local) != 0) {
            return local;
        }
        if (target instanceof InetSocketAddress inet) {
            final InetAddress host = local instanceof InetSocketAddress bound && !bound.getAddress()
                .isAnyLocalAddress() ? bound.getAddress() : inet.getAddress();
            return new InetSocketAddress(host, ephemeralPort);
        }
        return IbSocketAddress.of(deviceGid, ((IbSocketAddress) target).pkey(),
            IbSocketAddress.serviceIdOf(ephemeralPort));
    }

    static void put(final ByteBuffer frame, final SocketAddress address) {
        if (address instanceof InetSocketAddress inet) {
            final byte[] bytes = inet.getAddress().getAddress();
            frame.put((byte) KIND_INET).put((byte) bytes.length).put(bytes).putShort((short) inet.getPort());
        } else {
            final IbSocketAddress ib = (IbSocketAddress) address;
            frame.put((byte) KIND_IB).put(ib.gid()).putShort((short) ib.pkey()).putLong(ib.serviceId());
        }
    }

    static SocketAddress get(final ByteBuffer message) throws IOException {
        final int kind = message.get();
        if (kind == KIND_INET) {
            final int length = Byte.toUnsignedInt(message.get());
            if (length != 4 && length != 16) {
                throw new IOException("malformed address in handshake: length=" + length);
            }
            final byte[] bytes = new byte[length];
            message.get(bytes);
            return new InetSocketAddress(InetAddress.getByAddress(bytes), Short.toUnsignedInt(message.getShort()));
        }
        if (kind == KIND_IB) {
            final byte[] gid = new byte[IbSocketAddress.GID_LENGTH];
            message.get(gid);
            final int pkey = Short.toUnsignedInt(message.getShort());
            return IbSocketAddress.of(gid, pkey, message.getLong());
        }
        throw new IOException("malformed address in handshake: kind=" + kind);
    }
}
