package io.rdmachannel.channel.cm.oob;

import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;

import java.io.IOException;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.NoRouteToHostException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The devices the {@code oob} connection manager connects through, opened on first use and owned by it: for a side
 * channel's local address, the device and GID that carry it.
 *
 * <p>On RoCE a GID is an IP address of the device's interface (IPv4 as {@code ::ffff:a.b.c.d}, IPv6 as itself), so
 * the device whose GID table holds the side channel's local address is the one on the same interface, and that GID
 * is the one to connect with, and a side channel over an address that no device has (the loopback, a management
 * network) has no RDMA path. A provider whose GIDs are not IP addresses (the shm provider, InfiniBand) has no such
 * match: its first device and first GID are used, which on shm is the host's only fabric.
 */
final class OobDevices implements AutoCloseable {
    /** The GID table entries looked at per device (port 1); RoCE devices keep a few per address. */
    static final int MAX_GID_INDEX = 32;
    private static final int PORT = 1;
    private static final byte[] IPV4_MAPPED_PREFIX = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xff, (byte) 0xff};

    private final RdmaProvider provider;
    private final Map<String, RdmaDevice> open = new LinkedHashMap<>();
    private boolean closed;
    private Boolean ipAddressed;

    OobDevices(final RdmaProvider provider) {
        this.provider = provider;
    }

    /** A device, the port and the GID a connection uses. */
    record Local(RdmaDevice device, int port, byte[] gid) {
    }

    /**
     * The device and GID for a side channel's local address: the device whose GID is that address, else the first
     * device and its first GID.
     *
     * @throws IOException if no device can be opened.
     */
    synchronized Local forAddress(final InetAddress address) throws IOException {
        final List<RdmaDevice> devices = openAll();
        final Local match = find(devices, gidOf(address));
        if (match != null) {
            return match;
        }
        if (ipAddressed(devices)) {
            throw new NoRouteToHostException("no RDMA device has the address " + address.getHostAddress()
                + " (the oob side channel's): use an address of an RDMA device's interface");
        }
        final RdmaDevice first = devices.getFirst();
        return new Local(first, PORT, first.queryGid(PORT, 0));
    }

    /**
     * Whether a device of the provider has this GID (false when none can be opened).
     */
    synchronized boolean hasGid(final byte[] gid) {
        try {
            return find(openAll(), gid) != null;
        } catch (final IOException ex) {
            return false;
        }
    }

    /**
     * Whether the devices' GIDs are IP addresses (RoCE): some GID is an address of one of this host's interfaces.
     * Then a side channel over an address no device has (the loopback, another network) has no RDMA path; elsewhere
     * (InfiniBand, shm) GIDs are not IP addresses and the first device's first GID is the path.
     */
    private boolean ipAddressed(final List<RdmaDevice> devices) throws IOException {
        if (ipAddressed == null) {
            boolean found = false;
            for (final NetworkInterface nif : Collections.list(NetworkInterface.getNetworkInterfaces())) {
                for (final InetAddress ip : Collections.list(nif.getInetAddresses())) {
                    found |= !ip.isLoopbackAddress() && find(devices, gidOf(ip)) != null;
                }
            }
            ipAddressed = found;
        }
        return ipAddressed;
    }

    private List<RdmaDevice> openAll() throws IOException {
        if (closed) {
            throw new IOException("the oob connection manager is closed");
        }
        final List<String> names = provider.deviceNames();
        if (names.isEmpty()) {
            throw new IOException("the " + provider.name() + " provider has no device");
        }
        final List<RdmaDevice> devices = new ArrayList<>(names.size());
        for (final String name : names) {
            devices.add(open(name));
        }
        return devices;
    }

    private static Local find(final List<RdmaDevice> devices, final byte[] wanted) {
        for (final RdmaDevice device : devices) {
            for (int index = 0; index < MAX_GID_INDEX; index++) {
                final byte[] gid;
                try {
                    gid = device.queryGid(PORT, index);
                } catch (final IOException | RuntimeException ex) {
                    break;
                }
                if (Arrays.equals(gid, wanted)) {
                    return new Local(device, PORT, gid);
                }
            }
        }
        return null;
    }

    private RdmaDevice open(final String name) throws IOException {
        RdmaDevice device = open.get(name);
        if (device == null) {
            device = provider.openDevice(name);
            open.put(name, device);
        }
        return device;
    }

    /**
     * The GID a RoCE device gives an IP address: IPv4 mapped into IPv6, IPv6 as it is.
     */
    static byte[] gidOf(final InetAddress address) {
        final byte[] bytes = address.getAddress();
        if (address instanceof Inet4Address) {
            final byte[] gid = Arrays.copyOf(IPV4_MAPPED_PREFIX, 16);
            System.arraycopy(bytes, 0, gid, 12, 4);
            return gid;
        }
        return bytes;
    }

    /**
     * Close the devices opened, last first.
     */
    @Override
    public synchronized void close() {
        closed = true;
        final List<RdmaDevice> devices = new ArrayList<>(open.values());
        open.clear();
        for (final RdmaDevice device : devices.reversed()) {
            device.close();
        }
    }
}
