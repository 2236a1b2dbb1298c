package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.shm.ShmConfiguration;
import io.rdmachannel.channel.shm.ShmTestDirectories;
import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Connection churn over shm between two devices (two transports, as two processes would have): a few thousand
 * connect, echo, close cycles must leave file descriptors, mappings of the shm directory, files in it and threads
 * where the pools' bounds put them, and once idle the pools and peer mappings give everything back.
 */
class ShmChurnResourceTest {
    private static final int WARM_UP = 200;
    private static final int CYCLES = 2000;
    private static final int IDLE_MILLIS = 300;
    private static final int SLACK = 16;

    private Path directory;
    private String previousDirectory;
    private String previousIdle;
    private StreamTransport serverTransport;
    private StreamTransport clientTransport;
    private ExecutorService threads;

    @BeforeEach
    void open() throws IOException {
        directory = ShmTestDirectories.create();
        previousDirectory = System.setProperty(ShmConfiguration.DIRECTORY_PROP_NAME, directory.toString());
        previousIdle = System.setProperty(ShmConfiguration.POOL_IDLE_MILLIS_PROP_NAME, Integer.toString(IDLE_MILLIS));
        serverTransport = StreamTransports.open(RdmaProviders.byName("shm"));
        clientTransport = StreamTransports.open(RdmaProviders.byName("shm"));
        threads = Executors.newThreadPerTaskExecutor(Thread.ofPlatform().daemon().factory());
    }

    @AfterEach
    void close() throws IOException {
        threads.shutdownNow();
        try {
            StreamTransports.close(clientTransport);
            StreamTransports.close(serverTransport);
        } finally {
            restore(ShmConfiguration.DIRECTORY_PROP_NAME, previousDirectory);
            restore(ShmConfiguration.POOL_IDLE_MILLIS_PROP_NAME, previousIdle);
            try (Stream<Path> paths = Files.walk(directory)) {
                paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            }
        }
    }

    private static void restore(final String name, final String value) {
        if (value == null) {
            System.clearProperty(name);
        } else {
            System.setProperty(name, value);
        }
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void shouldKeepDescriptorsMappingsFilesAndThreadsFlatUnderChurn() throws Exception {
        final BlockingStream.Waker serverWaker = new BlockingStream.Waker();
        try (StreamListener listener = serverTransport.listen(
            new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8, new StreamOptions(), serverWaker)) {
            final CompletableFuture<Integer> server = CompletableFuture.supplyAsync(
                () -> serve(listener, serverWaker, WARM_UP + CYCLES), threads);
            final BlockingStream.Waker clientWaker = new BlockingStream.Waker();
            final ByteBuffer message = ByteBuffer.allocateDirect(64);

            churn(listener, clientWaker, message, WARM_UP);
            final Usage before = Usage.now(directory);
            churn(listener, clientWaker, message, CYCLES);
            final Usage after = Usage.now(directory);
            assertEquals(WARM_UP + CYCLES, server.get(60, TimeUnit.SECONDS));

            System.out.println("churn of " + CYCLES + " connections: before " + before + ", after " + after);
            assertTrue(after.descriptors() <= before.descriptors() + SLACK, "descriptors grew: " + before + " -> "
                + after);
            assertTrue(after.mappings() <= before.mappings() + SLACK, "mappings grew: " + before + " -> " + after);
            assertTrue(after.files() <= before.files() + SLACK, "files grew: " + before + " -> " + after);
            assertTrue(after.threads() <= before.threads() + 2, "threads grew: " + before + " -> " + after);

            // idle: pooled files and unused peer mappings go within a few idle periods
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            Usage idle = Usage.now(directory);
            while ((idle.pooledMappings() > 0 || idle.pooledFiles() > 0) && System.nanoTime() - deadline < 0) {
                Thread.sleep(IDLE_MILLIS / 2);
                idle = Usage.now(directory);
            }
            System.out.println("after " + IDLE_MILLIS + " ms idle periods: " + idle);
            assertEquals(0, idle.pooledFiles(), "pooled files left after idling: " + idle);
            assertEquals(0, idle.pooledMappings(), "mappings of pooled and peer files left after idling: " + idle);
        }
    }

    /**
     * What the process holds: open descriptors, mappings of files in the shm directory (of pooled files among them),
     * files in the directory (pooled ones among them) and native threads.
     */
    private record Usage(int descriptors, int mappings, int pooledMappings, int files, int pooledFiles, int threads) {
        static Usage now(final Path directory) throws IOException {
            final String prefix = directory.toString() + "/";
            int mappings = 0;
            int pooledMappings = 0;
            for (final String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                final int at = line.indexOf(prefix);
                if (at >= 0) {
                    mappings++;
                    if (line.substring(line.lastIndexOf('/') + 1).startsWith("f-")) {
                        pooledMappings++;
                    }
                }
            }
            int files = 0;
            int pooledFiles = 0;
            try (Stream<Path> paths = Files.walk(directory)) {
                for (final Path path : paths.toList()) {
                    if (!Files.isDirectory(path, LinkOption.NOFOLLOW_LINKS)) {
                        files++;
                        if (path.getFileName().toString().startsWith("f-")) {
                            pooledFiles++;
                        }
                    }
                }
            }
            return new Usage(count(Path.of("/proc/self/fd")), mappings, pooledMappings, files, pooledFiles,
                count(Path.of("/proc/self/task")));
        }

        private static int count(final Path folder) throws IOException {
            try (Stream<Path> entries = Files.list(folder)) {
                return (int) entries.count();
            }
        }
    }

    private void churn(final StreamListener listener, final BlockingStream.Waker waker, final ByteBuffer message,
        final int cycles) throws IOException {
        for (int i = 0; i < cycles; i++) {
            final StreamConnector connector = clientTransport.connect(listener.localAddress(), null,
                new StreamOptions(), waker);
            try (StreamConnection client = BlockingStream.connect(connector, waker)) {
                BlockingStream.writeFully(client, message.clear(), waker);
                message.clear();
                while (message.hasRemaining()) {
                    if (BlockingStream.read(client, message, waker) < 0) {
                        throw new IOException("end of stream instead of the echo in cycle " + i);
                    }
                }
            }
        }
    }

    private static int serve(final StreamListener listener, final BlockingStream.Waker waker, final int cycles) {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(64);
        int served = 0;
        try {
            while (served < cycles) {
                try (StreamConnection connection = BlockingStream.accept(listener, waker)) {
                    buffer.clear();
                    while (buffer.hasRemaining() && BlockingStream.read(connection, buffer, waker) > 0) {
                        // until the whole message is in
                    }
                    BlockingStream.writeFully(connection, buffer.flip(), waker);
                    buffer.clear();
                    BlockingStream.read(connection, buffer, waker);
                }
                served++;
            }
            return served;
        } catch (final IOException ex) {
            throw new UncheckedIOException("serving cycle " + served, ex);
        }
    }
}
