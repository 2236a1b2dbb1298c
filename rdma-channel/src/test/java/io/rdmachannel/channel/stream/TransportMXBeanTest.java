package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import io.rdmachannel.channel.ConnectionInfo;
import io.rdmachannel.channel.DeviceInfo;
import io.rdmachannel.channel.RdmaTransportMXBean;
import io.rdmachannel.channel.spi.RdmaProviders;
import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import javax.management.openmbean.CompositeData;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A transport's MBean on the platform MBean server: its live connections with their counters, its devices with their
 * connections and open verbs objects, the lifecycle counts, and its removal when the transport closes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TransportMXBeanTest {

    @Test
    void shouldListTheLiveConnectionsOverJmxUntilTheTransportCloses() throws Exception {
        final RsocketTransport transport = (RsocketTransport) StreamTransports.open(RdmaProviders.byName("shm"));
        final MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        final ObjectName name;
        DeviceInfo device;
        try {
            name = awaitRegistered(transport);
            assertEquals(RdmaTransportMXBean.DOMAIN, name.getDomain());
            assertEquals("Transport", name.getKeyProperty("type"));
            final RdmaTransportMXBean view = JMX.newMXBeanProxy(server, name, RdmaTransportMXBean.class);
            assertEquals("shm", view.getProvider());
            assertEquals(0, view.getConnectionCount());
            final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
            final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
            try (StreamListener listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(),
                0), 4, new StreamOptions(), serverWaker);
                StreamConnection client = BlockingStream.connect(transport.connect(listener.localAddress(), null,
                    new StreamOptions(), clientWaker), clientWaker);
                StreamConnection accepted = BlockingStream.accept(listener, serverWaker)) {
                BlockingStream.writeFully(client, ByteBuffer.allocate(4321), clientWaker);
                final ByteBuffer in = ByteBuffer.allocate(4321);
                while (in.hasRemaining()) {
                    assertTrue(BlockingStream.read(accepted, in, serverWaker) > 0, accepted::describe);
                }
                client.shutdownOutput();

                assertEquals(2, view.getConnectionCount());
                assertEquals(2, view.getConnectionsEstablished());
                final ConnectionInfo[] connections = view.getConnections();
                final ConnectionInfo ours = Arrays.stream(connections)
                    .filter(c -> c.localAddress().equals(StreamEvents.text(client.localAddress())))
                    .findFirst().orElseThrow();
                assertEquals("shm", ours.provider());
                assertEquals("RC", ours.mode());
                assertEquals("OUTPUT_SHUTDOWN", ours.state(), ours::toString);
                assertEquals(StreamEvents.text(listener.localAddress()), ours.remoteAddress());
                assertEquals(4321, ours.statistics().bytesSent(), ours::toString);
                assertNull(ours.error());
                // what a generic JMX client sees: open types
                final CompositeData[] raw = (CompositeData[]) server.getAttribute(name, "Connections");
                assertEquals(2, raw.length);
                final long received = Arrays.stream(raw)
                    .mapToLong(c -> (Long) ((CompositeData) c.get("statistics")).get("bytesReceived")).sum();
                assertEquals(4321, received);

                final DeviceInfo[] devices = view.getDevices();
                assertEquals(1, devices.length, () -> Arrays.toString(devices));
                device = devices[0];
                assertEquals("shm", device.provider());
                assertEquals(2, device.connections(), device::toString);
                assertEquals(0, device.zeroCopyRegistrations(), device::toString);
                assertTrue(device.resources().queuePairs() >= 2, device::toString);
                assertTrue(device.resources().completionQueues() >= 2, device::toString);
                assertTrue(device.resources().protectionDomains() >= 1, device::toString);
                final CompositeData rawDevice = ((CompositeData[]) server.getAttribute(name, "Devices"))[0];
                assertEquals(device.resources().queuePairs(),
                    ((CompositeData) rawDevice.get("resources")).get("queuePairs"));
            }
            // a closed connection may linger on the transport's timer until its DISCONNECT is out
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (view.getConnectionCount() != 0 && System.nanoTime() - deadline < 0) {
                Thread.sleep(1);
            }
            assertEquals(0, view.getConnectionCount(), "released connections leave the view");
            assertEquals(0, view.getConnectionsFailed());
            final DeviceInfo after = view.getDevices()[0];
            assertEquals(0, after.connections(), after::toString);
            // each connection had its queue pair and its send and receive completion queues, closed with it
            assertEquals(device.resources().queuePairs() - 2, after.resources().queuePairs(), after::toString);
            assertEquals(device.resources().completionQueues() - 4, after.resources().completionQueues(),
                after::toString);
        } finally {
            StreamTransports.close(transport);
        }
        assertFalse(server.isRegistered(name), "unregistered on close");
    }

    private static ObjectName awaitRegistered(final RsocketTransport transport) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        ObjectName name;
        while ((name = transport.mbeanName()) == null && System.nanoTime() - deadline < 0) {
            Thread.sleep(5);
        }
        assertNotNull(name, "the transport's MBean was not registered");
        assertTrue(ManagementFactory.getPlatformMBeanServer().isRegistered(name));
        return name;
    }
}
