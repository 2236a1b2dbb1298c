package io.rdmachannel.demo.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.stream.StreamConfiguration;
import io.rdmachannel.demo.JavaCommand;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * {@code ./rdmachannel scale} against a server JVM on the shm provider: every idle connection costs each side one
 * queue pair, two completion queues and three memory regions (the send ring with its stages, the receive ring, the
 * target SGL), read from the devices' own counts, one descriptor, and every connection closes cleanly.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ScaleMainTest {
    @Test
    void shouldReportWhatEachIdleConnectionCostsOnEachSide() {
        final String text = scale40("rc");
        final StreamConfiguration stream = StreamConfiguration.fromSystemProperties();
        final double ringsKib = (stream.sendBufferLength() + stream.receiveBufferLength()) / 1024.0;
        for (final String side : List.of("client", "server")) {
            final List<String> row = row(text, side);
            assertEquals(List.of("1.00", "2.00", "0.00", "3.00"), row.subList(2, 6), () -> side + ": " + row);
            assertEquals(stream.receiveQueueSize() + stream.controlWindow(), Double.parseDouble(row.get(7)),
                () -> side + " receives: " + row);
            // on shm what a device holds for regions is their shared files: the receive ring at least (a peer
            // writes it), not the send ring (process memory registered for local access)
            final double regionKib = Double.parseDouble(row.get(6));
            assertTrue(regionKib >= stream.receiveBufferLength() / 1024.0 && regionKib < ringsKib + 64,
                () -> side + " MR KiB: " + row);
            assertEquals("1.00", row.get(10), () -> side + " fds: " + row);
        }
    }

    @Test
    void shouldReserveOnlyTheMinimumCreditsPerIdleConnectionInSrqMode() {
        final String text = scale40("srq");
        assertTrue(text.contains("SRQ mode"), text);
        for (final String side : List.of("client", "server")) {
            final List<String> row = row(text, side);
            // a queue pair and two completion queues each; the shared receive queue is one for all
            assertEquals(List.of("1.00", "2.00", "0.00"), row.subList(2, 5), () -> side + ": " + row);
            // receives posted per connection: one batch for them all, far below a receive queue of its own (388)
            final double receives = Double.parseDouble(row.get(7));
            assertTrue(receives < 12, () -> side + " receives: " + row);
        }
    }

    @Test
    void shouldCountAnXrcSharedReceiveQueuePerIdleConnectionInXrcMode() {
        final String text = scale40("xrc");
        assertTrue(text.contains("XRC mode"), text);
        for (final String side : List.of("client", "server")) {
            final List<String> row = row(text, side);
            // the initiator (the target is the domain's, not the device's), two completion queues, and an XRC
            // shared receive queue per connection, holding the connection's own receives
            assertEquals(List.of("1.00", "2.00", "1.00"), row.subList(2, 5), () -> side + ": " + row);
            final StreamConfiguration stream = StreamConfiguration.fromSystemProperties();
            assertEquals(stream.receiveQueueSize() + stream.controlWindow(), Double.parseDouble(row.get(7)),
                () -> side + " receives: " + row);
        }
    }

    /**
     * Run 40 connections on shm in {@code mode} from a JVM of its own, as {@code ./rdmachannel scale} does: in this
     * one, what earlier tests left to release later (an idle link to a peer of theirs, pooled files) could go during
     * the measurement and take a descriptor off the client's count. The run must succeed.
     *
     * @return what it printed.
     */
    private static String scale40(final String mode) {
        try {
            final Process process = new ProcessBuilder(JavaCommand.of(ScaleMain.class, List.of("--provider",
                "shm", "--connections", "40", "--mode", mode))).redirectError(ProcessBuilder.Redirect.PIPE).start();
            final CompletableFuture<String> err = CompletableFuture.supplyAsync(() -> text(process.getErrorStream()));
            final String text = text(process.getInputStream());
            final int status = process.waitFor();
            assertEquals(0, status, () -> text + err.join());
            return text;
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", ex);
        }
    }

    private static String text(final InputStream in) {
        try (in) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static List<String> row(final String text, final String side) {
        return text.lines().map(String::trim).filter(line -> line.startsWith("40 " + side)).findFirst()
            .map(line -> Arrays.asList(line.split("\\s+"))).orElseThrow(() -> new AssertionError(
                "no row for the " + side + ": " + text));
    }

    @Test
    void shouldRefuseBadArguments() {
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        final PrintStream errors = new PrintStream(err, true, StandardCharsets.UTF_8);
        final PrintStream out = new PrintStream(new ByteArrayOutputStream(), true, StandardCharsets.UTF_8);

        assertEquals(2, ScaleMain.run(new String[] {"--connections", "5"}, out, errors));
        assertEquals(2, ScaleMain.run(new String[] {"--connections"}, out, errors));
        assertEquals(2, ScaleMain.run(new String[] {"--frobnicate", "1"}, out, errors));
        assertEquals(2, ScaleMain.run(new String[] {"--mode", "rd"}, out, errors));
        assertTrue(err.toString(StandardCharsets.UTF_8).contains("--connections must be between 10"),
            () -> err.toString(StandardCharsets.UTF_8));
    }
}
