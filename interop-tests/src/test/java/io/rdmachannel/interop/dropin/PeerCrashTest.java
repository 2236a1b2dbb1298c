package io.rdmachannel.interop.dropin;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.rdmachannel.channel.RdmaTransportMXBean;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A peer process killed with SIGKILL while connecting, transferring or closing ({@link CrashVictim}, an unmodified
 * NIO program with rdmachannel installed JVM-wide, on shm): every connection the survivor holds to it, read by a
 * blocked thread or watched by a selector, sees end of stream or an error within one second; every byte that arrived
 * is the victim's stream in order; and once all is over the survivor holds no connection, and no more descriptors,
 * threads or mappings than before. {@code -Drdmachannel.test.crashRuns=200} runs more kills than the default.
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES)
class PeerCrashTest {
    private static final int RUNS = Integer.getInteger("rdmachannel.test.crashRuns", 18);
    private static final String[] PHASES = {"transfer", "connecting", "closing"};
    private static final long DETECTION_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** Every connection accepted in the current run and not yet ended, with the time it was accepted. */
    private final Map<SocketChannel, Long> open = new ConcurrentHashMap<>();
    private final AtomicLong lastEnd = new AtomicLong();
    private final List<String> failures = new ArrayList<>();

    @Test
    void shouldEndEveryConnectionOfAKilledPeerWithinASecondAndLeakNothing() throws Exception {
        final StreamTransport transport = StreamTransports.open(RdmaProviders.byName("shm"));
        final RdmaSelectorProvider provider = new RdmaSelectorProvider(transport);
        final RdmaTransportMXBean view = (RdmaTransportMXBean) transport;
        final Random random = new Random(42);
        long worstNanos = 0;
        try (ServerSocketChannel server = provider.openServerSocketChannel();
            Selector selector = provider.openSelector()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
            server.configureBlocking(false);
            server.register(selector, SelectionKey.OP_ACCEPT);
            final InetSocketAddress address = (InetSocketAddress) server.getLocalAddress();
            ProcessUsage before = null;
            for (int run = 0; run < RUNS; run++) {
                final String phase = PHASES[run % PHASES.length];
                final long nanos = killOnce(selector, server, address, phase, random.nextInt(100), run);
                worstNanos = Math.max(worstNanos, nanos);
                if (run == 0) {
                    // the first run opened the device, the pools and the agent: measure from here
                    before = ProcessUsage.now();
                }
            }
            assertTrue(failures.isEmpty(), () -> String.join("\n", failures));
            System.out.printf("%d kills: every connection ended at most %.1f ms after the kill%n", RUNS,
                worstNanos / 1e6);

            awaitQuiet(view);
            assertEquals(0, view.getConnectionCount(), "connections left: " + List.of(view.getConnections()));
            final ProcessUsage after = awaitUsage(before);
            assertTrue(after.descriptors() <= before.descriptors() + 8, before + " -> " + after);
            assertTrue(after.threads() <= before.threads() + 2, before + " -> " + after);
            assertTrue(after.mappings() <= before.mappings() + 8, before + " -> " + after);
        } finally {
            StreamTransports.close(transport);
        }
    }

    /**
     * Start a victim, let it run {@code delayMillis} past RUNNING, kill it, and serve until every connection ended.
     *
     * @return the longest time from the kill to the end of a connection.
     */
    private long killOnce(final Selector selector, final ServerSocketChannel server, final InetSocketAddress address,
        final String phase, final int delayMillis, final int run) throws Exception {
        final ChildJvm victim = ChildJvm.start(CrashVictim.class, true, List.of("rdmachannel.provider=shm"),
            address.getAddress().getHostAddress(), Integer.toString(address.getPort()), phase);
        final long killedAt;
        final Thread blockedReader;
        try {
            // accept the held connections: the first one goes to a thread blocked in read, the others to the selector
            final List<SocketChannel> held = new ArrayList<>();
            final long acceptDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (held.size() < CrashVictim.HELD && System.nanoTime() - acceptDeadline < 0) {
                final SocketChannel channel = server.accept();
                if (channel == null) {
                    selector.select(10);
                    selector.selectedKeys().clear();
                } else {
                    held.add(channel);
                }
            }
            assertEquals(CrashVictim.HELD, held.size(), victim::describe);
            blockedReader = Thread.ofPlatform().name("blocked-reader-" + run).start(() -> readBlocking(held.get(0)));
            for (final SocketChannel channel : held.subList(1, held.size())) {
                watch(selector, channel);
            }
            victim.expect("RUNNING", 30);
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
                + (blockedReader.isAlive() ? "the" : "no") + " blocked reader still open 1 s after the kill, first: "
                + open.keySet().stream().findFirst().map(Object::toString).orElse("none"));
            blockedReader.interrupt();
            for (final SocketChannel channel : open.keySet()) {
                end(channel);
            }
        }
        return lastEnd.get() - killedAt;
    }

    private void watch(final Selector selector, final SocketChannel channel) throws IOException {
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

    /** Wait for the pools and peer mappings to give back what idles (a few idle periods), then measure. */
    private static ProcessUsage awaitUsage(final ProcessUsage before) throws IOException, InterruptedException {
        final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        ProcessUsage now = ProcessUsage.now();
        while (now.mappings() > before.mappings() && System.nanoTime() - deadline < 0) {
            Thread.sleep(200);
            now = ProcessUsage.now();
        }
        return now;
    }
}
