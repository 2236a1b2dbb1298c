package io.rdmachannel.demo.bench;

import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.io.PrintStream;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;

/**
 * One run of the benchmark in the client JVM: start the server, measure every combination one after the other on a
 * thread of its own (so that a hung one can be reported and left behind), then print and plot the results.
 */
final class BenchRun {
    private static final String CLIENT_THREAD = "bench-client";
    /** How long the server may take to tell its compilation time, which it reads at once. */
    private static final long ANSWER_MILLIS = 30_000;

    private final BenchOptions options;
    private final PrintStream out;
    private final PrintStream err;
    private final List<BenchResult> results = new ArrayList<>();
    private final List<String> failures = new ArrayList<>();
    private final AtomicReference<BenchClient> current = new AtomicReference<>();
    private ExecutorService executor;
    private ProgressLine progress;

    BenchRun(final BenchOptions options, final PrintStream out, final PrintStream err) {
        this.options = options;
        this.out = out;
        this.err = err;
    }

    int run() throws IOException {
        final String provider = options.transports().contains(Transport.RDMA) ? rdmaProvider() : null;
        if (options.transports().contains(Transport.RDMA) && provider == null) {
            return 1;
        }
        final int total = options.transports().size() * options.modes().size() * options.workloads().size()
            * options.sizes().size();
        progress = new ProgressLine(err, ProgressLine.isTerminal(), total);
        executor = newExecutor();
        try (ServerProcess server = ServerProcess.start(options.transports(), options.address())) {
            err.println("bench: server " + server.readyLine() + "; client pid " + ProcessHandle.current().pid()
                + (provider == null ? "" : ", provider " + provider) + "; " + total + " measurements");
            warmUpJvms(server);
            // the transports of one mode, test and size are measured one right after the other, so the ratios
            // between them see the same machine (load drifts over a long run)
            int index = 0;
            for (final Mode mode : options.modes()) {
                for (final Workload workload : options.workloads()) {
                    for (final int size : options.sizes()) {
                        for (final Transport transport : options.transports()) {
                            measure(++index, server, new Combination(transport, transport == Transport.RDMA
                                ? (options.registered() ? provider + "+registered" : provider) : null, mode,
                                workload, size));
                        }
                    }
                }
            }
        } finally {
            executor.shutdownNow();
        }
        if (!options.json()) {
            final List<BenchResult> byTransport = new ArrayList<>(results);
            byTransport.sort(Comparator.comparingInt(result -> Transport.of(result.transport()).ordinal()));
            out.print(ResultFormat.table(byTransport));
            out.print(ResultFormat.ratios(results));
            out.print(ResultFormat.phases(byTransport));
        }
        out.flush();
        if (options.plot() != null && !results.isEmpty()) {
            BenchPlot.write(results, options.plot());
            err.println("bench: plotted into " + options.plot());
        }
        if (!failures.isEmpty()) {
            err.println("bench: " + failures.size() + " of " + total + " measurements FAILED:");
            failures.forEach(failure -> err.println("bench:   " + failure));
            return 1;
        }
        return 0;
    }

    /**
     * The name of the RDMA provider the channels will use, or null (said on stderr) when it cannot run here.
     */
    private String rdmaProvider() {
        try {
            final RdmaProvider provider = RdmaProviders.defaultProvider();
            provider.ensureAvailability();
            return provider.name();
        } catch (final RuntimeException ex) {
            err.println("rdmachannel bench: the rdma transport cannot run here: " + ex.getMessage()
                + "; try --provider shm, or leave rdma out of --transport");
            return null;
        }
    }

    /**
     * What one measurement measures.
     */
    record Combination(Transport transport, String provider, Mode mode, Workload workload, int size) {
        String describe() {
            return transport.label() + (provider == null ? "" : "/" + provider) + " " + mode.label() + " "
                + workload.label() + " " + ResultFormat.size(size);
        }
    }

    /**
     * One untimed latency run (and bandwidth run, when bandwidth is measured) of each transport and mode at the
     * smallest size, results dropped, then a wait for both JVMs' JIT compilers to go quiet ({@link JitQuiet}): the
     * per-measurement warm-up ({@code --warmup}) warms a connection, this warms both JVMs, so that whichever
     * transport is measured first does not pay alone for the JIT compiling the code they share (the benchmark's loops,
     * the server) and its own first compilations, and no measurement shares the CPU with compilations still queued.
     */
    private void warmUpJvms(final ServerProcess server) {
        final int size = options.sizes().stream().mapToInt(Integer::intValue).min().orElseThrow();
        final List<Workload> workloads = new ArrayList<>(List.of(Workload.LATENCY));
        if (options.workloads().contains(Workload.BANDWIDTH)) {
            workloads.add(Workload.BANDWIDTH);
        }
        err.println("bench: warming up both JVMs: an untimed " + (workloads.size() > 1 ? "latency and bandwidth"
            : "latency") + " run of each transport and mode at " + size + " bytes");
        for (final Mode mode : options.modes()) {
            for (final Transport transport : options.transports()) {
                for (final Workload workload : workloads) {
                    warmUp(server, new Combination(transport, null, mode, workload, size));
                }
            }
        }
        awaitJitQuiet(server);
    }

    /**
     * Wait until the JIT compilers of both JVMs are quiet: this one's, and the server's, which it reports on request.
     */
    private void awaitJitQuiet(final ServerProcess server) {
        final CompilationMXBean compiler = ManagementFactory.getCompilationMXBean();
        if (compiler == null || !compiler.isCompilationTimeMonitoringSupported()) {
            return;
        }
        final LongSupplier compiling = () -> compiler.getTotalCompilationTime() + serverCompileMillis(server);
        final long waited = JitQuiet.await(compiling, () -> TimeUnit.NANOSECONDS.toMillis(System.nanoTime()),
            Sleeps::sleep, JitQuiet.LIMIT_MILLIS);
        err.println(waited < 0
            ? "bench: the JIT compilers are still busy after " + JitQuiet.LIMIT_MILLIS / 1000 + " s; measuring anyway"
            : "bench: the JIT compilers of both JVMs went quiet after " + waited + " ms (" + compiling.getAsLong()
                + " ms compiling so far)");
    }

    /**
     * The server JVM's total compilation time in ms; 0 where it does not measure it (the wait is then for this JVM's
     * compilers alone).
     */
    private static long serverCompileMillis(final ServerProcess server) {
        try {
            return Math.max(0, Long.parseLong(server.request(BenchServer.COMPILE_MILLIS, ANSWER_MILLIS)));
        } catch (final IOException | NumberFormatException ex) {
            throw new IllegalStateException("the server did not tell its compilation time: " + ex.getMessage(), ex);
        }
    }

    private void warmUp(final ServerProcess server, final Combination combination) {
        // a bandwidth warm-up writes --warmup messages (at most as many as a measurement), untimed twice over
        final long messages = Math.min(options.bandwidthMessages(combination.size()), Math.max(1, options.warmUp()));
        final Future<BenchResult> future = executor.submit(task(server.address(combination.transport()),
            combination, messages));
        try {
            future.get(options.timeoutSeconds(), TimeUnit.SECONDS);
        } catch (final ExecutionException | TimeoutException ex) {
            // the measurements of this transport will fail or hang the same way and be reported
            future.cancel(true);
            err.println("bench: warm-up of " + combination.describe() + " failed: " + ex);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ex);
        }
    }

    private void measure(final int index, final ServerProcess server, final Combination combination) {
        progress.begin(index, combination.describe());
        final Future<BenchResult> future = executor.submit(task(server.address(combination.transport()),
            combination, options.bandwidthMessages(combination.size())));
        try {
            final BenchResult result = future.get(options.timeoutSeconds(), TimeUnit.SECONDS);
            results.add(result);
            progress.end(result.p50Us() != null
                ? String.format(Locale.ROOT, "p50 %.1f us, p99 %.1f us", result.p50Us(), result.p99Us())
                : String.format(Locale.ROOT, "%.1f MB/s, %.0f msgs/s", result.mbPerS(), result.msgsPerS()));
            if (options.json()) {
                out.println(ResultFormat.json(result));
                out.flush();
            }
        } catch (final ExecutionException ex) {
            progress.end("FAILED: " + ex.getCause());
            ex.getCause().printStackTrace(err);
            failures.add(combination.describe() + ": " + ex.getCause());
        } catch (final TimeoutException ex) {
            progress.end("HUNG: no result within " + options.timeoutSeconds() + " s");
            reportHung(server, combination);
            failures.add(combination.describe() + ": no result within " + options.timeoutSeconds() + " s");
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ex);
        }
    }

    private Callable<BenchResult> task(final String address, final Combination combination, final long messages) {
        final int size = combination.size();
        final boolean latency = combination.workload() == Workload.LATENCY;
        final long warmUpMessages = Math.min(options.warmUp(), messages);
        final SessionHeader header = new SessionHeader(combination.workload(), combination.mode(), size,
            options.busyPollMicros(), latency ? options.warmUp() : warmUpMessages * size,
            latency ? options.iterations() : messages * size);
        if (combination.workload() == Workload.CHURN) {
            return () -> churn(address, combination);
        }
        return () -> {
            try (BenchClient client = BenchClient.connect(combination.transport(), address, header,
                progress::update, options.registered())) {
                current.set(client);
                final String transport = combination.transport().label();
                final String mode = combination.mode().label();
                final BenchResult result = latency
                    ? BenchResult.latency(transport, combination.provider(), mode, size,
                        client.pingPong(size, options.warmUp(), options.iterations()))
                    : BenchResult.bandwidth(transport, combination.provider(), mode, size, messages,
                        client.stream(size, warmUpMessages, messages));
                if (options.stats()) {
                    client.statistics().ifPresent(statistics -> err.println("bench: " + combination.describe()
                        + ": client connection " + statistics));
                }
                return result;
            } finally {
                current.set(null);
            }
        };
    }

    /**
     * Churn: {@code --warmup} (at most as many as timed) untimed cycles, then {@code --iterations} timed
     * ones, each a new connection with one echo of a {@code size}-byte message.
     */
    private BenchResult churn(final String address, final Combination combination) throws IOException {
        final int size = combination.size();
        final SessionHeader header = new SessionHeader(Workload.CHURN, combination.mode(), size,
            options.busyPollMicros(), 0, 1);
        // the connection set-up runs code no latency warm-up reaches; the JIT kept compiling it for seconds after
        // a thousand cycles, and steady figures came after several thousand
        final int warmUp = Math.min(options.warmUp(), options.iterations());
        final ByteBuffer message = ByteBuffer.allocateDirect(size);
        BenchClient.cycles(combination.transport(), address, header, message, warmUp, null);
        final ChurnPhases.Recorder cycles = new ChurnPhases.Recorder(options.iterations());
        final long start = System.nanoTime();
        BenchClient.cycles(combination.transport(), address, header, message, cycles.cycles(), cycles);
        final long total = System.nanoTime() - start;
        return BenchResult.churn(combination.transport().label(), combination.provider(), combination.mode().label(),
            size, cycles.cycleNanos(), total, cycles.phases());
    }

    /**
     * Dump the hung measurement's connection and both JVMs' threads to stderr, then close the connection and move
     * on with a new client thread (the old one may stay stuck).
     */
    private void reportHung(final ServerProcess server, final Combination combination) {
        final BenchClient client = current.get();
        err.println("bench: HUNG: " + combination.describe() + "; client connection: "
            + (client == null ? "not connected" : client.describe()));
        for (final Map.Entry<Thread, StackTraceElement[]> thread : Thread.getAllStackTraces().entrySet()) {
            if (thread.getKey().getName().startsWith(CLIENT_THREAD)
                || thread.getKey().getName().startsWith("rdma")) {
                err.println("\"" + thread.getKey().getName() + "\" " + thread.getKey().getState());
                Arrays.stream(thread.getValue()).forEach(frame -> err.println("    at " + frame));
            }
        }
        err.println("bench: the server's threads (pid " + server.pid() + "):");
        server.dumpThreads();
        if (client != null) {
            try {
                client.close();
            } catch (final IOException ex) {
                err.println("bench: closing the hung connection failed: " + ex);
            }
        }
        executor.shutdownNow();
        executor = newExecutor();
    }

    private static ExecutorService newExecutor() {
        return Executors.newSingleThreadExecutor(Thread.ofPlatform().daemon().name(CLIENT_THREAD).factory());
    }
}
