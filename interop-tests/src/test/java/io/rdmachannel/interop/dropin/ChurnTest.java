package io.rdmachannel.interop.dropin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.rdmachannel.channel.shm.ShmConfiguration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Connection churn between two JVMs with rdmachannel installed JVM-wide (on shm by default): an unmodified selector
 * echo server
 * ({@link NioEchoServer}) and an unmodified blocking client ({@link ChurnClient}) that connects, echoes 64 B (every
 * 50th cycle 256 KiB), checks every byte and closes, {@code rdmachannel.test.churnCycles} times (default 3,000;
 * {@code 100000} for the full proof). Both processes report what they hold (descriptors, threads, mappings of the shm
 * folder, direct and native memory, see {@link ProcessUsage}) after a warm-up and at a quarter, half, three quarters
 * and the end of the run, with the client paused, and the files in the shm folder are counted then: nothing may grow
 * past a few connections' worth, and no cycle may fail. {@code -Drdmachannel.test.churnTransport=tcp} runs the same
 * programs without rdmachannel, on the JDK's TCP, for the rate to compare with.
 * {@code -Drdmachannel.test.churnProvider=native -Drdmachannel.test.churnAddress=192.0.2.1} runs it on the native
 * provider over rdma_cm (the soft-RoCE guest's stage); there is no shm folder to count, and the queue pairs,
 * completion queues and memory regions each process holds are what shows a leak of verbs objects.
 */
@Timeout(value = 60, unit = TimeUnit.MINUTES)
class ChurnTest {
    private static final int CYCLES = Integer.getInteger("rdmachannel.test.churnCycles", 3_000);
    private static final int WARM_UP = Math.min(1_000, CYCLES / 10);
    /** {@code false} runs the same programs on the JDK's own TCP channels, for the rate to compare with. */
    private static final boolean DROP_IN = !"tcp".equals(System.getProperty("rdmachannel.test.churnTransport"));
    /** The verbs provider of both processes: {@code shm}, or {@code native} on a machine with an RDMA device. */
    private static final String PROVIDER = System.getProperty("rdmachannel.test.churnProvider", "shm");
    /** The address the server listens on: the loopback on shm, an address of the RDMA device's interface on native. */
    private static final String ADDRESS = System.getProperty("rdmachannel.test.churnAddress", "127.0.0.1");
    private static final boolean SHM = "shm".equals(PROVIDER);
    /** Files of a few pooled queue pairs and rings, and the sockets of both devices. */
    private static final int FILE_SLACK = 16;
    /** How long a process above its base may take to come back (three of the shm pools' idle times). */
    private static final long SETTLE_SECONDS = 6;

    @Test
    void shouldChurnConnectionsBetweenTwoProcessesWithoutGrowth() throws Exception {
        final Path folder = SHM ? Files.createTempDirectory(Path.of(Files.isWritable(Path.of("/dev/shm"))
            ? "/dev/shm" : "/tmp"), "rdc-churn") : null;
        final List<String> properties = new ArrayList<>(List.of("rdmachannel.provider=" + PROVIDER,
            "org.slf4j.simpleLogger.log.io.rdmachannel=info"));
        if (SHM) {
            properties.add(ShmConfiguration.DIRECTORY_PROP_NAME + "=" + folder);
        }
        final List<String> jvmOptions = List.of("-XX:NativeMemoryTracking=summary");
        final List<Integer> pauses = List.of(WARM_UP, CYCLES / 4, CYCLES / 2, CYCLES * 3 / 4, CYCLES - 1);
        final List<String> report = new ArrayList<>();
        try (ChildJvm server = ChildJvm.start(NioEchoServer.class, DROP_IN, properties, jvmOptions, ADDRESS,
            "selector", "quiet")) {
            final String port = server.expect("LISTENING ", 120).split(" ")[1];
            try (ChildJvm client = ChildJvm.start(ChurnClient.class, DROP_IN, properties, jvmOptions, ADDRESS,
                port, Integer.toString(CYCLES), String.join(",", pauses.stream().map(String::valueOf).toList()))) {
                ProcessUsage clientBase = null;
                ProcessUsage serverBase = null;
                long filesBase = 0;
                long warmMillis = 0;
                for (final int pause : pauses) {
                    final String[] paused = client.expect("PAUSED ", TimeUnit.MINUTES.toSeconds(30)).split(" ", 4);
                    assertEquals(pause, Integer.parseInt(paused[1]), client::describe);
                    ProcessUsage clientNow = ProcessUsage.parse(paused[3]);
                    server.send("USAGE");
                    ProcessUsage serverNow = ProcessUsage.parse(server.expect("USAGE ", 30));
                    long files = countFiles(folder);
                    // growth is what stays: files and mappings a burst left pooled go after the pools' idle time
                    // (rdmachannel.shm.poolIdleMillis, 2 s), so a process above its base is asked again for a while
                    final long settleEnd = System.nanoTime() + TimeUnit.SECONDS.toNanos(SETTLE_SECONDS);
                    while (clientBase != null && !(clientNow.withinSlackOf(clientBase)
                        && serverNow.withinSlackOf(serverBase) && files <= filesBase + FILE_SLACK)
                        && System.nanoTime() - settleEnd < 0) {
                        report.add(String.format("cycle %6d (settling): client %s%n              server %s%s", pause,
                            clientNow, serverNow, SHM ? ", shm files " + files : ""));
                        Thread.sleep(500);
                        client.send("USAGE");
                        clientNow = ProcessUsage.parse(client.expect("USAGE ", 30));
                        server.send("USAGE");
                        serverNow = ProcessUsage.parse(server.expect("USAGE ", 30));
                        files = countFiles(folder);
                    }
                    report.add(String.format("cycle %6d: client %s%n              server %s%s", pause, clientNow,
                        serverNow, SHM ? ", shm files " + files : ""));
                    if (clientBase == null) {
                        clientBase = clientNow;
                        serverBase = serverNow;
                        filesBase = files;
                        warmMillis = Long.parseLong(paused[2]);
                    } else {
                        final String context = String.join("\n", report);
                        final ProcessUsage clientAt = clientNow;
                        final ProcessUsage serverAt = serverNow;
                        final long filesAt = files;
                        assertTrue(clientAt.withinSlackOf(clientBase), () -> "client grew:\n" + context);
                        assertTrue(serverAt.withinSlackOf(serverBase), () -> "server grew:\n" + context);
                        assertTrue(filesAt <= filesBase + FILE_SLACK, () -> "shm files grew:\n" + context);
                    }
                    client.send("GO");
                }
                final String[] done = client.expect("DONE ", 600).split(" ");
                assertEquals(0, client.awaitExit(60), client::describe);
                final long millis = Long.parseLong(done[2]) - warmMillis;
                System.out.printf("%d connect/echo/close cycles between two JVMs on %s, %.0f cycles/s after the "
                    + "warm-up%n%s%n", CYCLES, DROP_IN ? PROVIDER : "JDK TCP",
                    (CYCLES - WARM_UP) * 1000.0 / Math.max(1, millis),
                    String.join("\n", report));
                assertTrue(!server.describe().contains("CONNECTION FAILED"), server::describe);
            }
        } finally {
            if (folder != null) {
                try (Stream<Path> paths = Files.walk(folder)) {
                    paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
                }
            }
        }
    }

    /**
     * The churn counts RDMA connections only: a client whose drop-in connection fell back to TCP (here: the server is
     * a plain JDK TCP server, so every connect falls back) stops at its first cycle and says so, rather than churning
     * TCP connections under the RDMA figures. On shm only: the check is the same on every provider, and a fallback on
     * native waits for the address resolution to fail.
     */
    @Test
    void shouldStopAtTheFirstConnectionThatFellBackToTcp() throws Exception {
        assumeTrue(SHM && DROP_IN, "the fallback check is shown on shm");
        try (ChildJvm server = ChildJvm.start(NioEchoServer.class, false, List.of(), ADDRESS, "selector", "quiet")) {
            final String port = server.expect("LISTENING ", 120).split(" ")[1];
            try (ChildJvm client = ChildJvm.start(ChurnClient.class, true, List.of("rdmachannel.provider=shm"),
                ADDRESS, port, "10", "")) {
                final String failed = client.expect("FAILED ", 120);
                assertTrue(failed.startsWith("FAILED in cycle 0: java.io.IOException: the connection to ")
                    && failed.contains(" fell back to TCP: tcp (fallback: no RDMA listener"), client::describe);
                assertEquals(1, client.awaitExit(60), client::describe);
            }
        }
    }

    private static long countFiles(final Path folder) throws IOException {
        if (folder == null) {
            return 0;
        }
        try (Stream<Path> paths = Files.walk(folder)) {
            return paths.filter(Files::isRegularFile).count();
        }
    }
}
