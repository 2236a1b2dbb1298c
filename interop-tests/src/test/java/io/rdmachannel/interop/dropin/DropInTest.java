package io.rdmachannel.interop.dropin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * rdmachannel as the JVM-wide provider under unmodified programs, each in its own JVM: RDMA between two drop-in
 * JVMs, a drop-in server serving RDMA and TCP peers on one port, a drop-in client falling back to TCP to a server
 * without RDMA (and failing when the rules forbid it), TCP by rule, one selector for platform channels and RDMA, and
 * Netty's NIO transport. Every assertion that fails prints the programs' output, stderr (with rdmachannel's DEBUG
 * lines) included.
 *
 * <p>Settings: {@code rdmachannel.dropin.address} is the address servers bind and clients connect to (default
 * 127.0.0.1; an address of the RDMA device's interface on the native provider, 192.0.2.1 in the soft-RoCE guest);
 * {@code rdmachannel.provider} and the shm directory are passed on to the children.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class DropInTest {
    private static final String ADDRESS = System.getProperty("rdmachannel.dropin.address", "127.0.0.1");
    /** How an RDMA path of this machine's provider shows in a channel's toString. */
    private static final String RDMA_PATH = "path=rdma:" + System.getProperty("rdmachannel.provider", "shm");
    private static final String[] SIZES = {"1", "64", "4096", "65536", "1048576"};
    private static final long SECONDS = 60;
    private static final long NETTY_SECONDS = 240;

    private final List<ChildJvm> children = new ArrayList<>();

    @AfterEach
    void stopChildren() throws Exception {
        for (int i = children.size() - 1; i >= 0; i--) {
            children.get(i).close();
        }
    }

    private ChildJvm start(final Class<?> main, final boolean dropIn, final List<String> properties,
        final String... args) throws Exception {
        final ChildJvm child = ChildJvm.start(main, dropIn, properties, args);
        children.add(child);
        return child;
    }

    /**
     * An echo server; returns its port.
     */
    private String echoServer(final boolean dropIn, final String mode) throws Exception {
        final ChildJvm server = start(NioEchoServer.class, dropIn, List.of(), ADDRESS, mode);
        return server.expect("LISTENING ", SECONDS).split(" ")[1];
    }

    private ChildJvm server() {
        return children.get(0);
    }

    /**
     * Run a client program to its end; it must print {@code OK} and exit 0.
     */
    private ChildJvm runClient(final Class<?> main, final boolean dropIn, final List<String> properties,
        final String... args) throws Exception {
        return runClient(SECONDS, main, dropIn, properties, args);
    }

    /**
     * Run a client program to its end within {@code seconds}; it must print {@code OK} and exit 0.
     */
    private ChildJvm runClient(final long seconds, final Class<?> main, final boolean dropIn,
        final List<String> properties, final String... args) throws Exception {
        final ChildJvm client = start(main, dropIn, properties, args);
        client.expect("OK", seconds);
        assertEquals(0, client.awaitExit(SECONDS), client::describe);
        return client;
    }

    @ParameterizedTest
    @ValueSource(strings = {"selector", "blocking"})
    void shouldEchoBetweenTwoUnmodifiedProgramsOverRdma(final String serverMode) throws Exception {
        final ChildJvm client = echoOverRdma(serverMode, List.of());

        assertTrue(client.errors().contains("over rdma:"), "the DEBUG line names the path:\n" + client.describe());
    }

    /**
     * An echo server in {@code serverMode}, and a drop-in echo client with {@code clientProperties} that must reach it
     * over RDMA, both ends saying so.
     *
     * @return the client, exited.
     */
    private ChildJvm echoOverRdma(final String serverMode, final List<String> clientProperties) throws Exception {
        final String port = echoServer(true, serverMode);

        final ChildJvm client = start(NioEchoClient.class, true, clientProperties, concat(ADDRESS, port, SIZES));

        final String path = client.expect("PATH ", SECONDS);
        assertTrue(path.contains(RDMA_PATH), path + "\n" + client.describe());
        client.expect("OK ", SECONDS);
        assertEquals(0, client.awaitExit(SECONDS), client::describe);
        final String accepted = server().expect("ACCEPTED ", SECONDS);
        assertTrue(accepted.contains(RDMA_PATH + " (accepted over RDMA)"), accepted + "\n" + server().describe());
        return client;
    }

    /**
     * A server bound under rdmachannel listens for RDMA and TCP peers on one port: a drop-in client comes over RDMA,
     * a JDK client and a plain {@code java.net.Socket} (which never goes through a provider, even in a drop-in JVM)
     * over TCP, all served by one selector.
     */
    @Test
    void shouldServeRdmaAndTcpPeersOnOnePort() throws Exception {
        final String port = echoServer(true, "selector");

        runClient(NioEchoClient.class, true, List.of(), concat(ADDRESS, port, SIZES));
        runClient(NioEchoClient.class, false, List.of(), concat(ADDRESS, port, SIZES));
        runClient(PlainSocketEchoClient.class, true, List.of(), ADDRESS, port, "300000");

        final List<String> accepted = List.of(server().expect("ACCEPTED ", SECONDS),
            server().expect("ACCEPTED ", SECONDS), server().expect("ACCEPTED ", SECONDS));
        assertEquals(1, accepted.stream().filter(line -> line.contains(RDMA_PATH)).count(), accepted::toString);
        assertEquals(2, accepted.stream().filter(line -> line.contains("path=tcp (accepted over TCP)")).count(),
            accepted::toString);
    }

    /**
     * An unmodified client in the XRC mode ({@code rdmachannel.stream.xrc=true}) against a server without it: the
     * server refuses the XRC request as a protocol it does not take, and the client connects again in RC instead of
     * falling back to TCP as it does for a peer without RDMA.
     */
    @Test
    void shouldConnectInRcNotTcpWhenTheServerDoesNotTakeXrc() throws Exception {
        echoOverRdma("selector", List.of("rdmachannel.stream.xrc=true"));
    }

    @Test
    void shouldFallBackToTcpWhenThePeerHasNoRdma() throws Exception {
        final String port = echoServer(false, "selector");

        final ChildJvm client = start(NioEchoClient.class, true, List.of(), concat(ADDRESS, port, SIZES));

        final String path = client.expect("PATH ", SECONDS);
        assertTrue(path.contains("path=tcp (fallback: no RDMA"), path + "\n" + client.describe());
        client.expect("OK ", SECONDS);
        assertEquals(0, client.awaitExit(SECONDS), client::describe);
        assertTrue(client.errors().contains("over tcp (fallback: no RDMA"),
            "the DEBUG line says why:\n" + client.describe());
    }

    @Test
    void shouldFailWhenTheRulesForbidTheFallback() throws Exception {
        final String port = echoServer(false, "selector");

        final ChildJvm client = start(NioEchoClient.class, true, List.of("rdmachannel.rules=rdma-only connect * *"),
            concat(ADDRESS, port, SIZES));

        final String failed = client.expect("FAILED ", SECONDS);
        assertTrue(failed.startsWith("FAILED java.net.ConnectException: Connection refused")
            || failed.startsWith("FAILED java.net.NoRouteToHostException"), failed + "\n" + client.describe());
        assertEquals(1, client.awaitExit(SECONDS), client::describe);
    }

    @Test
    void shouldGoOverTcpWhereTheRulesSaySo() throws Exception {
        final String port = echoServer(true, "selector");

        final ChildJvm client = start(NioEchoClient.class, true,
            List.of("rdmachannel.rules=rdma connect 203.0.113.0/24 *; tcp connect * *"),
            concat(ADDRESS, port, SIZES));

        final String path = client.expect("PATH ", SECONDS);
        assertTrue(path.contains("path=tcp (rule 'tcp connect * *')"), path + "\n" + client.describe());
        client.expect("OK ", SECONDS);
        final String accepted = server().expect("ACCEPTED ", SECONDS);
        assertTrue(accepted.contains("path=tcp (accepted over TCP)"), accepted);
    }

    @Test
    void shouldMixPlatformChannelsAndRdmaInOneSelector() throws Exception {
        final String port = echoServer(true, "blocking");

        final ChildJvm program = runClient(MixedSelectorProgram.class, true, List.of(), ADDRESS, port);

        final String kinds = program.describe().lines().filter(line -> line.startsWith("KINDS ")).findFirst()
            .orElseThrow();
        assertTrue(kinds.contains("datagram=sun.nio.ch.DatagramChannelImpl") && kinds.contains("pipe=sun.nio.ch.")
            && kinds.contains("unix=sun.nio.ch.ServerSocketChannelImpl")
            && kinds.contains("stream=io.rdmachannel.nio.RdmaSocketChannel"), kinds);
        final String accepted = server().expect("ACCEPTED ", SECONDS);
        assertTrue(accepted.contains(RDMA_PATH), accepted);
    }

    @Test
    @Timeout(value = 360, unit = TimeUnit.SECONDS)
    void shouldRunNettysNioTransportOverRdma() throws Exception {
        final ChildJvm server = start(NettyEchoServer.class, true, List.of(), ADDRESS);
        final String port = server.expect("LISTENING ", SECONDS).split(" ")[1];

        // 4 MiB echoed through Netty's pipeline took 30 to 60 s in the emulated guest (the JVM's start included):
        // the client and the wait for it get 240 s, so that only a stall fails the test there
        final ChildJvm client = runClient(NETTY_SECONDS, NettyEchoClient.class, true, List.of(), ADDRESS, port, "4",
            "1048576", Long.toString(NETTY_SECONDS));

        assertEquals(4, client.errors().lines().filter(line -> line.contains("over rdma:")).count(),
            "four client connections over RDMA:\n" + client.describe());
        assertEquals(4, server.errors().lines().filter(line -> line.contains("accepted")
            && line.contains("over rdma:")).count(), "four accepted over RDMA:\n" + server.describe());
    }

    private static String[] concat(final String first, final String second, final String... rest) {
        final String[] all = new String[rest.length + 2];
        all[0] = first;
        all[1] = second;
        System.arraycopy(rest, 0, all, 2, rest.length);
        return all;
    }
}
