package io.rdmachannel.demo.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A whole {@code ./rdmachannel bench} run on the shm provider, small: both JVMs warm up, the client waits for the
 * JIT compilers of both (the server's asked for on its stdin), then every combination is measured.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class BenchRunTest {
    private final String provider = System.getProperty(RdmaProviders.PROVIDER_PROP_NAME);

    @AfterEach
    void restoreProvider() {
        if (provider == null) {
            System.clearProperty(RdmaProviders.PROVIDER_PROP_NAME);
        } else {
            System.setProperty(RdmaProviders.PROVIDER_PROP_NAME, provider);
        }
    }

    @Test
    void shouldMeasureEachCombinationOnceBothJvmsCompiledTheirWarmUp() {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();

        final int status = BenchMain.run(new String[] {"--transport", "rdma,tcp", "--provider", "shm", "--mode",
            "blocking", "--test", "latency,bandwidth", "--sizes", "64", "--iterations", "200", "--warmup", "100",
            "--bytes", "64000", "--json"}, print(out), print(err));

        final String errors = err.toString(StandardCharsets.UTF_8);
        assertEquals(0, status, errors);
        assertTrue(errors.contains("bench: the JIT compilers of both JVMs went quiet after ")
            || errors.contains("bench: the JIT compilers are still busy after 120 s"), errors);
        final List<String> results = out.toString(StandardCharsets.UTF_8).lines().toList();
        assertEquals(4, results.size(), () -> String.join("\n", results));
        for (final String expected : List.of("\"transport\":\"rdma\",\"provider\":\"shm\",\"mode\":\"blocking\","
            + "\"test\":\"latency\",\"size\":64,\"iterations\":200", "\"transport\":\"tcp\",\"provider\":null,"
            + "\"mode\":\"blocking\",\"test\":\"latency\"", "\"transport\":\"rdma\",\"provider\":\"shm\","
            + "\"mode\":\"blocking\",\"test\":\"bandwidth\",\"size\":64,\"iterations\":1000",
            "\"transport\":\"tcp\",\"provider\":null,\"mode\":\"blocking\",\"test\":\"bandwidth\"")) {
            assertTrue(results.stream().anyMatch(line -> line.contains(expected)), () -> expected + " in " + results);
        }
    }

    private static PrintStream print(final ByteArrayOutputStream bytes) {
        return new PrintStream(bytes, true, StandardCharsets.UTF_8);
    }
}
