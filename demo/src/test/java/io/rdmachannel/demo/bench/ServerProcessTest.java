package io.rdmachannel.demo.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The benchmark's server in a second JVM answers requests on its stdin, one line each, and stops when stdin ends.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ServerProcessTest {

    @Test
    void shouldTellItsJitCompilationTimeOnRequest() throws IOException {
        try (ServerProcess server = ServerProcess.start(List.of(Transport.TCP), null)) {
            final long first = Long.parseLong(server.request(BenchServer.COMPILE_MILLIS, 10_000));
            final long second = Long.parseLong(server.request(BenchServer.COMPILE_MILLIS, 10_000));
            assertTrue(first >= 0 && second >= first, () -> first + " then " + second);
            assertEquals("error: not a request: frobnicate", server.request("frobnicate", 10_000));
        }
    }

    @Test
    void shouldReadItsOwnUsageForTheScaleClient() throws IOException {
        try (ServerProcess server = ServerProcess.start(ScaleServer.class, List.of(ScaleServer.RC))) {
            final ScaleMain.Usage usage = ScaleMain.Usage.parse(server.request(ScaleServer.USAGE + " 0 1000",
                10_000));
            assertEquals(0, usage.connections());
            assertTrue(usage.fds() > 0 && usage.threads() > 0, usage::toString);
            assertEquals("error: not a request: usage x 1000", server.request("usage x 1000", 10_000));
        }
    }

    @Test
    void shouldKillAServerThatDoesNotAnswerInTime() throws IOException {
        try (ServerProcess server = ServerProcess.start(ScaleServer.class, List.of(ScaleServer.RC))) {
            // five connections never come: the server would wait 30 s for them
            final IOException thrown = assertThrows(IOException.class,
                () -> server.request(ScaleServer.USAGE + " 5 60000", 500));
            assertEquals("the server (pid " + server.pid() + ") did not answer usage 5 60000 within 500 ms; killed it",
                thrown.getMessage());
        }
    }

    @Test
    void shouldRefuseALineThatIsNotAUsage() {
        final IOException thrown = assertThrows(IOException.class, () -> ScaleMain.Usage.parse("usage 1 2 3"));
        assertEquals("the server's usage line is not one: usage 1 2 3", thrown.getMessage());
    }
}
