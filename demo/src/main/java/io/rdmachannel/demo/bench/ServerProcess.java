package io.rdmachannel.demo.bench;

import io.rdmachannel.demo.JavaCommand;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.UnaryOperator;

/**
 * The server of a benchmark ({@link BenchServer}, {@link ScaleServer}) in a second JVM, started the way
 * {@code ./rdmachannel} started this one: the same {@code java} ({@code RDMACHANNEL_JAVA}), JVM flags
 * ({@code RDMACHANNEL_JVM_FLAGS}), {@code rdmachannel.*} system properties and class path.
 */
final class ServerProcess implements AutoCloseable {
    private final Process process;
    private final BufferedReader lines;
    private final Map<Transport, String> addresses;
    private final String ready;

    private ServerProcess(final Process process, final BufferedReader lines, final Map<Transport, String> addresses,
        final String ready) {
        this.process = process;
        this.lines = lines;
        this.addresses = addresses;
        this.ready = ready;
    }

    /**
     * Start the server on {@code transports}, listening on {@code address} (the loopback when null), and wait for
     * its addresses.
     *
     * @throws IOException when it exits before it is ready (other lines before the addresses go to stderr).
     */
    static ServerProcess start(final List<Transport> transports, final InetAddress address) throws IOException {
        final List<String> arguments = new ArrayList<>();
        arguments.add(String.join(",", transports.stream().map(Transport::label).toList()));
        if (address != null) {
            arguments.add(address.getHostAddress());
        }
        return start(BenchServer.class, arguments);
    }

    /**
     * Start {@code main} with {@code arguments}: a server that prints {@code listen TRANSPORT ADDRESS} per transport
     * and then its ready line on stdout, as {@link BenchServer} does, and stops when its stdin ends.
     *
     * @throws IOException when it exits before it is ready (other lines before the addresses go to stderr).
     */
    static ServerProcess start(final Class<?> main, final List<String> arguments) throws IOException {
        final Process process = new ProcessBuilder(JavaCommand.of(main, arguments))
            .redirectError(ProcessBuilder.Redirect.INHERIT).start();
        try {
            final BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(),
                StandardCharsets.UTF_8));
            final Map<Transport, String> addresses = new EnumMap<>(Transport.class);
            String line;
            while ((line = lines.readLine()) != null && !line.startsWith(BenchServer.READY)) {
                final String[] words = line.split(" ", 3);
                if (words.length != 3 || !words[0].equals(BenchServer.LISTEN)) {
                    // not the server's: a JVM agent's (a profiler's, JFR's "Started recording") goes on to stderr
                    System.err.println("server: " + line);
                    continue;
                }
                addresses.put(Transport.of(words[1]), words[2]);
            }
            if (line == null) {
                throw new IOException("the server " + main.getSimpleName() + " (pid " + process.pid()
                    + ") ended before it was ready"
                    + (process.waitFor(5, TimeUnit.SECONDS) ? ", exit status " + process.exitValue() : ""));
            }
            return new ServerProcess(process, lines, addresses, line);
        } catch (final IOException | RuntimeException ex) {
            process.destroyForcibly();
            throw ex;
        } catch (final InterruptedException ex) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while starting the server " + main.getSimpleName(), ex);
        }
    }

    String address(final Transport transport) {
        return addresses.get(transport);
    }

    /**
     * The server's ready line: {@code ready pid N [provider NAME]}.
     */
    String readyLine() {
        return ready;
    }

    long pid() {
        return process.pid();
    }

    /**
     * Send the server one line on its stdin and wait, at most {@code timeoutMillis}, for its answer: the next line it
     * prints on stdout. A server that does not answer in time is killed: its output is no longer to be trusted.
     *
     * @throws IOException when it ended first, or did not answer in time.
     */
    String request(final String line, final long timeoutMillis) throws IOException {
        final OutputStream in = process.getOutputStream();
        in.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        final FutureTask<String> reading = new FutureTask<>(lines::readLine);
        Thread.ofVirtual().name("server-answer").start(reading);
        final String answer;
        try {
            answer = reading.get(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (final TimeoutException ex) {
            process.destroyForcibly();
            throw new IOException("the server (pid " + process.pid() + ") did not answer " + line + " within "
                + timeoutMillis + " ms; killed it", ex);
        } catch (final ExecutionException ex) {
            throw ex.getCause() instanceof IOException io ? io : new IOException(ex.getCause());
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for the server's answer to " + line, ex);
        }
        if (answer == null) {
            throw new IOException("the server (pid " + process.pid() + ") ended without answering " + line);
        }
        return answer;
    }

    /**
     * Print the server's threads to this process's stderr with {@code jcmd PID Thread.print}.
     */
    void dumpThreads() {
        final Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        try {
            // To stderr: stdout holds the results.
            final Process dump = new ProcessBuilder(jcmd.toString(), Long.toString(process.pid()), "Thread.print")
                .redirectErrorStream(true).start();
            dump.getInputStream().transferTo(System.err);
            if (!dump.waitFor(30, TimeUnit.SECONDS)) {
                dump.destroyForcibly();
            }
        } catch (final IOException ex) {
            System.err.println("bench: cannot dump the server's threads: " + ex);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * In the server: answer each line of stdin with one line on {@code out} until stdin ends (the client's
     * {@link #close()}, or its death); {@link #request} is the client's side.
     *
     * @param answer the answer to a request line.
     */
    static void serveRequests(final PrintStream out, final UnaryOperator<String> answer) throws IOException {
        final BufferedReader requests = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String request;
        while ((request = requests.readLine()) != null) {
            out.println(answer.apply(request));
            out.flush();
        }
    }

    /**
     * Close the server's stdin, which stops it, and wait for it; kill it if it does not stop within 10 s.
     */
    @Override
    public void close() throws IOException {
        process.getOutputStream().close();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                System.err.println("bench: the server (pid " + process.pid() + ") did not stop; killing it");
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (final InterruptedException ex) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
