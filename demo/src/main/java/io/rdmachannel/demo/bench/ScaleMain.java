package io.rdmachannel.demo.bench;

import io.rdmachannel.channel.DeviceInfo;
import io.rdmachannel.channel.spi.DeviceResources;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamConfiguration;
import io.rdmachannel.demo.Stat;
import io.rdmachannel.nio.RdmaSocketChannel;

import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * {@code ./rdmachannel scale}: what an idle RDMA connection costs. For each count N, a {@link ScaleServer} in a second
 * JVM accepts N connections that this JVM opens one after the other (connect, a one-byte echo), then both sides are
 * measured with the connections idle: the verbs objects and registered bytes of their devices, the resident memory,
 * descriptors and threads of the process, and the shared-memory files of the host. Each figure is the change from
 * the first tenth of the connections to all N, divided by the connections in between: the cost of one more
 * connection, without what a process pays once (its device, its threads, the JIT's work). Then every connection is
 * closed and the server's devices must come back to no connection.
 */
public final class ScaleMain {
    static final String USAGE = """
        usage: ./rdmachannel scale [options]

        Opens N idle RDMA connections from this JVM to a server in a second JVM (one selector thread accepts
        them and echoes one byte on each), then reports per connection, on each side: queue pairs, completion
        queues, shared receive queues and memory regions (with their KiB) of the devices, resident memory
        (KiB), memory mappings (the kernel allows vm.max_map_count per process), file descriptors and
        threads; the host's /dev/shm
        KiB (both sides together); connects per second (connect and a one-byte echo, one at a time); and
        closes per second. Each figure is the change from the first tenth of the connections to all N,
        divided by the connections in between: what one more idle connection costs.

        options:
          --connections LIST  connection counts, at least 10 each, each measured with a server of its own
                              (default 1000,10000)
          --provider NAME     RDMA provider: shm or native (default: rdmachannel.provider, else native if usable)
          --address IP        the server listens on IP instead of the loopback (the native provider needs an
                              address of the RDMA device's interface)
          --mode MODE         rc: each connection has a receive queue of its own (the default); srq: both
                              sides take their receives from their device's shared receive queue
                              (RDMA_SHARED_RECEIVE_QUEUE); xrc: both sides run the stream's XRC mode
                              (RDMA_XRC; shm only: an initiator, a target in the host's XRC domain and an XRC
                              shared receive queue per connection and side)
          --timeout SECONDS   give up on one count after this long, 1 to 86400 (default 900)
          --help              show this text

        Exit status: 0 when every count was measured and every connection closed cleanly, 1 otherwise, 2 on bad
        arguments.
        """;
    private static final Path DEV_SHM = Path.of("/dev/shm");
    /** The fewest connections measured: the first tenth is the baseline. */
    private static final int MIN_CONNECTIONS = 10;
    /** The longest wait for the server's devices to report the connections the client made or closed. */
    private static final long SETTLE_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** Most readings {@link #settled} takes of a process's usage. */
    private static final int STILL_READINGS = 40;
    private static final int STILL_FOR = 3;

    private ScaleMain() {
    }

    /**
     * Measure; exit status as {@link #USAGE} says.
     *
     * @param args the options, see {@code --help}.
     */
    public static void main(final String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    static int run(final String[] args, final PrintStream out, final PrintStream err) {
        List<Integer> counts = List.of(1000, 10000);
        String provider = null;
        InetAddress address = null;
        long timeoutSeconds = 900;
        String mode = ScaleServer.RC;
        try {
            for (int i = 0; i < args.length; i++) {
                final String arg = args[i];
                if (arg.equals("--help") || arg.equals("-h")) {
                    out.print(USAGE);
                    return 0;
                }
                if (i + 1 == args.length) {
                    throw new IllegalArgumentException(arg + " needs a value");
                }
                final String value = args[++i];
                switch (arg) {
                    case "--connections" -> counts = BenchOptions.list(arg, value,
                        word -> (int) BenchOptions.number(arg, word, MIN_CONNECTIONS, 1_000_000, false));
                    case "--provider" -> provider = BenchOptions.provider(value);
                    case "--address" -> address = BenchOptions.address(value);
                    case "--timeout" -> timeoutSeconds = BenchOptions.number(arg, value, 1, 86_400, false);
                    case "--mode" -> mode = switch (value) {
                        case ScaleServer.RC, ScaleServer.SRQ, ScaleServer.XRC -> value;
                        default -> throw new IllegalArgumentException("--mode must be rc, srq or xrc: " + value);
                    };
                    default -> throw new IllegalArgumentException("unknown option " + arg);
                }
            }
        } catch (final IllegalArgumentException ex) {
            err.println("rdmachannel scale: " + ex.getMessage() + " (try --help)");
            return 2;
        }
        if (provider != null) {
            System.setProperty(RdmaProviders.PROVIDER_PROP_NAME, provider);
        }
        final StreamConfiguration stream = StreamConfiguration.fromSystemProperties();
        if (mode.equals(ScaleServer.SRQ)) {
            out.printf(Locale.ROOT, "provider %s, SRQ mode; each connection: %d KiB send ring, %d KiB receive ring, "
                + "%d receives reserved in its device's shared receive queue (%d credits and %d for control "
                + "messages), up to %d credits while busy%n", RdmaProviders.defaultProvider().name(),
                stream.sendBufferLength() / 1024, stream.receiveBufferLength() / 1024,
                stream.sharedReceiveCredits() + stream.controlWindow(), stream.sharedReceiveCredits(),
                stream.controlWindow(), stream.receiveQueueSize());
        } else {
            out.printf(Locale.ROOT, "provider %s%s; each connection: %d KiB send ring, %d KiB receive ring, %d "
                + "receives posted (%d credits and %d for control messages)%n", RdmaProviders.defaultProvider().name(),
                mode.equals(ScaleServer.XRC) ? ", XRC mode" : "", stream.sendBufferLength() / 1024,
                stream.receiveBufferLength() / 1024,
                stream.receiveQueueSize() + stream.controlWindow(), stream.receiveQueueSize(), stream.controlWindow());
        }
        out.printf(Locale.ROOT, "%11s %-6s %6s %6s %6s %6s %8s %8s %8s %6s %6s %7s %8s %10s %9s%n", "connections",
            "side", "QP", "CQ", "SRQ", "MR", "MR KiB", "recvs", "RSS KiB", "maps", "fds", "threads", "shm KiB",
            "connects/s", "closes/s");
        boolean clean = true;
        for (final int count : counts) {
            try {
                clean &= measure(count, address, mode, timeoutSeconds, out, err);
            } catch (final IOException | RuntimeException ex) {
                err.println("rdmachannel scale: " + count + " connections failed: " + ex);
                ex.printStackTrace(err);
                clean = false;
            }
        }
        return clean ? 0 : 1;
    }

    private static boolean measure(final int count, final InetAddress address, final String mode,
        final long timeoutSeconds, final PrintStream out, final PrintStream err) throws IOException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(timeoutSeconds);
        final List<String> serverArgs = new ArrayList<>();
        serverArgs.add(mode);
        if (address != null) {
            serverArgs.add(address.getHostAddress());
        }
        try (ServerProcess server = ServerProcess.start(ScaleServer.class, serverArgs)) {
            final String target = server.address(Transport.RDMA);
            final int first = count / 10;
            final long self = ProcessHandle.current().pid();
            final List<SocketChannel> channels = new ArrayList<>(count);
            final ByteBuffer echo = ByteBuffer.allocateDirect(1);
            boolean clean = true;
            try {
                Usage serverBefore = null;
                Usage clientBefore = null;
                long shmBefore = 0;
                long measured = 0;
                for (int i = 0; i < count; i++) {
                    if (System.nanoTime() - deadline > 0) {
                        throw new IOException("timed out after " + i + " of " + count + " connections");
                    }
                    final long connectStart = System.nanoTime();
                    final SocketChannel channel = connect(target, mode);
                    channels.add(channel);
                    echo.clear().put((byte) i).flip();
                    channel.write(echo);
                    echo.clear();
                    if (channel.read(echo) != 1 || echo.get(0) != (byte) i) {
                        throw new IOException("connection " + i + " did not echo its byte: " + channel);
                    }
                    measured += System.nanoTime() - connectStart;
                    if (i + 1 == first) {
                        serverBefore = serverUsage(server, first, deadline);
                        clientBefore = settled(self, usageOf(self));
                        shmBefore = sharedMemoryUsed();
                    }
                    if ((i + 1) % first == 0) {
                        err.printf(Locale.ROOT, "scale: %d of %d connections%n", i + 1, count);
                    }
                }
                final double connectSeconds = measured / 1e9;
                final Usage serverAfter = serverUsage(server, count, deadline);
                final Usage clientAfter = settled(self, usageOf(self));
                // figures of a server that did not list every connection would be wrong: printed, but not clean
                clean = serverBefore.connections() == first && serverAfter.connections() == count;
                final long shmAfter = sharedMemoryUsed();
                final long closeStart = System.nanoTime();
                closeAll(channels);
                final double closeSeconds = (System.nanoTime() - closeStart) / 1e9;
                final double connects = count / connectSeconds;
                final double closes = count / closeSeconds;
                final int added = count - first;
                final double shmKib = (shmAfter - shmBefore) / 1024.0 / added;
                print(out, count, added, "client", clientBefore, clientAfter, shmKib, connects, closes);
                print(out, count, added, "server", serverBefore, serverAfter, shmKib, connects, closes);
                clean &= serverUsage(server, 0, deadline).connections() == 0;
            } finally {
                closeAll(channels);
            }
            return clean;
        }
    }

    private static void print(final PrintStream out, final int count, final int added, final String side,
        final Usage before, final Usage after, final double shmKib, final double connects, final double closes) {
        final double n = added;
        out.printf(Locale.ROOT,
            "%11d %-6s %6.2f %6.2f %6.2f %6.2f %8.1f %8.1f %8.1f %6.2f %6.2f %7.3f %8.1f %10.0f %9.0f%n",
            count, side, (after.queuePairs() - before.queuePairs()) / n,
            (after.completionQueues() - before.completionQueues()) / n,
            (after.sharedReceiveQueues() - before.sharedReceiveQueues()) / n,
            (after.memoryRegions() - before.memoryRegions()) / n,
            (after.memoryRegionBytes() - before.memoryRegionBytes()) / 1024.0 / n,
            (after.postedReceives() - before.postedReceives()) / n,
            (after.rssKib() - before.rssKib()) / n, (after.maps() - before.maps()) / n,
            (after.fds() - before.fds()) / n,
            (after.threads() - before.threads()) / n, shmKib, connects, closes);
        out.flush();
    }

    private static SocketChannel connect(final String target, final String mode) throws IOException {
        if (mode.equals(ScaleServer.RC)) {
            return Transport.RDMA.connect(target);
        }
        final RdmaSocketChannel channel = RdmaSocketChannel.open();
        try {
            ScaleServer.setMode(channel, mode);
            channel.connect(Transport.inetAddress(target));
            return channel;
        } catch (final IOException | RuntimeException ex) {
            channel.close();
            throw ex;
        }
    }

    private static void closeAll(final List<SocketChannel> channels) {
        for (final SocketChannel channel : channels) {
            try {
                channel.close();
            } catch (final IOException ex) {
                System.err.println("scale: closing " + channel + " failed: " + ex);
            }
        }
        channels.clear();
    }

    /**
     * The server's usage once its devices report {@code connections} connections, read by the server itself
     * ({@link #awaitConnections}) and sent back on its stdout: a reading from here would attach to it through the
     * management agent, whose connections linger in the server for a while and were counted in its descriptors.
     */
    private static Usage serverUsage(final ServerProcess server, final int connections, final long deadline)
        throws IOException {
        final long millis = Math.max(0, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
        // the server waits up to millis for its connections, then for its readings to hold still (at most 4 s)
        return Usage.parse(server.request(ScaleServer.USAGE + " " + connections + " " + millis,
            millis + TimeUnit.SECONDS.toMillis(60)));
    }

    /**
     * A process's usage once its devices report {@code connections} connections (accepts finish on the server's
     * side after the client's connect returned; closes after the client's close), or as it is after 30 s (at most
     * until {@code deadline}), which is reported.
     */
    static Usage awaitConnections(final long pid, final int connections, final long deadline,
        final PrintStream err) {
        final long settle = Math.min(deadline - System.nanoTime(), SETTLE_NANOS);
        final long end = System.nanoTime() + Math.max(settle, 0);
        while (true) {
            final List<String> problems = new ArrayList<>();
            final Usage usage = Usage.of(pid, Stat.devicesOf(pid, problems));
            if (usage.connections() == connections) {
                return settled(pid, usage);
            }
            if (System.nanoTime() - end >= 0) {
                err.println("rdmachannel scale: the server's devices list " + usage.connections()
                    + " connections, not " + connections + (problems.isEmpty() ? "" : ": " + problems));
                return usage;
            }
            Sleeps.sleep(100);
        }
    }

    /**
     * A process's usage, from a {@code first} reading on, once its descriptors and threads held still over
     * {@value #STILL_FOR} readings 100 ms apart (at most {@value #STILL_READINGS} readings): a connection's link socket
     * is accepted by the device's agent thread on the side that does not open it, a moment after the connection's
     * echo, and a reading in between counted one socket fewer (0.97 descriptors a connection). Two readings 50 ms
     * apart were not enough once in a full test run (1.03: likely the first tenth's reading, both of its readings
     * before a link was accepted).
     */
    private static Usage settled(final long pid, final Usage first) {
        Usage usage = first;
        int still = 1;
        for (int reading = 1; reading < STILL_READINGS && still < STILL_FOR; reading++) {
            Sleeps.sleep(100);
            final Usage again = usageOf(pid);
            still = again.fds() == usage.fds() && again.threads() == usage.threads() ? still + 1 : 1;
            usage = again;
        }
        return usage;
    }

    private static Usage usageOf(final long pid) {
        return Usage.of(pid, Stat.devicesOf(pid, new ArrayList<>()));
    }

    private static long sharedMemoryUsed() throws IOException {
        if (!Files.isDirectory(DEV_SHM)) {
            return 0;
        }
        final FileStore store = Files.getFileStore(DEV_SHM);
        return store.getTotalSpace() - store.getUnallocatedSpace();
    }

    /**
     * One process at one moment: its devices' connections and verbs objects, and what the kernel reports of it.
     */
    record Usage(int connections, int queuePairs, int completionQueues, int sharedReceiveQueues, int memoryRegions,
        long memoryRegionBytes, long postedReceives, long rssKib, long maps, long fds, long threads) {

        static Usage of(final long pid, final List<DeviceInfo> devices) {
            int connections = 0;
            int queuePairs = 0;
            int completionQueues = 0;
            int sharedReceiveQueues = 0;
            int memoryRegions = 0;
            long memoryRegionBytes = 0;
            long postedReceives = 0;
            for (final DeviceInfo device : devices) {
                postedReceives += device.postedReceives();
                final DeviceResources resources = device.resources();
                connections += device.connections();
                queuePairs += resources.queuePairs();
                completionQueues += resources.completionQueues();
                sharedReceiveQueues += resources.sharedReceiveQueues();
                memoryRegions += resources.memoryRegions();
                memoryRegionBytes += resources.memoryRegionBytes();
            }
            final Path proc = Path.of("/proc", Long.toString(pid));
            try (Stream<Path> fds = Files.list(proc.resolve("fd"));
                Stream<String> maps = Files.lines(proc.resolve("maps"))) {
                return new Usage(connections, queuePairs, completionQueues, sharedReceiveQueues, memoryRegions,
                    memoryRegionBytes, postedReceives, status(proc, "VmRSS:"), maps.count(), fds.count(),
                    status(proc, "Threads:"));
            } catch (final IOException ex) {
                throw new IllegalStateException("cannot read " + proc + ": " + ex, ex);
            }
        }

        /**
         * This usage as one line, {@value ScaleServer#USAGE} and its figures, which {@link #parse} reads back.
         */
        String format() {
            return ScaleServer.USAGE + " " + connections + " " + queuePairs + " " + completionQueues + " "
                + sharedReceiveQueues + " " + memoryRegions + " " + memoryRegionBytes + " " + postedReceives + " "
                + rssKib + " " + maps + " " + fds + " " + threads;
        }

        static Usage parse(final String line) throws IOException {
            final String[] words = line.trim().split(" ");
            if (words.length != 12 || !words[0].equals(ScaleServer.USAGE)) {
                throw new IOException("the server's usage line is not one: " + line);
            }
            try {
                return new Usage(Integer.parseInt(words[1]), Integer.parseInt(words[2]), Integer.parseInt(words[3]),
                    Integer.parseInt(words[4]), Integer.parseInt(words[5]), Long.parseLong(words[6]),
                    Long.parseLong(words[7]), Long.parseLong(words[8]), Long.parseLong(words[9]),
                    Long.parseLong(words[10]), Long.parseLong(words[11]));
            } catch (final NumberFormatException ex) {
                throw new IOException("the server's usage line is not one: " + line, ex);
            }
        }

        private static long status(final Path proc, final String field) throws IOException {
            for (final String line : Files.readAllLines(proc.resolve("status"))) {
                if (line.startsWith(field)) {
                    return Long.parseLong(line.substring(field.length()).trim().split("\\s+")[0]);
                }
            }
            throw new IOException(proc + "/status has no " + field);
        }
    }
}
