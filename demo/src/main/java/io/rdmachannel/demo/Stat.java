package io.rdmachannel.demo;

import com.sun.tools.attach.AttachNotSupportedException;
import com.sun.tools.attach.VirtualMachine;
import com.sun.tools.attach.VirtualMachineDescriptor;
import io.rdmachannel.channel.ConnectionInfo;
import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.DeviceInfo;
import io.rdmachannel.channel.RdmaTransportMXBean;
import io.rdmachannel.channel.spi.DeviceEvents;
import io.rdmachannel.channel.spi.DeviceResources;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.function.BiConsumer;
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
 * management agent (started on demand, as {@code jconsole} does) and prints one line per connection, or with
 * {@code --devices} one per device with its connections and open verbs objects. JVMs started
 * with {@code -XX:+DisableAttachMechanism}, or whose transports were opened with {@code -Drdmachannel.jmx=false},
 * are not seen.
 */
public final class Stat {
    private static final String HEADER_FORMAT = "%-8s %-6s %-4s %-15s %-24s %-24s %12s %12s %8s %8s %6s%n";
    private static final String DEVICE_FORMAT =
        "%-8s %-6s %-16s %6s %7s %4s %4s %4s %6s %4s %6s %9s %-7s %6s %6s %6s%n";

    /**
     * One connection of one process.
     *
     * @param pid        the process.
     * @param connection the connection.
     */
    public record Row(long pid, ConnectionInfo connection) {
    }

    /**
     * One device of one process's transport.
     *
     * @param pid    the process.
     * @param device the device.
     */
    public record DeviceRow(long pid, DeviceInfo device) {
    }

    private Stat() {
    }

    /**
     * Print the table; {@code --help} explains it.
     *
     * @param args none, {@code --devices}, or {@code --help}.
     */
    public static void main(final String[] args) {
        final boolean devices = args.length == 1 && args[0].equals("--devices");
        if (args.length > 0 && !devices) {
            System.out.println("usage: ./rdmachannel stat [--devices]\n\nLists the live RDMA connections of the"
                + " rdmachannel processes of this user on this host:\nprocess, provider, state, local and remote"
                + " address, bytes each way, writes stalled for the\npeer's credits and for send resources, error"
                + " completions.\n\n--devices lists their RDMA devices instead: connections, registered buffers"
                + " and the verbs\nobjects open on each (protection domains, completion queues, readiness sources,"
                + " queue pairs,\nshared receive queues, memory regions and their KiB), and what each device reported"
                + " on its\nown: the state of port 1, how often it went down, error events, and the queue pairs"
                + " those failed.");
            System.exit(args[0].equals("--help") || args[0].equals("-h") ? 0 : 2);
        }
        final List<String> problems = new ArrayList<>();
        if (devices) {
            printDevices(collectDevices(problems), System.out);
        } else {
            print(collect(problems), System.out);
        }
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
        forEachTransport(problems, (pid, transport) -> {
            for (final ConnectionInfo connection : transport.getConnections()) {
                rows.add(new Row(pid, connection));
            }
        });
        rows.sort(Comparator.comparingLong(Row::pid).thenComparing(row -> String.valueOf(row.connection()
            .localAddress())));
        return rows;
    }

    /**
     * The devices of every attachable rdmachannel JVM but this one.
     *
     * @param problems receives one line per JVM that could not be read.
     * @return the rows, by process and device.
     */
    public static List<DeviceRow> collectDevices(final List<String> problems) {
        final List<DeviceRow> rows = new ArrayList<>();
        forEachTransport(problems, (pid, transport) -> {
            for (final DeviceInfo device : transport.getDevices()) {
                rows.add(new DeviceRow(pid, device));
            }
        });
        rows.sort(Comparator.comparingLong(DeviceRow::pid).thenComparing(row -> row.device().name()));
        return rows;
    }

    /**
     * The devices of one rdmachannel JVM, this one or another of this user's: read through this JVM's own
     * management server, or by attaching to that one process only.
     *
     * @param pid      the process.
     * @param problems receives a line if the process could not be read.
     * @return its devices; none if it has no stream transport (yet) or could not be read.
     */
    public static List<DeviceInfo> devicesOf(final long pid, final List<String> problems) {
        final List<DeviceInfo> devices = new ArrayList<>();
        final BiConsumer<Long, RdmaTransportMXBean> add = (ignored, transport) ->
            devices.addAll(List.of(transport.getDevices()));
        try {
            if (pid == ProcessHandle.current().pid()) {
                forEachTransport(ManagementFactory.getPlatformMBeanServer(), pid, add);
            } else {
                forEachTransport(VirtualMachine.attach(Long.toString(pid)), pid, add);
            }
        } catch (final IOException | AttachNotSupportedException | RuntimeException ex) {
            problems.add("pid " + pid + ": " + ex);
        }
        return devices;
    }

    private static void forEachTransport(final List<String> problems,
        final BiConsumer<Long, RdmaTransportMXBean> action) {
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
                    forEachTransport(VirtualMachine.attach(descriptor), pid, action);
                } catch (final IOException | AttachNotSupportedException | RuntimeException ex) {
                    problems.add("pid " + pid + ": " + ex);
                }
            }
        }
    }

    /**
     * The transports of an attached process, through the management agent it is asked to start; detaches.
     */
    private static void forEachTransport(final VirtualMachine vm, final long pid,
        final BiConsumer<Long, RdmaTransportMXBean> action) throws IOException {
        try {
            if (!Boolean.parseBoolean(vm.getSystemProperties().getProperty(RdmaTransportMXBean.REGISTERED_PROPERTY))) {
                return;
            }
            final String address = vm.startLocalManagementAgent();
            try (JMXConnector connector = JMXConnectorFactory.connect(new JMXServiceURL(address))) {
                forEachTransport(connector.getMBeanServerConnection(), pid, action);
            }
        } finally {
            vm.detach();
        }
    }

    private static void forEachTransport(final MBeanServerConnection server, final long pid,
        final BiConsumer<Long, RdmaTransportMXBean> action) throws IOException {
        for (final ObjectName name : server.queryNames(transports(), null)) {
            action.accept(pid, JMX.newMXBeanProxy(server, name, RdmaTransportMXBean.class));
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
        out.printf(Locale.ROOT, HEADER_FORMAT, "PID", "PROV", "MODE", "STATE", "LOCAL", "REMOTE", "SENT", "RECEIVED",
            "CR-STALL", "BUF-STALL", "ERRORS");
        for (final Row row : rows) {
            final ConnectionInfo connection = row.connection();
            final ConnectionStatistics statistics = connection.statistics();
            out.printf(Locale.ROOT, HEADER_FORMAT, row.pid(), connection.provider(), connection.mode(),
                connection.state(), connection.localAddress(), connection.remoteAddress(), statistics.bytesSent(),
                statistics.bytesReceived(), statistics.creditStalls(), statistics.bufferStalls(),
                statistics.completionErrors());
        }
    }

    /**
     * Print the device rows as a table, or say there are none.
     *
     * @param rows the devices.
     * @param out  where to.
     */
    public static void printDevices(final List<DeviceRow> rows, final PrintStream out) {
        if (rows.isEmpty()) {
            out.println("no RDMA devices in use by the processes of this user on this host");
            return;
        }
        out.printf(Locale.ROOT, DEVICE_FORMAT, "PID", "PROV", "DEVICE", "CONNS", "ZC-REGS", "PD", "CQ", "RS", "QP",
            "SRQ", "MR", "MR-KIB", "PORT", "P-DOWN", "ERRORS", "FAILED");
        for (final DeviceRow row : rows) {
            final DeviceInfo device = row.device();
            final DeviceResources resources = device.resources();
            final DeviceEvents events = device.events();
            out.printf(Locale.ROOT, DEVICE_FORMAT, row.pid(), device.provider(), device.name(), device.connections(),
                device.zeroCopyRegistrations(), resources.protectionDomains(), resources.completionQueues(),
                resources.readinessSources(), resources.queuePairs(), resources.sharedReceiveQueues(),
                resources.memoryRegions(), resources.memoryRegionBytes() / 1024, events.portState(), events.portDown(),
                events.errors(), events.queuePairsFailed());
        }
    }
}
