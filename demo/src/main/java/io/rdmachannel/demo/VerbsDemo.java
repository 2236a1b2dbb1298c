package io.rdmachannel.demo;

import io.rdmachannel.channel.shm.ShmConfiguration;
import io.rdmachannel.channel.shm.ShmProvider;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The verbs demo ({@code ./rdmachannel demo --verbs}): two JVMs on one host connect an RC queue pair each over the
 * default RDMA provider, time a ping-pong of RDMA WRITE WITH IMM messages and a bandwidth run of RDMA WRITEs, and
 * shut down cleanly. The first JVM starts the second (this class with {@code --child}) and exchanges the connection
 * details over its stdio.
 */
public final class VerbsDemo {
    private static final String USAGE = """
        usage: ./rdmachannel demo --verbs [--iterations N] [--size BYTES]

        Starts a second JVM, connects a queue pair in each over the default RDMA provider (the embedded shm
        provider when there is no RDMA hardware) and, both sides busy-polling:
          ping-pong  N round trips of a BYTES-byte message, written with RDMA WRITE WITH IMM and echoed back,
                     after a warm-up of up to 10000 round trips;
          bandwidth  1 GiB in 64 KiB RDMA WRITEs, checked with a checksum.

        options:
          --iterations N   round trips to time, 1 to 100000000 (default 100000)
          --size BYTES     message size, 8 to 65536 (default 64)
          --help           show this text
        """;
    private static final int MAX_WARM_UP = 10_000;
    private static final long BANDWIDTH_PIECES = 16_384;
    private static final String CHILD = "--child";
    private VerbsDemo() {
    }

    /**
     * What the command line asked for.
     */
    record Options(int iterations, int size, boolean child) {
        int warmUp() {
            return Math.min(MAX_WARM_UP, iterations);
        }
    }

    /**
     * Run the verbs demo; exit status 0 on success, 1 on failure, 2 on bad arguments.
     *
     * @param args the options, see {@code --help}.
     */
    public static void main(final String[] args) {
        final Options options;
        try {
            options = parse(args);
        } catch (final IllegalArgumentException ex) {
            System.err.println("rdmachannel demo --verbs: " + ex.getMessage() + " (try --help)");
            System.exit(2);
            return;
        }
        if (options == null) {
            System.out.print(USAGE);
            return;
        }
        try {
            if (options.child()) {
                runChild(options);
            } else {
                runParent(options);
            }
        } catch (final Exception ex) {
            System.err.println("rdmachannel demo --verbs" + (options.child() ? " (child)" : "") + " failed: " + ex);
            ex.printStackTrace();
            System.exit(1);
        }
    }

    /**
     * Parse the options.
     *
     * @return the options, or null for {@code --help}.
     * @throws IllegalArgumentException naming the bad argument.
     */
    static Options parse(final String[] args) {
        int iterations = 100_000;
        int size = 64;
        boolean child = false;
        for (int i = 0; i < args.length; i++) {
            final String arg = args[i];
            final int equals = arg.indexOf('=');
            final String name = equals < 0 ? arg : arg.substring(0, equals);
            switch (name) {
                case "--help", "-h" -> {
                    return null;
                }
                case CHILD -> child = true;
                case "--iterations", "--size" -> {
                    final String value;
                    if (equals >= 0) {
                        value = arg.substring(equals + 1);
                    } else if (i + 1 < args.length) {
                        value = args[++i];
                    } else {
                        throw new IllegalArgumentException(name + " needs a value");
                    }
                    if (name.equals("--iterations")) {
                        iterations = number(name, value, 1, 100_000_000);
                    } else {
                        size = number(name, value, 8, Peer.PIECE);
                    }
                }
                default -> throw new IllegalArgumentException("unknown argument '" + arg + "'");
            }
        }
        return new Options(iterations, size, child);
    }

    private static int number(final String name, final String value, final int min, final int max) {
        final long parsed;
        try {
            parsed = Long.parseLong(value);
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException(name + " takes a whole number, not '" + value + "'");
        }
        if (parsed < min || parsed > max) {
            throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ": " + value);
        }
        return (int) parsed;
    }

    // ----- the first JVM -----

    private static void runParent(final Options options) throws Exception {
        final RdmaProvider provider = RdmaProviders.defaultProvider();
        provider.ensureAvailability();
        final Process child = startChild(options);
        final String ownGid;
        final String childGid;
        try {
            final BufferedReader fromChild = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.UTF_8));
            final PrintStream toChild = new PrintStream(child.getOutputStream(), true, StandardCharsets.UTF_8);
            try (Peer peer = Peer.open(provider, options.size())) {
                final Peer.Endpoint own = peer.endpoint();
                final Peer.Endpoint remote = Peer.Endpoint.parse(expect(fromChild, "gid="));
                toChild.println(own.format());
                peer.connect(remote);
                expect(fromChild, "ready");
                ownGid = HexFormat.of().formatHex(own.gid());
                childGid = HexFormat.of().formatHex(remote.gid());
                System.out.printf("provider: %s, device: %s%n", provider.name(), peer.device().name());
                System.out.printf("parent:   pid %d, gid %s, qp %d%n", ProcessHandle.current().pid(),
                    gidText(own.gid()), own.queuePairNumber());
                System.out.printf("child:    pid %d, gid %s, qp %d%n", child.pid(), gidText(remote.gid()),
                    remote.queuePairNumber());
                System.out.println("connected: queue pair " + peer.state() + " (RC, busy-polled completion queues)");
                pingPong(peer, options);
                bandwidth(peer, fromChild);
                toChild.println("bye");
                expect(fromChild, "closed");
            }
            if (!child.waitFor(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the child JVM did not exit");
            }
        } finally {
            if (child.isAlive()) {
                child.destroyForcibly();
            }
        }
        if (child.exitValue() != 0) {
            throw new IllegalStateException("the child JVM exited with status " + child.exitValue());
        }
        System.out.println("shutdown: child exited with status 0; queue pairs, memory regions, completion queues,"
            + " protection domains and devices closed on both sides" + sharedFilesLeft(provider, ownGid, childGid));
    }

    private static Process startChild(final Options options) throws IOException {
        final List<String> command = JavaCommand.of(VerbsDemo.class, List.of(CHILD,
            "--iterations", Integer.toString(options.iterations()), "--size", Integer.toString(options.size())));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
    }

    private static void pingPong(final Peer peer, final Options options) {
        final long warmUpStart = System.nanoTime();
        peer.ping(options.warmUp());
        final long start = System.nanoTime();
        final long[] roundTrips = peer.ping(options.iterations());
        final long elapsed = System.nanoTime() - start;
        Arrays.sort(roundTrips);
        final int count = roundTrips.length;
        System.out.printf(Locale.ROOT, "ping-pong: %d round trips of %d-byte RDMA WRITE WITH IMM after %d warm-up"
            + " ones (%.3f s): %d messages, %d payload bytes in %.3f s%n", count, options.size(), options.warmUp(),
            (start - warmUpStart) / 1e9, 2L * count, 2L * count * options.size(), elapsed / 1e9);
        System.out.printf(Locale.ROOT, "round trip: p50 %.1f us, p99 %.1f us, min %.1f us, max %.1f us%n",
            roundTrips[count / 2] / 1e3, roundTrips[(int) Math.min(count - 1, (long) count * 99 / 100)] / 1e3,
            roundTrips[0] / 1e3, roundTrips[count - 1] / 1e3);
    }

    private static void bandwidth(final Peer peer, final BufferedReader fromChild) throws IOException {
        final long elapsed = peer.writeRing(BANDWIDTH_PIECES);
        final String childChecksum = expect(fromChild, "ring crc=").substring("ring crc=".length());
        if (!childChecksum.equals(peer.ringChecksum())) {
            throw new IllegalStateException("the child's ring has checksum " + childChecksum + ", not "
                + peer.ringChecksum());
        }
        final long bytes = BANDWIDTH_PIECES * Peer.PIECE;
        System.out.printf(Locale.ROOT, "bandwidth: %d RDMA WRITEs of %d bytes, %d bytes in %.3f s: %.1f MB/s"
            + " (last ring pass checksum %s matches on the child)%n", BANDWIDTH_PIECES, Peer.PIECE, bytes,
            elapsed / 1e9, bytes / (elapsed / 1e9) / 1e6, childChecksum);
    }

    private static String sharedFilesLeft(final RdmaProvider provider, final String ownGid, final String childGid) {
        if (!ShmProvider.NAME.equals(provider.name())) {
            return "";
        }
        final Path directory = ShmConfiguration.fromSystemProperties().directory();
        final boolean left = Files.exists(directory.resolve(ownGid)) || Files.exists(directory.resolve(childGid));
        return left ? "; BUT shared files remain in " + directory : "; no shared files left in " + directory;
    }

    private static String expect(final BufferedReader fromChild, final String prefix) throws IOException {
        final String line = fromChild.readLine();
        if (line == null) {
            throw new IOException("the child JVM ended its output where '" + prefix + "' was expected");
        }
        if (!line.startsWith(prefix)) {
            throw new IOException("the child JVM said '" + line + "' where '" + prefix + "' was expected");
        }
        return line;
    }

    private static String gidText(final byte[] gid) {
        final String hex = HexFormat.of().formatHex(gid);
        final StringBuilder text = new StringBuilder();
        for (int i = 0; i < hex.length(); i += 4) {
            text.append(i == 0 ? "" : ":").append(hex, i, i + 4);
        }
        return text.toString();
    }

    // ----- the second JVM -----

    private static void runChild(final Options options) throws Exception {
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        final PrintStream out = System.out;
        try (Peer peer = Peer.open(RdmaProviders.defaultProvider(), options.size())) {
            out.println(peer.endpoint().format());
            out.flush();
            peer.connect(Peer.Endpoint.parse(in.readLine()));
            out.println("ready");
            out.flush();
            peer.pong(options.warmUp() + options.iterations());
            final int marker = peer.awaitImmediate();
            if (marker != Peer.END_OF_RUN) {
                throw new IllegalStateException("expected the end of the bandwidth run, got immediate " + marker);
            }
            out.println("ring crc=" + peer.ringChecksum());
            out.flush();
            final String bye = in.readLine();
            if (!"bye".equals(bye) || peer.state() != QueuePairState.READY_TO_SEND) {
                throw new IllegalStateException("expected 'bye' with the queue pair ready, got '" + bye + "' in "
                    + peer.state());
            }
        }
        out.println("closed");
        out.flush();
    }
}
