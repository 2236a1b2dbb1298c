package io.rdmachannel.channel.shm;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A running {@link ShmProcessChild}: a second JVM with the test's java, class path, JVM flags and shm directory,
 * talked to line by line over its stdin and stdout; its stderr goes to a file that {@link #dump()} shows.
 */
final class ShmChildProcess implements AutoCloseable {
    private static final String END_OF_STREAM = "\u0000eof";
    private static final long REPLY_TIMEOUT_SECONDS = 60;

    private final Process process;
    private final Path errorFile;
    private final PrintStream in;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final Deque<String> recent = new ArrayDeque<>();

    private ShmChildProcess(final Process process, final Path errorFile) {
        this.process = process;
        this.errorFile = errorFile;
        this.in = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("shm-child-" + process.pid()).start(this::readLines);
    }

    /**
     * Start a child whose peer has a region of {@code regionLength} bytes, in the shm directory {@code directory}.
     */
    static ShmChildProcess start(final Path directory, final long regionLength) throws IOException {
        return start(directory, ShmProcessChild.class, Long.toString(regionLength));
    }

    /**
     * Start a child JVM running {@code mainClass} with {@code arguments}, in the shm directory {@code directory}.
     */
    static ShmChildProcess start(final Path directory, final Class<?> mainClass, final String... arguments)
        throws IOException {
        final List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        command.addAll(List.of("--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
            "--enable-native-access=ALL-UNNAMED", "-XX:+UseSerialGC",
            "-D" + ShmConfiguration.DIRECTORY_PROP_NAME + "=" + directory,
            "-cp", System.getProperty("java.class.path"), mainClass.getName()));
        command.addAll(List.of(arguments));
        final Path errorFile = Files.createTempFile("shm-child", ".err");
        final Process process = new ProcessBuilder(command).redirectError(errorFile.toFile()).start();
        return new ShmChildProcess(process, errorFile);
    }

    private void readLines() {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(),
            StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                lines.add(line);
            }
        } catch (final IOException ignore) {
            // the child is gone: the end marker below says so
        }
        lines.add(END_OF_STREAM);
    }

    Process process() {
        return process;
    }

    void send(final String line) {
        in.println(line);
    }

    /**
     * Close the child's stdin: a child that reads the end of it closes everything and exits 0.
     */
    void endInput() {
        in.close();
    }

    /**
     * Send a command and return its reply, which must start with {@code prefix}.
     */
    String command(final String line, final String prefix) {
        send(line);
        return expect(prefix);
    }

    /**
     * The next line from the child, which must start with {@code prefix}.
     */
    String expect(final String prefix) {
        final String line;
        try {
            line = lines.poll(REPLY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for '" + prefix + "' from the child");
        }
        if (line == null || END_OF_STREAM.equals(line)) {
            throw new IllegalStateException((line == null ? "no reply" : "end of stream") + " where '" + prefix
                + "' was expected from the child");
        }
        synchronized (recent) {
            recent.add(line);
            if (recent.size() > 8) {
                recent.removeFirst();
            }
        }
        if (!line.startsWith(prefix)) {
            throw new IllegalStateException("the child replied '" + line + "' where '" + prefix + "' was expected");
        }
        return line;
    }

    /**
     * The value of {@code key=} in a reply line.
     */
    static String value(final String line, final String key) {
        for (final String word : line.split(" ")) {
            if (word.startsWith(key + "=")) {
                return word.substring(key.length() + 1);
            }
        }
        throw new IllegalArgumentException("no " + key + "= in '" + line + "'");
    }

    int awaitExit() throws InterruptedException {
        if (!process.waitFor(REPLY_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the child did not exit within " + REPLY_TIMEOUT_SECONDS + " s");
        }
        return process.exitValue();
    }

    /**
     * Describe the child for a failure report: a live child is first asked to print its state (SIGTERM runs its
     * shutdown hook).
     */
    String dump() {
        if (process.isAlive()) {
            process.destroy();
            try {
                process.waitFor(5, TimeUnit.SECONDS);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
        String errors;
        try {
            errors = Files.readString(errorFile);
        } catch (final IOException ex) {
            errors = "(cannot read " + errorFile + ": " + ex + ")";
        }
        synchronized (recent) {
            return "child pid=" + process.pid() + ", alive=" + process.isAlive() + ", exit="
                + (process.isAlive() ? "none" : Integer.toString(process.exitValue())) + ", last replies=" + recent
                + ", stderr:\n" + errors;
        }
    }

    @Override
    public void close() throws IOException {
        in.close();
        if (process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(REPLY_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (final InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
        Files.deleteIfExists(errorFile);
    }
}
