package io.rdmachannel.demo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.ConnectionInfo;
import io.rdmachannel.channel.DeviceInfo;
import io.rdmachannel.channel.spi.DeviceEvents;
import io.rdmachannel.channel.stream.StreamConfiguration;
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code ./rdmachannel stat} (and {@code --devices}) against another JVM holding one RDMA connection to itself (two
 * endpoints).
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StatTest {

    @Test
    void shouldListTheConnectionsOfAnotherProcess() throws Exception {
        final List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        // this JVM's flags (add-exports, native access) are the ones the peer needs
        command.addAll(ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
            .filter(flag -> flag.startsWith("--")).toList());
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), StatPeer.class.getName()));
        final Process peer = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            final BufferedReader lines = new BufferedReader(new InputStreamReader(peer.getInputStream(),
                StandardCharsets.UTF_8));
            assertEquals(StatPeer.READY, lines.readLine(), "the peer did not get ready");

            final List<Stat.Row> ours = awaitRows(peer.pid());
            assertEquals(2, ours.size(), ours::toString);
            final ConnectionInfo client = ours.stream().filter(row -> row.connection().statistics().bytesSent() > 0)
                .findFirst().orElseThrow().connection();
            final ConnectionInfo server = ours.stream().filter(row -> row.connection() != client).findFirst()
                .orElseThrow().connection();
            assertEquals(StatPeer.BYTES, client.statistics().bytesSent(), client::toString);
            assertEquals(StatPeer.BYTES, server.statistics().bytesReceived(), server::toString);
            assertEquals("ESTABLISHED", client.state());
            assertEquals("RC", client.mode());
            assertEquals(client.localAddress(), server.remoteAddress());
            assertEquals(client.remoteAddress(), server.localAddress());

            final ByteArrayOutputStream table = new ByteArrayOutputStream();
            Stat.print(ours, new PrintStream(table, true, StandardCharsets.UTF_8));
            final String text = table.toString(StandardCharsets.UTF_8);
            assertTrue(text.startsWith("PID"), text);
            assertTrue(text.contains(peer.pid() + " "), text);
            assertTrue(text.contains(client.localAddress()), text);

            final List<String> problems = new ArrayList<>();
            final List<Stat.DeviceRow> devices = Stat.collectDevices(problems).stream()
                .filter(row -> row.pid() == peer.pid()).toList();
            assertEquals(1, devices.size(), () -> devices + " " + problems);
            final DeviceInfo device = devices.getFirst().device();
            assertEquals(2, device.connections(), device::toString);
            assertEquals(2, device.resources().queuePairs(), device::toString);
            // each connection registers its rings: at least the default receive buffer's bytes per connection
            assertTrue(device.resources().memoryRegionBytes() >= 2L * StreamConfiguration.defaults()
                .receiveBufferLength(), device::toString);
            // shm devices report no async events; the record crossed JMX whole
            assertEquals(DeviceEvents.NONE, device.events(), device::toString);
            final ByteArrayOutputStream deviceTable = new ByteArrayOutputStream();
            Stat.printDevices(devices, new PrintStream(deviceTable, true, StandardCharsets.UTF_8));
            final String deviceText = deviceTable.toString(StandardCharsets.UTF_8);
            assertTrue(deviceText.startsWith("PID"), deviceText);
            assertTrue(deviceText.contains(peer.pid() + " ") && deviceText.contains(device.name()), deviceText);
        } finally {
            peer.getOutputStream().close();
            if (!peer.waitFor(30, TimeUnit.SECONDS)) {
                peer.destroyForcibly();
            }
        }
    }

    /** The rows of one process, once its transport's MBean is registered (in the background). */
    private static List<Stat.Row> awaitRows(final long pid) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        List<Stat.Row> rows;
        final List<String> problems = new ArrayList<>();
        do {
            problems.clear();
            rows = Stat.collect(problems).stream().filter(row -> row.pid() == pid).toList();
            if (rows.size() >= 2) {
                return rows;
            }
            Thread.sleep(100);
        } while (System.nanoTime() - deadline < 0);
        throw new AssertionError("pid " + pid + " not listed; problems: " + problems);
    }
}
