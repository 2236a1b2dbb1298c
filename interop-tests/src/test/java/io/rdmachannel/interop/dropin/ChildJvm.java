package io.rdmachannel.interop.dropin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A program in a child JVM: this JVM's {@code java}, class path and rdmachannel JVM flags, with or without
 * rdmachannel installed as the JVM-wide provider, talked to over its stdout lines; its stderr (which carries
 * rdmachannel's DEBUG lines in drop-in JVMs) goes to a file. Closing it ends its stdin, then destroys it.
 */
public final class ChildJvm implements AutoCloseable {
    static final String PROVIDER_PROPERTY = "java.nio.channels.spi.SelectorProvider";
    static final String RDMA_PROVIDER = "io.rdmachannel.nio.RdmaSelectorProvider";
    /** System properties of this JVM that children inherit (which verbs provider, where shm lives, ...). */
    private static final List<String> INHERITED = List.of("rdmachannel.provider", "rdmachannel.cm",
        "rdmachannel.shm.dir", "rdmachannel.rdma_cm.connectTimeoutMillis", "rdmachannel.fallback.timeoutMillis");
    private static final String END = "\u0000end";
    /** rdmachannel's lifecycle lines at DEBUG, through the test class path's SLF4J binding (slf4j-simple: stderr). */
    private static final String DEBUG_LOGGING = "org.slf4j.simpleLogger.log.io.rdmachannel=debug";

    private final String name;
    private final Process process;
    private final Path errors;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> seen = Collections.synchronizedList(new ArrayList<>());

    private ChildJvm(final String name, final Process process, final Path errors) {
        this.name = name;
        this.process = process;
        this.errors = errors;
        Thread.ofPlatform().daemon().name("child-" + name).start(this::readLines);
    }

    /**
     * Start {@code main} with {@code args}.
     *
     * @param dropIn whether rdmachannel is the child's JVM-wide provider.
     * @param properties more {@code -D} settings ({@code name=value}); they come last, so they override.
     */
    public static ChildJvm start(final Class<?> main, final boolean dropIn, final List<String> properties,
        final String... args) throws IOException {
        return start(main, dropIn, properties, List.of("-XX:TieredStopAtLevel=1"), args);
    }

    /**
     * Start {@code main} with {@code args} and JVM options of its own ({@code -XX:...}) in place of the default
     * quick-start ones.
     */
    static ChildJvm start(final Class<?> main, final boolean dropIn, final List<String> properties,
        final List<String> jvmOptions, final String... args) throws IOException {
        final List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        command.addAll(List.of("--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED", "--add-exports",
            "java.base/sun.nio.ch=ALL-UNNAMED", "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC",
            "-Xshare:auto"));
        command.addAll(jvmOptions);
        if (dropIn) {
            command.add("-D" + PROVIDER_PROPERTY + "=" + RDMA_PROVIDER);
            command.add("-D" + DEBUG_LOGGING);
        }
        for (final String inherited : INHERITED) {
            final String value = System.getProperty(inherited);
            if (value != null) {
                command.add("-D" + inherited + "=" + value);
            }
        }
        for (final String property : properties) {
            command.add("-D" + property);
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(args));
        final Path errors = Files.createTempFile("dropin-" + main.getSimpleName(), ".err");
        final Process process = new ProcessBuilder(command).redirectError(errors.toFile()).start();
        return new ChildJvm(main.getSimpleName() + (dropIn ? "[drop-in]" : "[jdk]"), process, errors);
    }

    private void readLines() {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(),
            StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                seen.add(line);
                lines.add(line);
            }
        } catch (final IOException ignore) {
            // the child is gone: the end marker says so
        }
        lines.add(END);
    }

    /**
     * The next line that starts with {@code prefix}, skipping others.
     *
     * @throws AssertionError with this child's output if none comes within {@code seconds}.
     */
    public String expect(final String prefix, final long seconds) throws InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            final String line = lines.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (line == null || END.equals(line)) {
                throw new AssertionError((line == null ? "no line" : "end of output") + " where '" + prefix
                    + "' was expected from " + describe());
            }
            if (line.startsWith(prefix)) {
                return line;
            }
        }
    }

    /**
     * Write {@code line} to the child's stdin.
     */
    void send(final String line) throws IOException {
        process.getOutputStream().write((line + "\n").getBytes(StandardCharsets.UTF_8));
        process.getOutputStream().flush();
    }

    /**
     * Wait for the child to exit.
     *
     * @return its exit status.
     * @throws AssertionError with its output if it does not exit within {@code seconds}.
     */
    int awaitExit(final long seconds) throws InterruptedException {
        if (!process.waitFor(seconds, TimeUnit.SECONDS)) {
            throw new AssertionError("did not exit within " + seconds + " s: " + describe());
        }
        return process.exitValue();
    }

    /**
     * Kill the child with SIGKILL, as a crash would end it, and wait until it is gone.
     */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(10, TimeUnit.SECONDS)) {
            throw new AssertionError("still alive 10 s after SIGKILL: " + describe());
        }
    }

    /**
     * What the child wrote on stderr so far.
     */
    String errors() {
        try {
            return Files.readString(errors);
        } catch (final IOException ex) {
            return "(stderr unreadable: " + ex + ")";
        }
    }

    /**
     * The child's name, output and stderr, for failure messages.
     */
    public String describe() {
        final List<String> output;
        synchronized (seen) {
            output = List.copyOf(seen);
        }
        return name + " (pid " + process.pid() + ", " + (process.isAlive() ? "running" : "exit "
            + process.exitValue()) + ")\n--- stdout:\n" + String.join("\n", output) + "\n--- stderr:\n" + errors();
    }

    @Override
    public void close() throws IOException {
        try {
            process.getOutputStream().close();
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (final InterruptedException ex) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        } finally {
            Files.deleteIfExists(errors);
        }
    }
}
