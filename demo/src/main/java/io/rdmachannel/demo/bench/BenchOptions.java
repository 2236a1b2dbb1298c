package io.rdmachannel.demo.bench;

import java.net.InetAddress;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * What {@code ./rdmachannel bench} was asked to measure, parsed from its command line.
 *
 * @param transports     the transports, in the order given.
 * @param provider       the RDMA provider to name in {@code rdmachannel.provider}, or null for the default one.
 * @param address        the IP address the rdma and tcp servers listen on, or null for the loopback.
 * @param modes          the modes, in the order given.
 * @param workloads      the tests, in the order given.
 * @param sizes          message sizes in bytes, in the order given.
 * @param iterations     timed round trips per latency measurement.
 * @param warmUp         untimed round trips, or bandwidth messages (at most as many as timed), before them.
 * @param bytes          bytes streamed per bandwidth measurement (rounded down to whole messages), or 0 for the
 *                       default: {@link #DEFAULT_BYTES}, and at least {@link #DEFAULT_MIN_MESSAGES} messages.
 * @param busyPollMicros {@code RDMA_BUSY_POLL} of the RDMA channels in busy-poll mode.
 * @param timeoutSeconds how long one measurement may take before it is reported as hung.
 * @param json           print one JSON object per result instead of the table.
 * @param plot           the PNG to draw, or null.
 * @param registered     rdma clients write from {@code RegisteredBuffers} (sent without the copy into the ring).
 * @param stats          print each rdma measurement's client connection statistics to stderr.
 */
record BenchOptions(List<Transport> transports, String provider, InetAddress address, List<Mode> modes,
    List<Workload> workloads,
    List<Integer> sizes, int iterations, int warmUp, long bytes, int busyPollMicros, int timeoutSeconds,
    boolean json, Path plot, boolean registered, boolean stats) {

    /** Bytes per bandwidth measurement unless {@code --bytes} says otherwise. */
    static final long DEFAULT_BYTES = 64L << 20;
    /**
     * The fewest messages of a bandwidth measurement unless {@code --bytes} says otherwise: 64 MiB of 64 KiB messages
     * took 6 ms on shm, too short for a figure (a run varied between 0.5 and 3.8 GB/s where 1 GiB gave 10 GB/s).
     */
    static final long DEFAULT_MIN_MESSAGES = 32_768;

    static final String USAGE = """
        usage: ./rdmachannel bench [options]

        Starts a benchmark server in a second JVM, then measures every combination of transport, mode, test and
        message size from this JVM, one connection per measurement. Progress goes to stderr, results to stdout.
          latency    ping-pong of SIZE-byte messages: the server reads each whole message, then writes it back;
                     p50, p99 and p99.9 of the round trips in microseconds, after the warm-up
          bandwidth  one-way stream of SIZE-byte writes, BYTES in all; the server acknowledges the total at the
                     end; MB/s (10^6 bytes) and messages/s from the first write to the acknowledgement, after a
                     warm-up stream of as many messages as --warmup (at most as many as timed), acknowledged too
          churn      connection churn, on request only: --iterations times a new connection, one echo of a
                     SIZE-byte message, close (after --warmup cycles, at most as many as timed); p50, p99 and
                     p99.9 of the cycles in microseconds, and cycles per second (the msgs/s column); after
                     the table, the p50 and mean of the connect, the echo and the close on the connecting side

        options:
          --transport LIST    rdma, tcp (JDK NIO, loopback), uds (JDK NIO, Unix-domain) (default rdma,tcp,uds)
          --provider NAME     RDMA provider: shm or native (default: rdmachannel.provider, else native if usable)
          --address IP        rdma and tcp listen on and connect to IP instead of the loopback; the native
                              provider needs an address of the RDMA device's interface (192.0.2.1 in the
                              soft-RoCE guest)
          --mode LIST         blocking, selector, busy-poll (default blocking,selector,busy-poll)
                              busy-poll: rdma blocking with RDMA_BUSY_POLL; tcp and uds a spinning non-blocking loop
          --test LIST         latency, bandwidth, churn (default latency,bandwidth)
          --sizes LIST        message sizes, 1 to 64m; suffixes k, m (x1024) (default 64,4k,64k)
          --iterations N      timed round trips per latency measurement, 1 to 10000000 (default 10000)
          --warmup N          untimed round trips or messages before them, 0 to 100000000 (default 10000)
          --bytes N           bytes per bandwidth measurement, 1 to 1t; suffixes k, m, g, t (default 64m, and
                              at least 32768 messages: 2g of 64k messages)
          --busy-poll-us N    RDMA_BUSY_POLL of rdma in busy-poll mode, 1 to 10000000 (default 1000)
          --timeout SECONDS   report a measurement as hung after this long, 1 to 86400 (default 300)
          --registered        rdma clients write from RegisteredBuffers: sent straight from the buffer, not copied
                              into the send ring first (the provider shows as shm+registered or native+registered)
          --stats             after each rdma latency or bandwidth measurement, print its client connection's
                              statistics to stderr (spins that caught the event, direct waits, credit stalls, ...)
          --json              print one JSON object per result (one per line) instead of the table
          --plot FILE.png     draw p50 latency and bandwidth against message size into FILE.png
          --help              show this text

        Exit status: 0 when every measurement ran, 1 when one failed or hung, 2 on bad arguments.
        """;

    private static final List<String> VALUED = List.of("--transport", "--provider", "--address", "--mode", "--test",
        "--sizes", "--iterations", "--warmup", "--bytes", "--busy-poll-us", "--timeout", "--plot");
    private static final List<String> FLAGS = List.of("--json", "--registered", "--stats");
    private static final List<String> PROVIDERS = List.of("shm", "native");
    private static final String SIZE_SUFFIXES = "kmgt";
    private static final long MAX_SIZE = 64L << 20;
    private static final int MAX_COUNT = 100_000_000;
    /**
     * Every round trip is kept, 8 bytes each: 80 MB at most.
     */
    private static final int MAX_ITERATIONS = 10_000_000;

    /**
     * Parse the command line.
     *
     * @return the options, or null when {@code --help} was asked for.
     * @throws IllegalArgumentException with a message naming the bad argument.
     */
    static BenchOptions parse(final String... args) {
        final Builder builder = new Builder();
        for (int i = 0; i < args.length; i++) {
            final String arg = args[i];
            final int equals = arg.startsWith("--") ? arg.indexOf('=') : -1;
            final String name = equals < 0 ? arg : arg.substring(0, equals);
            if (name.equals("--help") || name.equals("-h")) {
                return null;
            }
            if (FLAGS.contains(name)) {
                if (equals >= 0) {
                    throw new IllegalArgumentException(name + " takes no value");
                }
                switch (name) {
                    case "--json" -> builder.json = true;
                    case "--registered" -> builder.registered = true;
                    default -> builder.stats = true;
                }
                continue;
            }
            if (!VALUED.contains(name)) {
                throw new IllegalArgumentException("unknown argument '" + arg + "'");
            }
            final String value;
            if (equals >= 0) {
                value = arg.substring(equals + 1);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new IllegalArgumentException(name + " needs a value");
            }
            builder.set(name, value);
        }
        return builder.build();
    }

    /**
     * The number of messages a bandwidth measurement of {@code size}-byte messages writes.
     */
    long bandwidthMessages(final int size) {
        return bytes > 0 ? Math.max(1, bytes / size) : Math.max(DEFAULT_BYTES / size, DEFAULT_MIN_MESSAGES);
    }

    private static final class Builder {
        private List<Transport> transports = List.of(Transport.values());
        private String provider;
        private InetAddress address;
        private List<Mode> modes = List.of(Mode.values());
        private List<Workload> workloads = List.of(Workload.LATENCY, Workload.BANDWIDTH);
        private List<Integer> sizes = List.of(64, 4096, 65536);
        private int iterations = 10_000;
        private int warmUp = 10_000;
        private long bytes;
        private int busyPollMicros = 1000;
        private int timeoutSeconds = 300;
        private boolean json;
        private boolean registered;
        private boolean stats;
        private Path plot;

        void set(final String name, final String value) {
            switch (name) {
                case "--transport" -> transports = list(name, value, Transport::of);
                case "--provider" -> provider = provider(value);
                case "--address" -> address = address(value);
                case "--mode" -> modes = list(name, value, Mode::of);
                case "--test" -> workloads = list(name, value, Workload::of);
                case "--sizes" -> sizes = list(name, value, word -> (int) number(name, word, 1, MAX_SIZE, true));
                case "--iterations" -> iterations = (int) number(name, value, 1, MAX_ITERATIONS, false);
                case "--warmup" -> warmUp = (int) number(name, value, 0, MAX_COUNT, false);
                case "--bytes" -> bytes = number(name, value, 1, 1L << 40, true);
                case "--busy-poll-us" -> busyPollMicros = (int) number(name, value, 1, 10_000_000, false);
                case "--timeout" -> timeoutSeconds = (int) number(name, value, 1, 86_400, false);
                default -> plot = plot(value);
            }
        }

        BenchOptions build() {
            return new BenchOptions(transports, provider, address, modes, workloads, sizes, iterations, warmUp,
                bytes, busyPollMicros, timeoutSeconds, json, plot, registered, stats);
        }
    }

    static String provider(final String value) {
        if (!PROVIDERS.contains(value)) {
            throw new IllegalArgumentException("--provider takes shm or native, not '" + value + "'");
        }
        return value;
    }

    /**
     * An IP address literal (no name lookup), IPv6 with or without brackets.
     */
    static InetAddress address(final String value) {
        final boolean bracketed = value.length() > 2 && value.startsWith("[") && value.endsWith("]");
        try {
            return InetAddress.ofLiteral(bracketed ? value.substring(1, value.length() - 1) : value);
        } catch (final IllegalArgumentException ex) {
            throw new IllegalArgumentException("--address takes an IPv4 or IPv6 address, not '" + value + "'");
        }
    }

    private static Path plot(final String value) {
        if (!value.toLowerCase(Locale.ROOT).endsWith(".png") || value.length() == ".png".length()) {
            throw new IllegalArgumentException("--plot takes the name of a .png file, not '" + value + "'");
        }
        return Path.of(value);
    }

    /**
     * A comma-separated list without empty entries or repeats, each parsed by {@code element}.
     */
    static <T> List<T> list(final String name, final String value, final Function<String, T> element) {
        final List<T> list = new ArrayList<>();
        for (final String word : value.split(",", -1)) {
            if (word.isBlank()) {
                throw new IllegalArgumentException(name + " takes a comma-separated list without empty entries, not '"
                    + value + "'");
            }
            final T parsed;
            try {
                parsed = element.apply(word.trim());
            } catch (final IllegalArgumentException ex) {
                throw new IllegalArgumentException(ex.getMessage().startsWith(name) ? ex.getMessage()
                    : name + ": " + ex.getMessage());
            }
            if (list.contains(parsed)) {
                throw new IllegalArgumentException(name + " names " + word.trim() + " twice");
            }
            list.add(parsed);
        }
        return List.copyOf(list);
    }

    /**
     * A whole number from {@code min} to {@code max}; with {@code suffixes}, k, m, g or t multiply by powers of 1024.
     */
    static long number(final String name, final String value, final long min, final long max,
        final boolean suffixes) {
        final int suffix = value.isEmpty() || !suffixes ? -1
            : SIZE_SUFFIXES.indexOf(Character.toLowerCase(value.charAt(value.length() - 1)));
        final int shift = 10 * (suffix + 1);
        final long parsed;
        try {
            parsed = Long.parseLong(suffix < 0 ? value : value.substring(0, value.length() - 1));
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException(name + " takes a whole number" + (suffixes
                ? " with an optional suffix k, m, g or t" : "") + ", not '" + value + "'");
        }
        if (parsed < 0 || parsed > max >> shift || parsed << shift < min) {
            throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ", not '" + value
                + "'");
        }
        return parsed << shift;
    }
}
