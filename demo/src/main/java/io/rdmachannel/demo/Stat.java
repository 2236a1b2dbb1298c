package io.rdmachannel.demo;

import com.sun.tools.attach.AttachNotSupportedException;
import com.sun.tools.attach.VirtualMachine;
import com.sun.tools.attach.VirtualMachineDescriptor;
import io.rdmachannel.channel.ConnectionInfo;
import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.RdmaTransportMXBean;
import java.io.IOException;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import javax.management.JMX;
import javax.management.MBeanServerConnection;
import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import javax.management.remote.JMXConnector;
import javax.management.remote.JMXConnectorFactory;
import javax.management.remote.JMXServiceURL;

/**
 * {@code ./rdmachannel stat}: the live RDMA connections of the rdmachannel processes of this user on this host, as
 * {@code ss} lists sockets. It attaches to each local JVM that registered a transport's MBean
 * ({@link RdmaTransportMXBean#REGISTERED_PROPERTY}), reads its {@link RdmaTransportMXBean}s through the JVM's local
 * management agent (started on demand, as {@code jconsole} does) and prints one line per connection. JVMs started
 * with {@code -XX:+DisableAttachMechanism}, or whose transports were opened with {@code -Drdmachannel.jmx=false},
 * are not seen.
 */
public final class Stat {
    private static final String HEADER_FORMAT = "%-8s %-6s %-15s %-24s %-24s %12s %12s %8s %8s %6s%n";

    /**
     * One connection of one process.
     *
     * @param pid        the process.
     * @param connection the connection.
     */
    public record Row(long pid, ConnectionInfo connection) {
    }

    private Stat() {
    }

    /**
     * Print the table; {@code --help} explains it.
     *
     * @param args none, or {@code --help}.
     */
    public static void main(final String[] args) {
        if (args.length > 0) {
            System.out.println("usage: ./rdmachannel stat\n\nLists the live RDMA connections of the rdmachannel"
                + " processes of this user on this host:\nprocess, provider, state, local and remote address, bytes"
                + " each way, writes stalled for the\npeer's credits and for send resources, error completions.");
            System.exit(args[0].equals("--help") || args[0].equals("-h") ? 0 : 2);
        }
        final List<String> problems = new ArrayList<>();
        final List<Row> rows = collect(problems);
        print(rows, System.out);
        problems.forEach(System.err::println);
    }

    /**
     * The connections of every attachable rdmachannel JVM but this one.
     *
     * @param problems receives one line per JVM that could not be read.
     * @return the rows, by process and local address.
     */
    public static List<Row> collect(final List<String> problems) {
        final List<Row> rows = new ArrayList<>();
        final long self = ProcessHandle.current().pid();
        for (final VirtualMachineDescriptor descriptor : VirtualMachine.list()) {
            final long pid;
            try {
                pid = Long.parseLong(descriptor.id());
            } catch (final NumberFormatException ex) {
                continue;
            }
            if (pid != self) {
                try {
                    collect(descriptor, pid, rows);
                } catch (final IOException | AttachNotSupportedException | RuntimeException ex) {
                    problems.add("pid " + pid + ": " + ex);
                }
            }
        }
        rows.sort(Comparator.comparingLong(Row::pid).thenComparing(row -> String.valueOf(row.connection()
            .localAddress())));
        return rows;
    }

    private static void collect(final VirtualMachineDescriptor descriptor, final long pid, final List<Row> rows)
        throws IOException, AttachNotSupportedException {
        final VirtualMachine vm = VirtualMachine.attach(descriptor);
        try {
            if (!Boolean.parseBoolean(vm.getSystemProperties().getProperty(RdmaTransportMXBean.REGISTERED_PROPERTY))) {
                return;
            }
            final String address = vm.startLocalManagementAgent();
            try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
                final MBeanServerConnection server = connector.getMBeanServerConnection();
                for (final ObjectName name : server.queryNames(transports(), null)) {
                    for (final ConnectionInfo connection : JMX.newMXBeanProxy(server, name,
                        RdmaTransportMXBean.class).getConnections()) {
                        rows.add(new Row(pid, connection));
                    }
                }
            }
        } finally {
            vm.detach();
        }
    }

    private static ObjectName transports() {
        try {
            return new ObjectName(RdmaTransportMXBean.DOMAIN + ":type=Transport,*");
        } catch (final MalformedObjectNameException ex) {
            throw new IllegalStateException(ex);
        }
    }

    /**
     * Print the rows as a table, or say there are none.
     *
     * @param rows the connections.
     * @param out  where to.
     */
    public static void print(final List<Row> rows, final PrintStream out) {
        if (rows.isEmpty()) {
            out.println("no live rdmachannel connections in the processes of this user on this host");
            return;
        }
        out.printf(Locale.ROOT, HEADER_FORMAT, "PID", "PROV", "STATE", "LOCAL", "REMOTE", "SENT", "RECEIVED",
            "CR-STALL", "BUF-STALL", "ERRORS");
        for (final Row row : rows) {
            final ConnectionInfo connection = row.connection();
            final ConnectionStatistics statistics = connection.statistics();
            out.printf(Locale.ROOT, HEADER_FORMAT, row.pid(), connection.provider(), connection.state(),
                connection.localAddress(), connection.remoteAddress(), statistics.bytesSent(),
                statistics.bytesReceived(), statistics.creditStalls(), statistics.bufferStalls(),
                statistics.completionErrors());
        }
    }
}
