package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class PathRulesTest {
    private static final PathRules RULES = PathRules.parse("test", """
        # storage network over RDMA only, on its ports
        rdma-only connect 192.168.100.0/24 7000-7999
        tcp       connect 10.0.0.0/8
        rdma      connect [fd00::]/8 *   # bracketed IPv6
        rdma      connect 192.168.100.7 8080
        rdma      bind    *    9000
        tcp       bind    127.0.0.1/32
        """);

    private static InetSocketAddress address(final String host, final int port) throws UnknownHostException {
        return new InetSocketAddress(InetAddress.getByName(host), port);
    }

    @ParameterizedTest
    @CsvSource({
        "192.168.100.7, 7000, RDMA_ONLY, rule 'rdma-only connect 192.168.100.0/24 7000-7999'",
        "192.168.100.255, 7999, RDMA_ONLY, rule 'rdma-only connect 192.168.100.0/24 7000-7999'",
        "192.168.100.7, 8080, RDMA_PREFERRED, rule 'rdma connect 192.168.100.7 8080'",
        "192.168.101.7, 7000, TCP_ONLY, no rule matches",
        "10.1.2.3, 1, TCP_ONLY, rule 'tcp connect 10.0.0.0/8'",
        "fd12::1, 443, RDMA_PREFERRED, rule 'rdma connect [fd00::]/8 *'",
        "fe80::1, 443, TCP_ONLY, no rule matches",
        "192.168.100.7, 6999, TCP_ONLY, no rule matches",
    })
    void shouldDecideConnectsByTheFirstMatchingRule(final String host, final int port, final RdmaPathPolicy policy,
        final String reason) throws UnknownHostException {
        assertEquals(new PathRules.Decision(policy, reason), RULES.forConnect(address(host, port)));
    }

    @Test
    void shouldDecideBindsByTheirOwnRules() throws UnknownHostException {
        assertEquals(RdmaPathPolicy.RDMA_PREFERRED, RULES.forBind(address("0.0.0.0", 9000)).policy());
        assertEquals(RdmaPathPolicy.TCP_ONLY, RULES.forBind(address("127.0.0.1", 5000)).policy());
        assertEquals("no rule matches", RULES.forBind(address("192.168.100.7", 7000)).reason(),
            "connect rules do not apply to binds");
    }

    @Test
    void shouldTryRdmaEverywhereWithoutRules() throws UnknownHostException {
        assertTrue(PathRules.parse("empty", "  # nothing but a comment\n\n;").isEmpty());
        assertEquals(new PathRules.Decision(RdmaPathPolicy.RDMA_PREFERRED, "no rules: RDMA, else TCP"),
            PathRules.NONE.forConnect(address("203.0.113.1", 80)));
        assertEquals(RdmaPathPolicy.RDMA_PREFERRED, PathRules.NONE.forBind(address("0.0.0.0", 0)).policy());
    }

    @Test
    void shouldMatchPrefixesBitByBit() throws UnknownHostException {
        final PathRules rules = PathRules.parse("prop", "rdma connect 172.16.0.0/12; rdma connect 2001:db8::/33");
        assertEquals(RdmaPathPolicy.RDMA_PREFERRED, rules.forConnect(address("172.31.255.255", 1)).policy());
        assertEquals(RdmaPathPolicy.TCP_ONLY, rules.forConnect(address("172.32.0.0", 1)).policy());
        assertEquals(RdmaPathPolicy.RDMA_PREFERRED, rules.forConnect(address("2001:db8:7fff::1", 1)).policy());
        assertEquals(RdmaPathPolicy.TCP_ONLY, rules.forConnect(address("2001:db8:8000::1", 1)).policy());
        assertEquals(RdmaPathPolicy.RDMA_PREFERRED, rules.forConnect(address("::ffff:172.16.0.1", 1)).policy(),
            "an IPv4-mapped address is the IPv4 address");
        assertEquals(2, rules.size());
    }

    @Test
    void shouldKeepTheInlineRulesBeforeTheFilesRules() throws UnknownHostException {
        final PathRules rules = PathRules.parse("inline", "tcp connect * 80").then(PathRules.parse("file",
            "rdma-only connect * *"));
        assertEquals(RdmaPathPolicy.TCP_ONLY, rules.forConnect(address("192.0.2.1", 80)).policy());
        assertEquals(RdmaPathPolicy.RDMA_ONLY, rules.forConnect(address("192.0.2.1", 81)).policy());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
        "rdma connect|rdmachannel.rules rule 1 'rdma connect': expected 'action scope address[/prefix] [ports]'",
        "rdma connect * * extra|rdmachannel.rules rule 1 'rdma connect * * extra': expected 'action scope "
            + "address[/prefix] [ports]'",
        "rdmaa connect * *|rdmachannel.rules rule 1 'rdmaa connect * *': unknown action 'rdmaa' (rdma, rdma-only or "
            + "tcp)",
        "rdma accept * *|rdmachannel.rules rule 1 'rdma accept * *': unknown scope 'accept' (connect or bind)",
        "rdma connect example.com *|rdmachannel.rules rule 1 'rdma connect example.com *': 'example.com' is not an IP "
            + "address literal (nor *)",
        "rdma connect 10.0.0.0/33|rdmachannel.rules rule 1 'rdma connect 10.0.0.0/33': prefix length 33 is longer "
            + "than the address (32 bits)",
        "rdma connect 10.0.0.0/x|rdmachannel.rules rule 1 'rdma connect 10.0.0.0/x': bad prefix length 'x'",
        "rdma connect * 70000|rdmachannel.rules rule 1 'rdma connect * 70000': bad port range '70000' (0 to 65535, "
            + "low-high)",
        "rdma connect * 9-8|rdmachannel.rules rule 1 'rdma connect * 9-8': bad port range '9-8' (0 to 65535, "
            + "low-high)",
        "rdma connect * -1|rdmachannel.rules rule 1 'rdma connect * -1': bad port '-1'",
    })
    void shouldRefuseBadRulesNamingWhereAndWhat(final String rule, final String message) {
        assertEquals(message, assertThrows(IllegalArgumentException.class,
            () -> PathRules.parse("rdmachannel.rules", rule)).getMessage());
    }

    @Test
    void shouldNumberRulesByLine() {
        assertEquals("rules.conf rule 3 'tcp bind * x': bad port 'x'", assertThrows(IllegalArgumentException.class,
            () -> PathRules.parse("rules.conf", "# header\nrdma connect * *\ntcp bind * x\n")).getMessage());
    }
}
