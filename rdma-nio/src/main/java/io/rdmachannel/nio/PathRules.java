package io.rdmachannel.nio;

import io.rdmachannel.channel.internal.AddressPrefixes;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The drop-in's destination rules, in the spirit of the JDK's old {@code sdp.conf}: one rule per line, the first
 * rule that matches decides.
 *
 * <pre>
 *   # action    scope     address[/prefix]     [ports]
 *   rdma-only   connect   192.168.100.0/24     7000-7999
 *   tcp         connect   10.0.0.0/8
 *   rdma        bind      *                    8080
 *   rdma        connect   [fd00::]/8           *
 * </pre>
 *
 * Actions: {@code rdma} (RDMA, falling back to TCP when the peer cannot speak RDMA; a bound server listens for both),
 * {@code rdma-only} and {@code tcp}. Scopes: {@code connect} matches the remote address and port of an outgoing
 * connection, {@code bind} the local address and port a server channel binds. Addresses are literals (IPv6 may be
 * bracketed) with an optional prefix length, or {@code *} for any; ports are a number, a range {@code low-high}, or
 * {@code *} (the default). A {@code #} starts a comment; in a property, {@code ;} separates rules like a new line.
 *
 * <p>With no rules at all every connection is {@code rdma} (try RDMA, fall back to TCP). Once rules exist, what no
 * rule matches goes over TCP.
 */
final class PathRules {
    /** No rules: everything tries RDMA and falls back to TCP. */
    static final PathRules NONE = new PathRules(List.of());

    private final List<Rule> rules;

    private PathRules(final List<Rule> rules) {
        this.rules = List.copyOf(rules);
    }

    /**
     * Parse rules.
     *
     * @param source where the text came from, for error messages (a property or file name).
     * @param text the rules: lines, or rules separated by {@code ;}.
     * @return the rules.
     * @throws IllegalArgumentException naming the source, the rule number and what is wrong.
     */
    static PathRules parse(final String source, final String text) {
        final List<Rule> parsed = new ArrayList<>();
        final String[] lines = text.split("[\\n;]", -1);
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            final int comment = line.indexOf('#');
            if (comment >= 0) {
                line = line.substring(0, comment);
            }
            line = line.strip();
            if (!line.isEmpty()) {
                parsed.add(Rule.parse(source + " rule " + (i + 1), line));
            }
        }
        return new PathRules(parsed);
    }

    /**
     * Rules one after the other: the first list's first.
     */
    PathRules then(final PathRules more) {
        final List<Rule> all = new ArrayList<>(rules);
        all.addAll(more.rules);
        return new PathRules(all);
    }

    boolean isEmpty() {
        return rules.isEmpty();
    }

    int size() {
        return rules.size();
    }

    /**
     * The policy of a connection to {@code remote}.
     */
    Decision forConnect(final InetSocketAddress remote) {
        return decide(Scope.CONNECT, remote);
    }

    /**
     * The policy of a server channel bound to {@code local}.
     */
    Decision forBind(final InetSocketAddress local) {
        return decide(Scope.BIND, local);
    }

    private Decision decide(final Scope scope, final InetSocketAddress address) {
        if (rules.isEmpty()) {
            return new Decision(RdmaPathPolicy.RDMA_PREFERRED, "no rules: RDMA, else TCP");
        }
        for (final Rule rule : rules) {
            if (rule.matches(scope, address.getAddress(), address.getPort())) {
                return new Decision(rule.policy, "rule '" + rule.text + "'");
            }
        }
        return new Decision(RdmaPathPolicy.TCP_ONLY, "no rule matches");
    }

    @Override
    public String toString() {
        return rules.stream().map(rule -> rule.text).toList().toString();
    }

    /**
     * A policy and what chose it.
     *
     * @param policy the policy.
     * @param reason the rule that matched, or why none did.
     */
    record Decision(RdmaPathPolicy policy, String reason) {
    }

    private enum Scope {
        CONNECT,
        BIND
    }

    private record Rule(String text, RdmaPathPolicy policy, Scope scope, byte[] network, int prefix, int lowPort,
        int highPort) {

        static Rule parse(final String where, final String line) {
            final String[] fields = line.split("\\s+");
            if (fields.length < 3 || fields.length > 4) {
                throw bad(where, line, "expected 'action scope address[/prefix] [ports]'");
            }
            final RdmaPathPolicy policy = switch (fields[0].toLowerCase(Locale.ROOT)) {
                case "rdma" -> RdmaPathPolicy.RDMA_PREFERRED;
                case "rdma-only" -> RdmaPathPolicy.RDMA_ONLY;
                case "tcp" -> RdmaPathPolicy.TCP_ONLY;
                default -> throw bad(where, line, "unknown action '" + fields[0] + "' (rdma, rdma-only or tcp)");
            };
            final Scope scope = switch (fields[1].toLowerCase(Locale.ROOT)) {
                case "connect" -> Scope.CONNECT;
                case "bind" -> Scope.BIND;
                default -> throw bad(where, line, "unknown scope '" + fields[1] + "' (connect or bind)");
            };
            byte[] network = null;
            int prefix = 0;
            if (!"*".equals(fields[2])) {
                String address = fields[2];
                final int slash = address.indexOf('/');
                if (slash >= 0) {
                    prefix = number(where, line, address.substring(slash + 1), "prefix length");
                    address = address.substring(0, slash);
                }
                if (address.startsWith("[") && address.endsWith("]")) {
                    address = address.substring(1, address.length() - 1);
                }
                final InetAddress literal;
                try {
                    literal = InetAddress.ofLiteral(address);
                } catch (final IllegalArgumentException ex) {
                    throw bad(where, line, "'" + fields[2] + "' is not an IP address literal (nor *)");
                }
                network = literal.getAddress();
                if (slash < 0) {
                    prefix = network.length * 8;
                } else if (prefix > network.length * 8) {
                    throw bad(where, line, "prefix length " + prefix + " is longer than the address ("
                        + network.length * 8 + " bits)");
                }
            }
            int low = 0;
            int high = 65535;
            if (fields.length == 4 && !"*".equals(fields[3])) {
                final int dash = fields[3].indexOf('-', 1);
                low = number(where, line, dash < 0 ? fields[3] : fields[3].substring(0, dash), "port");
                high = dash < 0 ? low : number(where, line, fields[3].substring(dash + 1), "port");
                if (high > 65535 || low > high) {
                    throw bad(where, line, "bad port range '" + fields[3] + "' (0 to 65535, low-high)");
                }
            }
            return new Rule(String.join(" ", fields), policy, scope, network, prefix, low, high);
        }

        boolean matches(final Scope wanted, final InetAddress address, final int port) {
            if (wanted != scope || port < lowPort || port > highPort) {
                return false;
            }
            if (network == null) {
                return true;
            }
            return AddressPrefixes.matches(address.getAddress(), network, prefix);
        }

        private static int number(final String where, final String line, final String text, final String what) {
            try {
                final int value = Integer.parseInt(text);
                if (value < 0) {
                    throw new NumberFormatException();
                }
                return value;
            } catch (final NumberFormatException ex) {
                throw bad(where, line, "bad " + what + " '" + text + "'");
            }
        }

        private static IllegalArgumentException bad(final String where, final String line, final String problem) {
            return new IllegalArgumentException(where + " '" + line + "': " + problem);
        }
    }
}
