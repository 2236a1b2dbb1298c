package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.channel.internal.AddressPrefixes;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

/**
 * The host's declarative policy for connection requests, the same for every listener of the JVM: an allow list and a
 * deny list, read from {@value #ALLOW_PROP_NAME} and {@value #DENY_PROP_NAME}. A request matching a deny entry is
 * refused; otherwise, if the allow list is not empty, a request matching none of its entries is refused. It runs
 * before a listener's own filter, and like it before anything is allocated for the request; the requester reads
 * which entry refused it.
 *
 * <p>Each list is comma-separated entries {@code address[@ports]}:
 * <ul>
 *   <li>{@code address}: an IPv4 or IPv6 prefix in CIDR notation ({@code 10.0.0.0/8}, {@code 2001:db8::/32}; without
 *       a length the one address), a GID prefix ({@code gid:fe80::/64}) that matches a requester known by its GID
 *       ({@link IbSocketAddress}), or {@code *} for any requester;</li>
 *   <li>{@code ports}: the local port the request is for, {@code 18515} or a range {@code 5000-5999}; any when
 *       left out.</li>
 * </ul>
 * An IPv4 prefix also matches an IPv4-mapped IPv6 requester. For example {@code -Drdmachannel.policy.allow=
 * 192.0.2.0/24,*@18515} lets in the 192.0.2.0/24 network on every port and anyone on port 18515.
 *
 * <p>On the shm provider every requester is a process of this host, seen with an address of this host: one claiming
 * any other is refused before the lists.
 */
public final class HostPolicy {
    /** System property: the allow list. */
    public static final String ALLOW_PROP_NAME = "rdmachannel.policy.allow";
    /** System property: the deny list. */
    public static final String DENY_PROP_NAME = "rdmachannel.policy.deny";

    /** A policy that lets everything through. */
    public static final HostPolicy OPEN = new HostPolicy(List.of(), List.of());

    private final List<Entry> allow;
    private final List<Entry> deny;

    private HostPolicy(final List<Entry> allow, final List<Entry> deny) {
        this.allow = allow;
        this.deny = deny;
    }

    /**
     * The policy of the system properties.
     *
     * @return the policy, {@link #OPEN} if neither list is set.
     * @throws IllegalArgumentException naming the property and the entry that does not parse.
     */
    public static HostPolicy fromSystemProperties() {
        return fromProperties(System.getProperties());
    }

    /**
     * The policy of a set of properties.
     *
     * @param properties where {@value #ALLOW_PROP_NAME} and {@value #DENY_PROP_NAME} are read.
     * @return the policy.
     * @throws IllegalArgumentException naming the property and the entry that does not parse.
     */
    public static HostPolicy fromProperties(final Properties properties) {
        final List<Entry> allow = parse(ALLOW_PROP_NAME, properties.getProperty(ALLOW_PROP_NAME, ""));
        final List<Entry> deny = parse(DENY_PROP_NAME, properties.getProperty(DENY_PROP_NAME, ""));
        return allow.isEmpty() && deny.isEmpty() ? OPEN : new HostPolicy(allow, deny);
    }

    /**
     * Decide on a request.
     *
     * @param request the request.
     * @return {@code null} to let it through, or the rejection naming the list and entry.
     */
    public Rejection check(final ConnectionRequest request) {
        if (this == OPEN) {
            return null;
        }
        final int port = portOf(request.localAddress());
        for (final Entry entry : deny) {
            if (entry.matches(request.remoteAddress(), port)) {
                return new Rejection(RejectReason.POLICY, DENY_PROP_NAME + " " + entry.text);
            }
        }
        if (allow.isEmpty()) {
            return null;
        }
        for (final Entry entry : allow) {
            if (entry.matches(request.remoteAddress(), port)) {
                return null;
            }
        }
        return new Rejection(RejectReason.POLICY, "not in " + ALLOW_PROP_NAME);
    }

    @Override
    public String toString() {
        return "HostPolicy[allow=" + allow + ", deny=" + deny + "]";
    }

    private static int portOf(final SocketAddress address) {
        if (address instanceof InetSocketAddress inet) {
            return inet.getPort();
        }
        if (address instanceof IbSocketAddress ib && ib.hasPort()) {
            return ib.port();
        }
        return -1;
    }

    private static List<Entry> parse(final String property, final String list) {
        final List<Entry> entries = new ArrayList<>();
        for (final String item : list.split(",")) {
            final String text = item.strip();
            if (!text.isEmpty()) {
                try {
                    entries.add(Entry.parse(text));
                } catch (final IllegalArgumentException ex) {
                    throw new IllegalArgumentException(property + ": entry '" + text + "' is not address[@ports] ("
                        + "10.0.0.0/8, 2001:db8::/32, gid:fe80::/64 or *; ports 18515 or 5000-5999): "
                        + ex.getMessage(), ex);
                }
            }
        }
        return List.copyOf(entries);
    }

    /**
     * One entry: a prefix of IP addresses or of GIDs (or any requester), and a range of local ports.
     */
    private record Entry(String text, boolean gid, byte[] prefix, int bits, int firstPort, int lastPort) {

        static Entry parse(final String text) {
            final int at = text.indexOf('@');
            final String address = at < 0 ? text : text.substring(0, at);
            int first = 0;
            int last = 0xFFFF;
            if (at >= 0) {
                final String ports = text.substring(at + 1);
                final int dash = ports.indexOf('-');
                first = port(dash < 0 ? ports : ports.substring(0, dash));
                last = dash < 0 ? first : port(ports.substring(dash + 1));
                if (last < first) {
                    throw new IllegalArgumentException("the port range ends before it starts");
                }
            }
            if (address.equals("*")) {
                return new Entry(text, false, null, 0, first, last);
            }
            final boolean gid = address.startsWith("gid:");
            final String prefix = gid ? address.substring(4) : address;
            final int slash = prefix.indexOf('/');
            final String literal = slash < 0 ? prefix : prefix.substring(0, slash);
            if (gid && !literal.contains(":")) {
                throw new IllegalArgumentException("a GID is written as an IPv6 address");
            }
            final byte[] bytes;
            try {
                bytes = InetAddress.ofLiteral(literal).getAddress();
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException("'" + literal + "' is not an address literal", ex);
            }
            if (gid && bytes.length != 16) {
                throw new IllegalArgumentException("a GID has 128 bits");
            }
            final int bits;
            try {
                bits = slash < 0 ? bytes.length * 8 : Integer.parseInt(prefix.substring(slash + 1));
            } catch (final NumberFormatException ex) {
                throw new IllegalArgumentException("the prefix length is not a number", ex);
            }
            if (bits < 0 || bits > bytes.length * 8) {
                throw new IllegalArgumentException("a prefix length of " + bits + " bits");
            }
            return new Entry(text, gid, bytes, bits, first, last);
        }

        private static int port(final String text) {
            final int port;
            try {
                port = Integer.parseInt(text);
            } catch (final NumberFormatException ex) {
                throw new IllegalArgumentException("'" + text + "' is not a port", ex);
            }
            if (port < 0 || port > 0xFFFF) {
                throw new IllegalArgumentException("port " + port + " is out of range");
            }
            return port;
        }

        boolean matches(final SocketAddress remote, final int localPort) {
            if (localPort < firstPort || localPort > lastPort) {
                return false;
            }
            if (prefix == null) {
                return true;
            }
            final byte[] address;
            if (remote instanceof IbSocketAddress ib) {
                address = gid ? ib.gid() : null;
            } else if (remote instanceof InetSocketAddress inet && !gid && inet.getAddress() != null) {
                address = unmapped(inet.getAddress().getAddress(), prefix.length);
            } else {
                address = null;
            }
            return address != null && AddressPrefixes.matches(address, prefix, bits);
        }

        /** An IPv4-mapped IPv6 address as IPv4, when the entry is IPv4. */
        private static byte[] unmapped(final byte[] address, final int wanted) {
            if (wanted == 4 && address.length == 16) {
                for (int i = 0; i < 10; i++) {
                    if (address[i] != 0) {
                        return address;
                    }
                }
                if (address[10] == (byte) 0xFF && address[11] == (byte) 0xFF) {
                    return new byte[] {address[12], address[13], address[14], address[15]};
                }
            }
            return address;
        }

        @Override
        public String toString() {
            return text;
        }
    }
}
