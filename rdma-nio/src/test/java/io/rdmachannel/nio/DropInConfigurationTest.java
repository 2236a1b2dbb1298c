package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DropInConfigurationTest {
    private static Properties properties(final String... pairs) {
        final Properties properties = new Properties();
        for (int i = 0; i < pairs.length; i += 2) {
            properties.setProperty(pairs[i], pairs[i + 1]);
        }
        return properties;
    }

    private static InetSocketAddress destination(final int port) {
        return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
    }

    @Test
    void shouldDefaultToNoRulesAndTwoSecondsOfRdma() {
        final DropInConfiguration configuration = DropInConfiguration.from(new Properties());

        assertTrue(configuration.rules().isEmpty());
        assertEquals(TimeUnit.MILLISECONDS.toNanos(DropInConfiguration.FALLBACK_TIMEOUT_DEFAULT),
            configuration.fallbackTimeoutNanos());
    }

    @Test
    void shouldReadInlineRulesThenTheRulesFile(@TempDir final Path folder) throws IOException {
        final Path file = folder.resolve("rules");
        Files.writeString(file, "rdma-only connect * *\n");

        final DropInConfiguration configuration = DropInConfiguration.from(properties(
            DropInConfiguration.RULES_PROP_NAME, "tcp connect 127.0.0.1 80",
            DropInConfiguration.RULES_FILE_PROP_NAME, file.toString()));

        assertEquals(2, configuration.rules().size());
        assertEquals(RdmaPathPolicy.TCP_ONLY, configuration.rules().forConnect(destination(80)).policy());
        assertEquals(RdmaPathPolicy.RDMA_ONLY, configuration.rules().forConnect(destination(81)).policy());
    }

    @Test
    void shouldRefuseBadSettings(@TempDir final Path folder) {
        assertEquals("rdmachannel.fallback.timeoutMillis must be in [1, 2147483647]: "
            + "rdmachannel.fallback.timeoutMillis=0", assertThrows(IllegalArgumentException.class,
                () -> DropInConfiguration.from(properties(DropInConfiguration.FALLBACK_TIMEOUT_PROP_NAME, "0")))
                .getMessage());
        assertEquals("rdmachannel.fallback.cacheSize must be a whole number: rdmachannel.fallback.cacheSize=many",
            assertThrows(IllegalArgumentException.class, () -> DropInConfiguration.from(properties(
                DropInConfiguration.FALLBACK_CACHE_SIZE_PROP_NAME, "many"))).getMessage());
        final Path missing = folder.resolve("missing");
        assertEquals("cannot read the rules file rdmachannel.rules.file=" + missing,
            assertThrows(UncheckedIOException.class, () -> DropInConfiguration.from(properties(
                DropInConfiguration.RULES_FILE_PROP_NAME, missing.toString()))).getMessage());
        assertThrows(IllegalArgumentException.class, () -> DropInConfiguration.from(properties(
            DropInConfiguration.RULES_PROP_NAME, "rdma sideways * *")));
    }

    @Test
    void shouldRememberUnreachableDestinationsForAWhile() {
        final DropInConfiguration configuration = DropInConfiguration.from(properties(
            DropInConfiguration.FALLBACK_CACHE_MILLIS_PROP_NAME, "200"));

        configuration.rememberUnreachable(destination(1), "no RDMA listener");

        assertEquals("no RDMA listener", configuration.unreachableReason(destination(1)));
        assertNull(configuration.unreachableReason(destination(2)), "another port is another destination");
        ChannelFixture.await("the entry to expire", () -> configuration.unreachableReason(destination(1)) == null);
    }

    @Test
    void shouldBoundTheCacheAndForgetTheOldest() {
        final DropInConfiguration configuration = DropInConfiguration.from(properties(
            DropInConfiguration.FALLBACK_CACHE_SIZE_PROP_NAME, "2"));

        configuration.rememberUnreachable(destination(1), "one");
        configuration.rememberUnreachable(destination(2), "two");
        configuration.rememberUnreachable(destination(3), "three");

        assertNull(configuration.unreachableReason(destination(1)));
        assertEquals("two", configuration.unreachableReason(destination(2)));
        assertEquals("three", configuration.unreachableReason(destination(3)));
    }

    @Test
    void shouldNotRememberWhenTheCacheIsOff() {
        final DropInConfiguration configuration = DropInConfiguration.from(properties(
            DropInConfiguration.FALLBACK_CACHE_MILLIS_PROP_NAME, "0"));

        configuration.rememberUnreachable(destination(1), "one");

        assertNull(configuration.unreachableReason(destination(1)));
    }
}
