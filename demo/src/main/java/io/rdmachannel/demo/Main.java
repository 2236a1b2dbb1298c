package io.rdmachannel.demo;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.nio.RdmaSelectorProvider;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.channels.spi.SelectorProvider;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * The rdmachannel demo: a selector-based echo server over {@code RdmaServerSocketChannel} in this JVM, and a client
 * of it in a second JVM (this class with {@code --client}) that times a ping-pong and streams a checked bulk
 * transfer on each of its {@code RdmaSocketChannel}s. {@code --verbs} runs the {@link VerbsDemo} instead.
 */
public final class Main {
    private static final String USAGE = """
        usage: ./rdmachannel demo [--connections N] [--iterations N] [--bytes N] [--timeout SECONDS]
               ./rdmachannel demo --verbs [options of the verbs demo, see --verbs --help]

        Starts an echo server (one RdmaServerSocketChannel and one Selector, non-blocking) over the default RDMA
        provider (the embedded shm provider when there is no RDMA hardware), and the same server over the JDK's TCP
        channels on the loopback, then a second JVM as their client. The client runs the workload over RDMA, then
        the same workload over TCP, and prints both and the ratios. Each time it opens its connections and runs
        them concurrently, each in blocking mode:
          ping-pong  N round trips of a 64-byte message after a warm-up of up to 10000, each timed;
          bulk       N bytes streamed to the server and echoed back, checked with a CRC32C;
        then shuts down output and reads to the end of the stream.

        options:
          --connections N     client connections, 1 to 64 (default 4)
          --iterations N      timed round trips per connection, 1 to 100000000 (default 10000)
          --bytes N           bulk bytes per connection, 0 to 1T; suffixes k, m, g, t (x1024) (default 64m)
          --timeout SECONDS   stop the client and fail after this long, 1 to 86400 (default 300)
          --verbs             run the verbs demo (RDMA WRITEs on raw queue pairs) instead
          --help              show this text
        """;
    private static final String CLIENT = "--client";
    private static final String TCP = "--tcp";
    private static final int MAX_WARM_UP = 10_000;
    private static final long POLL_MILLIS = 100;
    private Main() {
    }

    /**
     * What the command line asked for; {@code server} is set in the client JVM only.
     */
    record Options(int connections, int iterations, long bytes, int timeoutSeconds, InetSocketAddress server,
        InetSocketAddress tcpServer) {
        int warmUp() {
            return Math.min(MAX_WARM_UP, iterations);
        }
    }

    /**
     * Run the demo; exit status 0 on success, 1 on failure, 2 on bad arguments.
     *
     * @param args the options, see {@code --help}.
     */
    public static void main(final String[] args) {
        if (Arrays.asList(args).contains("--verbs")) {
            VerbsDemo.main(Arrays.stream(args).filter(arg -> !arg.equals("--verbs")).toArray(String[]::new));
            return;
        }
        final Options options;
        try {
            options = parse(args);
        } catch (final IllegalArgumentException ex) {
            System.err.println("rdmachannel demo: " + ex.getMessage() + " (try --help)");
            System.exit(2);
            return;
        }
        if (options == null) {
            System.out.print(USAGE);
            return;
        }
        final String role = options.server() == null ? "server" : "client";
        try {
            final boolean ok = options.server() == null ? runServer(options) : runClient(options);
            System.exit(ok ? 0 : 1);
        } catch (final Exception ex) {
            System.err.println(role + ": failed: " + ex);
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
        int connections = 4;
        int iterations = 10_000;
        long bytes = 64L << 20;
        int timeoutSeconds = 300;
        InetSocketAddress server = null;
        InetSocketAddress tcpServer = null;
        for (int i = 0; i < args.length; i++) {
            final String arg = args[i];
            final int equals = arg.indexOf('=');
            final String name = equals < 0 ? arg : arg.substring(0, equals);
            if (name.equals("--help") || name.equals("-h")) {
                return null;
            }
            if (!List.of("--connections", "--iterations", "--bytes", "--timeout", CLIENT, TCP).contains(name)) {
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
            switch (name) {
                case "--connections" -> connections = (int) number(name, value, 1, 64);
                case "--iterations" -> iterations = (int) number(name, value, 1, 100_000_000);
                case "--bytes" -> bytes = number(name, value, 0, 1L << 40);
                case "--timeout" -> timeoutSeconds = (int) number(name, value, 1, 86_400);
                case TCP -> tcpServer = address(value);
                default -> server = address(value);
            }
        }
        return new Options(connections, iterations, bytes, timeoutSeconds, server, tcpServer);
    }

    private static long number(final String name, final String value, final long min, final long max) {
        final String suffixes = "kmgt";
        final int shift = value.isEmpty() || !name.equals("--bytes") ? 0
            : 10 * (suffixes.indexOf(Character.toLowerCase(value.charAt(value.length() - 1))) + 1);
        final long parsed;
        try {
            parsed = Long.parseLong(shift == 0 ? value : value.substring(0, value.length() - 1));
        } catch (final NumberFormatException ex) {
            throw new IllegalArgumentException(name + " takes a whole number" + (name.equals("--bytes")
                ? " with an optional suffix k, m, g or t" : "") + ", not '" + value + "'");
        }
        if (parsed < min || parsed > max >> shift) {
            throw new IllegalArgumentException(name + " must be between " + min + " and " + max + ": " + value);
        }
        return parsed << shift;
    }

    private static InetSocketAddress address(final String value) {
        final int colon = value.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException(CLIENT + " takes HOST:PORT, not '" + value + "'");
        }
        return new InetSocketAddress(value.substring(0, colon), (int) number(CLIENT, value.substring(colon + 1), 1,
            65_535));
    }

    // ----- the first JVM: the echo server -----

    private static boolean runServer(final Options options) throws IOException, InterruptedException {
        final InetSocketAddress loopback = new InetSocketAddress("127.0.0.1", 0);
        try (EchoServer rdma = EchoServer.open(RdmaSelectorProvider.provider(), loopback);
            EchoServer tcp = EchoServer.open(RdmaSelectorProvider.platformProvider(), loopback)) {
            System.out.printf("provider: %s, through %s%n", RdmaProviders.defaultProvider().name(),
                RdmaSelectorProvider.provider());
            System.out.printf("server: pid %d, listening on %s over RDMA and on %s over the JDK's TCP, one selector"
                + " thread each (non-blocking)%n", ProcessHandle.current().pid(), rdma.address(), tcp.address());
            final Process client = startClient(options, rdma.address(), tcp.address());
            final Thread tcpThread = Thread.ofPlatform().name("tcp-echo-server").start(() -> serve(tcp, client));
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(options.timeoutSeconds());
            while (client.isAlive()) {
                if (System.nanoTime() - deadline > 0) {
                    timeOut(client, rdma, options);
                    tcpThread.join();
                    return false;
                }
                rdma.poll(POLL_MILLIS);
            }
            tcpThread.join();
            final boolean ok = report("rdma", rdma, options) & report("tcp", tcp, options) && client.exitValue() == 0;
            System.out.printf("client: exited with status %d%n", client.exitValue());
            System.out.printf("shutdown: %s; server channels, selectors and %s closed%n", ok ? "clean" : "FAILED",
                count(rdma.served() + tcp.served(), "connection"));
            return ok;
        }
    }

    /**
     * Serve until the client process ends (the TCP server's thread).
     */
    private static void serve(final EchoServer server, final Process client) {
        try {
            while (client.isAlive()) {
                server.poll(POLL_MILLIS);
            }
        } catch (final IOException ex) {
            System.err.println("server: the TCP echo server failed: " + ex);
        }
    }

    private static boolean report(final String transport, final EchoServer server, final Options options) {
        final List<String> open = server.openConnections();
        System.out.printf(Locale.ROOT, "server: %s: accepted %s, served %d to the end of stream, %d failed;"
            + " echoed %,d bytes; waited for OP_WRITE %s (partial writes)%n", transport,
            count(server.accepted(), "connection"), server.served(), server.failed(), server.bytesEchoed(),
            count(server.writeWaits(), "time"));
        open.forEach(state -> System.out.println("server: " + transport + ": still open: " + state));
        return server.failed() == 0 && open.isEmpty() && server.served() == options.connections();
    }

    private static Process startClient(final Options options, final InetSocketAddress server,
        final InetSocketAddress tcpServer) throws IOException {
        // The client gives up a little before the server, so that it reports its own state.
        final int clientTimeout = Math.max(1, options.timeoutSeconds() * 9 / 10);
        final List<String> command = JavaCommand.of(Main.class, List.of(
            CLIENT, server.getHostString() + ":" + server.getPort(),
            TCP, tcpServer.getHostString() + ":" + tcpServer.getPort(),
            "--connections", Integer.toString(options.connections()),
            "--iterations", Integer.toString(options.iterations()),
            "--bytes", Long.toString(options.bytes()),
            "--timeout", Integer.toString(clientTimeout)));
        return new ProcessBuilder(command).inheritIO().start();
    }

    private static void timeOut(final Process client, final EchoServer server, final Options options)
        throws IOException, InterruptedException {
        System.err.printf("server: TIMEOUT: the client (pid %d) did not finish within %d s; its threads:%n",
            client.pid(), options.timeoutSeconds());
        final Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        final Process dump = new ProcessBuilder(jcmd.toString(), Long.toString(client.pid()), "Thread.print")
            .inheritIO().start();
        if (!dump.waitFor(30, TimeUnit.SECONDS)) {
            dump.destroyForcibly();
        }
        server.openConnections().forEach(state -> System.err.println("server: open: " + state));
        client.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        System.err.println("server: killed the client; shutdown FAILED");
    }

    // ----- the second JVM: the client -----

    private static boolean runClient(final Options options) throws IOException, InterruptedException {
        System.out.printf(Locale.ROOT, "client: pid %d, %s to %s over RDMA, then to %s over TCP, each: %d round"
            + " trips of %d bytes after %d warm-up ones, then %s echoed%n", ProcessHandle.current().pid(),
            count(options.connections(), "connection"), options.server(), options.tcpServer(), options.iterations(),
            EchoClient.MESSAGE_SIZE, options.warmUp(), size(options.bytes()));
        final List<EchoClient.Result> rdma = runWorkload(options, RdmaSelectorProvider.provider(), options.server());
        if (rdma == null) {
            return false;
        }
        final ClientReport.Summary rdmaSummary = ClientReport.print("rdma", rdma);
        if (options.tcpServer() == null) {
            return true;
        }
        final List<EchoClient.Result> tcp = runWorkload(options, RdmaSelectorProvider.platformProvider(),
            options.tcpServer());
        if (tcp == null) {
            return false;
        }
        ClientReport.compare(rdmaSummary, ClientReport.print("tcp", tcp));
        return true;
    }

    /**
     * Run the workload on every connection at once over the channels of {@code provider}.
     *
     * @return the results, or null if a connection failed or the time ran out.
     */
    private static List<EchoClient.Result> runWorkload(final Options options, final SelectorProvider provider,
        final InetSocketAddress server) throws IOException, InterruptedException {
        final List<EchoClient> clients = new ArrayList<>();
        final ExecutorService threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().name("echo-client-",
            1).factory());
        try {
            for (int id = 1; id <= options.connections(); id++) {
                clients.add(EchoClient.connect(id, provider, server));
            }
            final List<Future<EchoClient.Result>> results = new ArrayList<>();
            for (final EchoClient client : clients) {
                results.add(threads.submit(() -> client.run(options.warmUp(), options.iterations(),
                    options.bytes())));
            }
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(options.timeoutSeconds());
            final List<EchoClient.Result> done = new ArrayList<>();
            for (final Future<EchoClient.Result> result : results) {
                try {
                    done.add(result.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS));
                } catch (final ExecutionException ex) {
                    System.err.println("client: " + ex.getCause().getMessage());
                    ex.getCause().printStackTrace();
                } catch (final TimeoutException ex) {
                    reportTimeout(options, clients);
                    return null;
                }
            }
            return done.size() == clients.size() ? done : null;
        } finally {
            for (final EchoClient client : clients) {
                client.close();
            }
            threads.shutdownNow();
            System.out.printf("client: closed %s to %s%n", count(clients.size(), "connection"), server);
        }
    }

    private static void reportTimeout(final Options options, final List<EchoClient> clients) {
        System.err.printf("client: TIMEOUT after %d s; connections and threads:%n", options.timeoutSeconds());
        clients.forEach(client -> System.err.println("client: " + client.describe()));
        for (final Map.Entry<Thread, StackTraceElement[]> thread : Thread.getAllStackTraces().entrySet()) {
            if (thread.getKey().getName().startsWith("echo-client-")) {
                System.err.println("\"" + thread.getKey().getName() + "\" " + thread.getKey().getState());
                Arrays.stream(thread.getValue()).forEach(frame -> System.err.println("    at " + frame));
            }
        }
    }

    static String count(final long count, final String noun) {
        return count + " " + noun + (count == 1 ? "" : "s");
    }

    static String size(final long bytes) {
        final String[] units = {"bytes", "KiB", "MiB", "GiB", "TiB"};
        int unit = 0;
        while (unit + 1 < units.length && bytes != 0 && bytes % (1L << (10 * (unit + 1))) == 0) {
            unit++;
        }
        return (bytes >> (10 * unit)) + " " + units[unit];
    }
}
