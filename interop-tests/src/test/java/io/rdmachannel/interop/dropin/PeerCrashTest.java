package io.rdmachannel.interop.dropin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import io.rdmachannel.channel.RdmaTransportMXBean;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamConfiguration;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;
import io.rdmachannel.nio.RdmaSocketOptions;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A peer process killed with SIGKILL while connecting, transferring or closing ({@link CrashVictim}, an unmodified
 * NIO program with rdmachannel installed JVM-wide, on shm): every connection the survivor holds to it, read by a
 * blocked thread or watched by a selector, sees end of stream or an error within one second; every byte that arrived
 * is the victim's stream in order; and once all is over the survivor holds no connection, and no more descriptors,
 * threads or mappings than before. {@code -Drdmachannel.test.crashRuns=200} runs more kills than the default.
 * {@code -Drdmachannel.test.crashProvider=native -Drdmachannel.test.crashAddress=192.0.2.1} runs it on the native
 * provider over rdma_cm (the soft-RoCE guest's stage): the kernel tears the dead process's ids down and sends the
 * survivor a disconnect, and the survivor's connections have keepalive on ({@code SO_KEEPALIVE}, every second), which
 * finds a peer whose disconnect never came.
 */
// 200 kills on native take about 100 minutes in the emulated guest
@Timeout(value = 180, unit = TimeUnit.MINUTES)
class PeerCrashTest {
    private static final int RUNS = Integer.getInteger("rdmachannel.test.crashRuns", 18);
    /** The seed of the kill delays: runs that split many kills between them take different ones. */
    private static final long SEED = Long.getLong("rdmachannel.test.crashSeed", 42);
    private static final String[] PHASES = {"transfer", "connecting", "closing"};
    /**
     * How soon after the kill every connection must have ended: 1 s on shm; 3 s on native, where the kernel's
     * disconnect for the dead process's ids ends them (up to 0.8 s measured in the emulated guest).
     */
    private static final long DETECTION_NANOS = TimeUnit.MILLISECONDS.toNanos(Long.getLong(
        "rdmachannel.test.crashDetectionMillis", "shm".equals(System.getProperty("rdmachannel.test.crashProvider",
            "shm")) ? 1_000 : 3_000));
    /** How long a victim may take to start and open its held connections. */
    private static final int START_SECONDS = 120;
    /**
     * What the survivor may hold after every kill beyond what it held after the first: descriptors and mappings of
     * pools that grew with concurrent connections and idle out later, and a thread or two of the JVM's own.
     */
    private static final int DESCRIPTOR_SLACK = 8;
    private static final int MAPPING_SLACK = 8;
    private static final int THREAD_SLACK = 2;
    /** The verbs provider of both processes: {@code shm}, or {@code native} on a machine with an RDMA device. */
    private static final String PROVIDER = System.getProperty("rdmachannel.test.crashProvider", "shm");
    /** The address the survivor listens on: the loopback on shm, an address of the RDMA device interface on native. */
    private static final String ADDRESS = System.getProperty("rdmachannel.test.crashAddress",
        InetAddress.getLoopbackAddress().getHostAddress());

    /** Every connection accepted in the current run and not yet ended, with the time it was accepted. */
    private final Map<SocketChannel, Long> open = new ConcurrentHashMap<>();
    private final AtomicLong lastEnd = new AtomicLong();
    private final List<String> failures = new ArrayList<>();
    /** The mode of the current test: {@code RC} or {@code XRC}. */
    private String mode;

    /**
     * The modes the kills run in: RC; on shm also XRC, both processes with it (the native provider's rdma_cm makes
     * every connection RC).
     */
    static Stream<String> modes() {
        return "shm".equals(PROVIDER) ? Stream.of("RC", "XRC") : Stream.of("RC");
    }

    @ParameterizedTest
    @MethodSource("modes")
    void shouldEndEveryConnectionOfAKilledPeerWithinASecondAndLeakNothing(final String mode) throws Exception {
        this.mode = mode;
        final String keepAlive = System.setProperty(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME, "1");
        final StreamTransport transport;
        try {
            transport = StreamTransports.open(RdmaProviders.byName(PROVIDER));
        } finally {
            restore(StreamConfiguration.KEEP_ALIVE_TIME_PROP_NAME, keepAlive);
        }
        final RdmaSelectorProvider provider = new RdmaSelectorProvider(transport);
        final RdmaTransportMXBean view = (RdmaTransportMXBean) transport;
        final Random random = new Random(SEED);
        long worstNanos = 0;
        Throwable failed = null;
        try (ServerSocketChannel server = provider.openServerSocketChannel();
            Selector selector = provider.openSelector()) {
            // the victim's channels ask for the mode JVM-wide; the accepted ones inherit the listener's
            server.setOption(RdmaSocketOptions.RDMA_XRC, "XRC".equals(mode));
            server.bind(new InetSocketAddress(InetAddress.getByName(ADDRESS), 0), 64);
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
            final InetSocketAddress address = (InetSocketAddress) server.getLocalAddress();
            ProcessUsage before = null;
            Map<String, Integer> descriptorsBefore = Map.of();
            for (int run = 0; run < RUNS; run++) {
                final String phase = PHASES[run % PHASES.length];
                final long nanos = killOnce(selector, server, address, phase, random.nextInt(100), run, view);
                worstNanos = Math.max(worstNanos, nanos);
                if ((run + 1) % 25 == 0) {
                    System.out.printf("%d of %d kills done, worst so far %.1f ms%n", run + 1, RUNS, worstNanos / 1e6);
                }
                if (run == 0) {
                    // the first run opened the device, the pools and the agent: measure from here
                    before = ProcessUsage.now();
                    descriptorsBefore = ProcessUsage.descriptorKinds();
                }
            }
            assertTrue(failures.isEmpty(), () -> String.join("\n", failures));
            System.out.printf("%d kills on %s (seed %d): every connection ended at most %.1f ms after the kill%n",
                RUNS, PROVIDER, SEED, worstNanos / 1e6);

            awaitQuiet(view);
            assertEquals(0, view.getConnectionCount(), "connections left: " + List.of(view.getConnections()));
            final ProcessUsage after = awaitUsage(before);
            final Map<String, Integer> descriptorsAfter = ProcessUsage.descriptorKinds();
            final Map<String, Integer> descriptorsAtStart = descriptorsBefore;
            final ProcessUsage atStart = before;
            assertTrue(after.descriptors() <= before.descriptors() + DESCRIPTOR_SLACK, () -> atStart + " -> "
                + after + "; descriptors changed: "
                + ProcessUsage.descriptorChange(descriptorsAtStart, descriptorsAfter));
            assertTrue(after.threads() <= before.threads() + THREAD_SLACK, before + " -> " + after);
            assertTrue(after.mappings() <= before.mappings() + MAPPING_SLACK, before + " -> " + after);
        } catch (final Exception | Error failure) {
            failed = failure;
            throw failure;
        } finally {
            // a run that failed may leave connections open, which the transport's close refuses: that refusal must
            // not hide why the run failed
            try {
                StreamTransports.close(transport);
            } catch (final RuntimeException closeFailure) {
                if (failed == null) {
                    throw closeFailure;
                }
                failed.addSuppressed(closeFailure);
            }
        }
    }

    /**
     * Start a victim, let it run {@code delayMillis} past RUNNING, kill it, and serve until every connection ended.
     *
     * @return the longest time from the kill to the end of a connection.
     */
    private long killOnce(final Selector selector, final ServerSocketChannel server, final InetSocketAddress address,
        final String phase, final int delayMillis, final int run, final RdmaTransportMXBean view) throws Exception {
        final ChildJvm victim = ChildJvm.start(CrashVictim.class, true, List.of("rdmachannel.provider=" + PROVIDER,
            StreamConfiguration.XRC_PROP_NAME + "=" + "XRC".equals(mode)),
            address.getAddress().getHostAddress(), Integer.toString(address.getPort()), phase);
        final long killedAt;
        final Thread blockedReader;
        try {
            // accept the held connections: the first one goes to a thread blocked in read, the others to the selector
            final List<SocketChannel> held = new ArrayList<>();
            // a victim's JVM start and first connects took over 30 s in the emulated soft-RoCE guest
            final long acceptDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(START_SECONDS);
            while (held.size() < CrashVictim.HELD && System.nanoTime() - acceptDeadline < 0) {
                final SocketChannel channel = server.accept();
                if (channel == null) {
                    selector.select(10);
                    selector.selectedKeys().clear();
                } else {
                    channel.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
                    held.add(channel);
                }
            }
            final long startedAt = acceptDeadline - TimeUnit.SECONDS.toNanos(START_SECONDS);
            assertEquals(CrashVictim.HELD, held.size(), () -> "run " + run + " (" + phase + "): "
                + TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startedAt) + " ms after the victim's start, "
                + held.size() + " connection(s) accepted; the survivor's connections: "
                + List.of(view.getConnections()) + "\n" + victim.describe());
            // over RDMA, not a TCP fallback, and in the mode asked for
            assertTrue(view.getConnectionCount() >= CrashVictim.HELD, () -> List.of(view.getConnections()) + " "
                + held);
            assertTrue(Arrays.stream(view.getConnections()).allMatch(c -> mode.equals(c.mode())),
                () -> List.of(view.getConnections()).toString());
            blockedReader = Thread.ofPlatform().name("blocked-reader-" + run).start(() -> readBlocking(held.get(0)));
            for (final SocketChannel channel : held.subList(1, held.size())) {
                watch(selector, channel);
            }
            victim.expect("RUNNING", START_SECONDS);
            serve(selector, server, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis));
            killedAt = System.nanoTime();
            victim.kill();
        } finally {
            victim.close();
        }
        // serve until everything the victim had ended, and a little longer for what it left in the backlog
        final long deadline = killedAt + DETECTION_NANOS;
        while (System.nanoTime() - deadline < 0 && (!open.isEmpty() || blockedReader.isAlive())) {
            serve(selector, server, Math.min(deadline, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(10)));
        }
        serve(selector, server, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(50));
        blockedReader.join(TimeUnit.SECONDS.toMillis(5));
        if (blockedReader.isAlive() || !open.isEmpty()) {
            failures.add("run " + run + " (" + phase + "): " + open.size() + " watched connection(s) and "
                + (blockedReader.isAlive() ? "the" : "no") + " blocked reader still open "
                + TimeUnit.NANOSECONDS.toMillis(DETECTION_NANOS) + " ms after the kill, first: "
                + open.keySet().stream().findFirst().map(Object::toString).orElse("none"));
            blockedReader.interrupt();
            for (final SocketChannel channel : open.keySet()) {
                end(channel);
            }
        }
        return lastEnd.get() - killedAt;
    }

    private static void restore(final String name, final String previous) {
        if (previous == null) {
            System.clearProperty(name);
        } else {
            System.setProperty(name, previous);
        }
    }

    private void watch(final Selector selector, final SocketChannel channel) throws IOException {
        channel.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
        channel.configureBlocking(false);
        channel.register(selector, SelectionKey.OP_READ, new long[1]);
        open.put(channel, System.nanoTime());
    }

    /**
     * Accept, read and check until {@code until}; a connection ends at end of stream or an error.
     */
    private void serve(final Selector selector, final ServerSocketChannel server, final long until)
        throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
        long left;
        while ((left = until - System.nanoTime()) > 0) {
            selector.select(Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            for (final SelectionKey key : selector.selectedKeys()) {
                if (key.channel() == server) {
                    SocketChannel accepted;
                    while ((accepted = server.accept()) != null) {
                        watch(selector, accepted);
                    }
                } else if (key.isValid() && key.isReadable()) {
                    final SocketChannel channel = (SocketChannel) key.channel();
                    final long[] position = (long[]) key.attachment();
                    try {
                        final int count = channel.read(buffer.clear());
                        if (count < 0) {
                            end(channel);
                        } else if (count > 0) {
                            check(buffer.flip(), position[0], channel);
                            position[0] += count;
                        }
                    } catch (final IOException ex) {
                        end(channel);
                    }
                }
            }
            selector.selectedKeys().clear();
        }
    }

    private void readBlocking(final SocketChannel channel) {
        open.put(channel, System.nanoTime());
        final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
        long position = 0;
        try {
            int count;
            while ((count = channel.read(buffer.clear())) >= 0) {
                check(buffer.flip(), position, channel);
                position += count;
            }
        } catch (final IOException ex) {
            // the peer is gone: the failure ends the connection
        } finally {
            end(channel);
        }
    }

    private void check(final ByteBuffer bytes, final long position, final SocketChannel channel) {
        final long wrong = EchoPattern.check(bytes, position);
        if (wrong >= 0) {
            synchronized (failures) {
                failures.add("byte " + wrong + " of " + channel + " is not the victim's");
            }
        }
    }

    private void end(final SocketChannel channel) {
        if (open.remove(channel) != null) {
            lastEnd.accumulateAndGet(System.nanoTime(), Math::max);
        }
        try {
            channel.close();
        } catch (final IOException ignore) {
            // closing a connection to a dead peer
        }
    }

    private static void awaitQuiet(final RdmaTransportMXBean view) throws InterruptedException {
        // closed connections linger until their DISCONNECT is out or the close deadline passes
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (view.getConnectionCount() > 0 && System.nanoTime() - deadline < 0) {
            Thread.sleep(10);
        }
    }

    /**
     * Wait for the pools and peer mappings to give back what idles (a few idle periods), and for descriptors and
     * threads of connections still being released to go, at most 20 s; then measure.
     */
    private static ProcessUsage awaitUsage(final ProcessUsage before) throws IOException, InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        ProcessUsage now = ProcessUsage.now();
        while ((now.mappings() > before.mappings() || now.descriptors() > before.descriptors() + DESCRIPTOR_SLACK
            || now.threads() > before.threads() + THREAD_SLACK) && System.nanoTime() - deadline < 0) {
            Thread.sleep(200);
            now = ProcessUsage.now();
        }
        return now;
    }
}
