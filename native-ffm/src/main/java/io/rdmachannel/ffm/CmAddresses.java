package io.rdmachannel.ffm;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.ffm.layout.SockAddrLayouts;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.nio.ByteOrder;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/**
 * Socket addresses as the RDMA CM takes them: {@code sockaddr_in}, {@code sockaddr_in6} and, where a port has an
 * InfiniBand link layer, {@code sockaddr_ib}. All multi-byte fields are in network byte order.
 */
final class CmAddresses {
    private static final int GID_LENGTH = 16;
    private static final Path SYSFS = Path.of("/sys/class/infiniband");

    private CmAddresses() {
    }

    /**
     * Check that the CM can use an address before anything is allocated for it.
     *
     * @throws UnsupportedAddressTypeException for other address types, and for AF_IB without an InfiniBand port.
     * @throws UnresolvedAddressException for an unresolved host name.
     */
    static SocketAddress check(SocketAddress address) {
        if (address instanceof InetSocketAddress inet) {
            if (inet.isUnresolved()) {
                throw new UnresolvedAddressException();
            }
            return inet;
        }
        if (address instanceof IbSocketAddress ib) {
            if (!hasInfiniBandPort()) {
                throw new Unsupported("AF_IB addressing (" + ib + ") needs an RDMA device with an InfiniBand link "
                    + "layer, and this host has none (RoCE devices such as rxe cannot use AF_IB): use an IP "
                    + "address, or the oob connection manager for GID addressing");
            }
            return ib;
        }
        throw new Unsupported("the rdma_cm connection manager takes InetSocketAddress or IbSocketAddress, not "
            + (address == null ? "null" : address.getClass().getName()));
    }

    /** Whether a port of some RDMA device has an InfiniBand link layer (AF_IB works only there). */
    static boolean hasInfiniBandPort() {
        try (Stream<Path> devices = Files.list(SYSFS)) {
            return devices.anyMatch(CmAddresses::hasInfiniBandPort);
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    private static boolean hasInfiniBandPort(Path device) {
        try (Stream<Path> ports = Files.list(device.resolve("ports"))) {
            return ports.anyMatch(port -> {
                try {
                    return "InfiniBand".equals(Files.readString(port.resolve("link_layer")).trim());
                } catch (IOException e) {
                    return false;
                }
            });
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** A checked address as a native {@code sockaddr} allocated in the arena. */
    static MemorySegment toNative(SocketAddress address, Arena arena) {
        if (address instanceof InetSocketAddress inet) {
            InetAddress ip = inet.getAddress();
            if (ip instanceof Inet4Address) {
                MemorySegment sin = arena.allocate(SockAddrLayouts.SOCKADDR_IN_SIZE, 4);
                sin.set(JAVA_SHORT, SockAddrLayouts.SA_FAMILY, (short) SockAddrLayouts.AF_INET);
                sin.set(JAVA_SHORT, SockAddrLayouts.SIN_PORT, networkShort(inet.getPort()));
                MemorySegment.copy(ip.getAddress(), 0, sin, JAVA_BYTE, SockAddrLayouts.SIN_ADDR, 4);
                return sin;
            }
            Inet6Address ip6 = (Inet6Address) ip;
            MemorySegment sin6 = arena.allocate(SockAddrLayouts.SOCKADDR_IN6_SIZE, 4);
            sin6.set(JAVA_SHORT, SockAddrLayouts.SA_FAMILY, (short) SockAddrLayouts.AF_INET6);
            sin6.set(JAVA_SHORT, SockAddrLayouts.SIN6_PORT, networkShort(inet.getPort()));
            MemorySegment.copy(ip6.getAddress(), 0, sin6, JAVA_BYTE, SockAddrLayouts.SIN6_ADDR, GID_LENGTH);
            sin6.set(JAVA_INT, SockAddrLayouts.SIN6_SCOPE_ID, ip6.getScopeId());
            return sin6;
        }
        IbSocketAddress ib = (IbSocketAddress) address;
        MemorySegment sib = arena.allocate(SockAddrLayouts.SOCKADDR_IB_SIZE, 8);
        sib.set(JAVA_SHORT, SockAddrLayouts.SA_FAMILY, (short) SockAddrLayouts.AF_IB);
        sib.set(JAVA_SHORT, SockAddrLayouts.SIB_PKEY, networkShort(ib.pkey()));
        MemorySegment.copy(ib.gid(), 0, sib, JAVA_BYTE, SockAddrLayouts.SIB_ADDR, GID_LENGTH);
        sib.set(JAVA_LONG.withOrder(ByteOrder.BIG_ENDIAN), SockAddrLayouts.SIB_SID, ib.serviceId());
        sib.set(JAVA_LONG, SockAddrLayouts.SIB_SID_MASK, ib.serviceId() == 0 ? 0 : -1L);
        return sib;
    }

    /**
     * A native {@code sockaddr} (as in {@code rdma_cm_id.route.addr}) as a Java address.
     *
     * @return the address, or {@code null} for an unknown family.
     */
    static SocketAddress fromNative(MemorySegment sockaddr) {
        MemorySegment address = sockaddr.reinterpret(SockAddrLayouts.SOCKADDR_STORAGE_SIZE);
        int family = Short.toUnsignedInt(address.get(JAVA_SHORT, SockAddrLayouts.SA_FAMILY));
        try {
            if (family == SockAddrLayouts.AF_INET) {
                byte[] ip = address.asSlice(SockAddrLayouts.SIN_ADDR, 4).toArray(JAVA_BYTE);
                return new InetSocketAddress(InetAddress.getByAddress(ip),
                    hostShort(address.get(JAVA_SHORT, SockAddrLayouts.SIN_PORT)));
            }
            if (family == SockAddrLayouts.AF_INET6) {
                byte[] ip = address.asSlice(SockAddrLayouts.SIN6_ADDR, GID_LENGTH).toArray(JAVA_BYTE);
                int scope = address.get(JAVA_INT, SockAddrLayouts.SIN6_SCOPE_ID);
                InetAddress inet = scope == 0 ? InetAddress.getByAddress(ip)
                    : Inet6Address.getByAddress(null, ip, scope);
                return new InetSocketAddress(inet, hostShort(address.get(JAVA_SHORT, SockAddrLayouts.SIN6_PORT)));
            }
        } catch (UnknownHostException e) {
            throw new IllegalStateException("a native address of family " + family + " cannot be read", e);
        }
        if (family == SockAddrLayouts.AF_IB) {
            byte[] gid = address.asSlice(SockAddrLayouts.SIB_ADDR, GID_LENGTH).toArray(JAVA_BYTE);
            return IbSocketAddress.of(gid, hostShort(address.get(JAVA_SHORT, SockAddrLayouts.SIB_PKEY)),
                address.get(JAVA_LONG.withOrder(ByteOrder.BIG_ENDIAN), SockAddrLayouts.SIB_SID));
        }
        return null;
    }

    /** The same address with another port (the one the CM chose for port 0). */
    static SocketAddress withPort(SocketAddress address, int port) {
        if (address instanceof InetSocketAddress inet) {
            return new InetSocketAddress(inet.getAddress(), port);
        }
        IbSocketAddress ib = (IbSocketAddress) address;
        return IbSocketAddress.of(ib.gid(), ib.pkey(), IbSocketAddress.serviceIdOf(port));
    }

    private static short networkShort(int value) {
        return Short.reverseBytes((short) value);
    }

    private static int hostShort(short value) {
        return Short.toUnsignedInt(Short.reverseBytes(value));
    }

    /** An {@link UnsupportedAddressTypeException} that says why. */
    static final class Unsupported extends UnsupportedAddressTypeException {
        private static final long serialVersionUID = 1L;

        private final String message;

        Unsupported(String message) {
            this.message = message;
        }

        @Override
        public String getMessage() {
            return message;
        }
    }
}
