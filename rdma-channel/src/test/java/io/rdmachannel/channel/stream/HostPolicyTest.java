package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/**
 * The allow and deny lists: entries, what each matches, deny before allow, and the message of a bad entry.
 */
class HostPolicyTest {

    private static HostPolicy policy(final String allow, final String deny) {
        final Properties properties = new Properties();
        if (allow != null) {
            properties.setProperty(HostPolicy.ALLOW_PROP_NAME, allow);
        }
        if (deny != null) {
            properties.setProperty(HostPolicy.DENY_PROP_NAME, deny);
        }
        return HostPolicy.fromProperties(properties);
    }

    private static Rejection check(final HostPolicy policy, final SocketAddress remote, final int localPort) {
        return policy.check(new ConnectionRequest(remote, new InetSocketAddress(InetAddress.getLoopbackAddress(),
            localPort), "shm", ByteBuffer.allocate(0)));
    }

    private static SocketAddress ip(final String literal) {
        return new InetSocketAddress(InetAddress.ofLiteral(literal), 40000);
    }

    @Test
    void shouldLetEverythingThroughWithoutLists() {
        assertSame(HostPolicy.OPEN, policy(null, null));
        assertSame(HostPolicy.OPEN, policy(" , ", ""));
        assertNull(check(HostPolicy.OPEN, ip("10.1.2.3"), 80));
    }

    @Test
    void shouldDenyByPrefixAndSayWhichEntry() {
        final HostPolicy policy = policy(null, "10.0.0.0/8, 2001:db8::/32");
        assertEquals(new Rejection(RejectReason.POLICY, "rdmachannel.policy.deny 10.0.0.0/8"),
            check(policy, ip("10.200.0.1"), 7));
        assertEquals(new Rejection(RejectReason.POLICY, "rdmachannel.policy.deny 2001:db8::/32"),
            check(policy, ip("2001:db8:1::5"), 7));
        assertNull(check(policy, ip("11.0.0.1"), 7));
        assertNull(check(policy, ip("2001:db9::1"), 7));
        // an IPv4-mapped IPv6 requester is the IPv4 address
        assertEquals(RejectReason.POLICY, check(policy, ip("::ffff:10.0.0.1"), 7).reason());
    }

    @Test
    void shouldMatchPrefixLengthsThatAreNotWholeBytes() {
        final HostPolicy policy = policy(null, "192.0.2.128/25");
        assertNull(check(policy, ip("192.0.2.127"), 1));
        assertEquals(RejectReason.POLICY, check(policy, ip("192.0.2.128"), 1).reason());
        assertNull(check(policy(null, "192.0.2.1"), ip("192.0.2.2"), 1));
        assertEquals(RejectReason.POLICY, check(policy(null, "0.0.0.0/0"), ip("8.8.8.8"), 1).reason());
    }

    @Test
    void shouldDenyByLocalPortAndRange() {
        final HostPolicy policy = policy(null, "*@23,10.0.0.0/8@5000-5999");
        assertEquals(new Rejection(RejectReason.POLICY, "rdmachannel.policy.deny *@23"),
            check(policy, ip("192.0.2.1"), 23));
        assertNull(check(policy, ip("192.0.2.1"), 24));
        assertEquals(RejectReason.POLICY, check(policy, ip("10.0.0.1"), 5999).reason());
        assertNull(check(policy, ip("10.0.0.1"), 6000));
    }

    @Test
    void shouldAllowOnlyWhatTheAllowListNamesAndDenyFirst() {
        final HostPolicy policy = policy("192.0.2.0/24,*@18515", "192.0.2.66");
        assertNull(check(policy, ip("192.0.2.1"), 9));
        assertNull(check(policy, ip("203.0.113.1"), 18515));
        assertEquals(new Rejection(RejectReason.POLICY, "not in rdmachannel.policy.allow"),
            check(policy, ip("203.0.113.1"), 9));
        assertEquals(new Rejection(RejectReason.POLICY, "rdmachannel.policy.deny 192.0.2.66"),
            check(policy, ip("192.0.2.66"), 18515));
    }

    @Test
    void shouldMatchGidPrefixesOnlyAgainstGids() {
        final HostPolicy policy = policy(null, "gid:fe80::/64");
        final byte[] linkLocal = InetAddress.ofLiteral("fe80::1:2").getAddress();
        final byte[] global = InetAddress.ofLiteral("2001:db8::1").getAddress();
        assertEquals(new Rejection(RejectReason.POLICY, "rdmachannel.policy.deny gid:fe80::/64"),
            check(policy, IbSocketAddress.of(linkLocal, 7), 7));
        assertNull(check(policy, IbSocketAddress.of(global, 7), 7));
        // an IP requester is not a GID, even one that looks the same
        assertNull(check(policy, ip("fe80::1:2"), 7));
        assertNull(check(policy(null, "fe80::/64"), IbSocketAddress.of(linkLocal, 7), 7));
    }

    @Test
    void shouldNameTheListAndTheEntryThatDoesNotParse() {
        assertEquals("rdmachannel.policy.deny: entry '10.0.0.0/33' is not address[@ports] (10.0.0.0/8, "
            + "2001:db8::/32, gid:fe80::/64 or *; ports 18515 or 5000-5999): a prefix length of 33 bits",
            assertThrows(IllegalArgumentException.class, () -> policy(null, "10.0.0.0/33")).getMessage());
        for (final String bad : new String[] {"host.example", "10.0.0.0/x", "*@70000", "*@9-8", "*@", "gid:10.0.0.1",
            "10.0.0.1@port"}) {
            assertThrows(IllegalArgumentException.class, () -> policy(bad, null), bad);
        }
    }
}
