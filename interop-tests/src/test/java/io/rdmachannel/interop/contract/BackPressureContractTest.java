package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Timeout;

/**
 * A non-blocking writer against a slow reader: the writer sees write() return 0 and then OP_WRITE readiness, never
 * gets more than {@value ContractConfiguration#BACK_PRESSURE_BOUND_PROP_NAME} (default 64 MiB) ahead of the reader,
 * and nothing is lost. The reader (in each mode) reads only while the writer is stalled, so the writer stalls again
 * and again.
 */
@ContractTest
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class BackPressureContractTest {

    private static final int MAX_WRITE = Pattern.MAX_CHUNK;
    private static final int MAX_READ = 64 * 1024;
    private static final Duration TIMEOUT = Duration.ofSeconds(60);

    @AcrossModes
    void shouldStallNonBlockingWriterAndLoseNothing(final ContractTransport transport, final IoMode readerMode,
        final ConnectionState state) throws Exception {
        final long seed = ContractConfiguration.seed();
        final long total = ContractConfiguration.backPressureBytes();
        final long bound = ContractConfiguration.backPressureBound();
        state.put("seed", seed);
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final SocketChannel writerChannel = pair.client();
        final SocketChannel readerChannel = pair.server();
        final PatternSender sender = new PatternSender(SizeSequence.random(seed, 1, MAX_WRITE, total));
        final PatternReceiver receiver = new PatternReceiver(SizeSequence.random(seed + 1, 1, MAX_READ), MAX_READ,
            false);
        final Pacing pacing = new Pacing();
        final AtomicLong maxAhead = new AtomicLong();
        state.watch("writer", () -> sender);
        state.watch("reader", () -> receiver);
        state.watch("pacing", () -> pacing);
        state.watch("maxAhead", maxAhead::get);

        readerChannel.configureBlocking(readerMode.blockingChannels());
        final Forked<Void> reader = readerMode.fork("slow-reader", () -> {
            readWhileWriterStalls(readerChannel, receiver, pacing, state);
            return null;
        });

        writerChannel.configureBlocking(false);
        try (Selector selector = transport.openSelector()) {
            final SelectionKey key = writerChannel.register(selector, SelectionKey.OP_WRITE);
            while (sender.writeOnce(writerChannel) >= 0) {
                maxAhead.accumulateAndGet(sender.position() - receiver.position(), Math::max);
                if (sender.stalled()) {
                    state.step("stalled at " + sender.position());
                    pacing.stalls.incrementAndGet();
                    awaitWritable(selector, key);
                    pacing.resumes.incrementAndGet();
                }
            }
        }
        state.step("shutdownOutput");
        writerChannel.shutdownOutput();
        pacing.writerDone = true;
        reader.join(TIMEOUT);

        assertTrue(sender.zeroWrites() > 0, "write() returned 0 at least once");
        assertTrue(pacing.resumes.get() > 0, "OP_WRITE fired after a stall");
        assertTrue(maxAhead.get() <= bound, "writer ran " + maxAhead + " bytes ahead of the reader, bound " + bound);
        assertEquals(total, receiver.position(), "bytes received");
        assertEquals(sender.checksum(), receiver.checksum(), "CRC32C");
    }

    private static void awaitWritable(final Selector selector, final SelectionKey key) throws Exception {
        final long deadline = System.nanoTime() + TIMEOUT.toNanos();
        while (true) {
            selector.selectedKeys().clear();
            if (selector.select(1_000) > 0 && key.isWritable()) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("no OP_WRITE within " + TIMEOUT);
            }
        }
    }

    /**
     * Reads one chunk at a time, and only while the writer waits for OP_WRITE or has finished: a reader as slow as
     * the writer lets it be, with no sleeps.
     */
    private static void readWhileWriterStalls(final SocketChannel channel, final PatternReceiver receiver,
        final Pacing pacing, final ConnectionState state) throws Exception {
        while (!receiver.eof()) {
            state.step("await writer stall");
            Await.awaitCondition(TIMEOUT, () -> pacing.writerStalled() || pacing.writerDone,
                () -> "writer stalled or done, " + pacing);
            state.step("read");
            Io.read(channel, receiver, state);
        }
    }

    /**
     * Writer progress the reader paces itself by.
     */
    private static final class Pacing {
        private final AtomicLong stalls = new AtomicLong();
        private final AtomicLong resumes = new AtomicLong();
        private volatile boolean writerDone;

        boolean writerStalled() {
            return stalls.get() > resumes.get();
        }

        @Override
        public String toString() {
            return "stalls=" + stalls + " resumes=" + resumes + " writerDone=" + writerDone;
        }
    }
}
