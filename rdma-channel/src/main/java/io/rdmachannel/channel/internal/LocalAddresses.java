package io.rdmachannel.channel.internal;

import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.util.Enumeration;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Whether an IP address belongs to this host: a loopback address, the wildcard, or an address of one of its network
 * interfaces. The interfaces are listed once and listed again at most once a second when an address is not found
 * (an interface may have come up since), so a connect to a remote host does not list them every time.
 */
public final class LocalAddresses {
    private static final long RELIST_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static volatile Snapshot snapshot;

    private LocalAddresses() {
    }

    /**
     * Whether the address is one of this host's.
     *
     * @param address the address.
     * @return true for a loopback or wildcard address and for an address of a local interface.
     */
    public static boolean isLocal(final InetAddress address) {
        if (address.isLoopbackAddress() || address.isAnyLocalAddress()) {
            return true;
        }
        Snapshot current = snapshot;
        if (current != null && current.addresses.contains(address)) {
            return true;
        }
        final long now = System.nanoTime();
        if (current == null || now - current.listedAt >= RELIST_NANOS) {
            current = new Snapshot(list(), now);
            snapshot = current;
        }
        return current.addresses.contains(address);
    }

    private static Set<InetAddress> list() {
        final Set<InetAddress> addresses = new HashSet<>();
        try {
            final Enumeration<NetworkInterface> interfaces = NetworkInterface.getNetworkInterfaces();
            while (interfaces != null && interfaces.hasMoreElements()) {
                final Enumeration<InetAddress> own = interfaces.nextElement().getInetAddresses();
                while (own.hasMoreElements()) {
                    addresses.add(own.nextElement());
                }
            }
        } catch (final SocketException ex) {
            // no interface list: only the loopback and the wildcard count as local
        }
        return Set.copyOf(addresses);
    }

    private record Snapshot(Set<InetAddress> addresses, long listedAt) {
    }
}
