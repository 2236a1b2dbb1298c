package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.shm.ShmChildProcess.value;
import static io.rdmachannel.channel.shm.ShmProcessPeer.PIECE;
import static io.rdmachannel.channel.shm.ShmProcessPeer.RECEIVE_DEPTH;
import static io.rdmachannel.channel.shm.ShmProcessPeer.checksum;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.WorkCompletion;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The shm provider between two JVMs: this one and a {@link ShmProcessChild} it starts, connected through a fresh
 * shm directory. Data moves both ways with every opcode; a killed or closing child moves this side's queue pair to
 * ERROR with its receives flushed; and no shared file outlives the two.
 */
class ShmTwoProcessTest {
    private static final long LENGTH = 64L << 20;
    private static final int STREAM_SLOTS = 128;
    private static final int KILL_AFTER = 400;
    private static final long DETECTION_LIMIT_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(30);

    private Path directory;
    private String previousDirectory;
    private ShmChildProcess child;
    private ShmProcessPeer parent;
    private ShmProcessPeer.Endpoint childEndpoint;
    private Object progress = "none";

    @RegisterExtension
    final InvocationInterceptor dumpOnFailure = new InvocationInterceptor() {
        @Override
        public void interceptTestMethod(final Invocation<Void> invocation,
            final ReflectiveInvocationContext<Method> invocationContext, final ExtensionContext extensionContext)
            throws Throwable {
            try {
                invocation.proceed();
            } catch (final Throwable failure) {
                final String state = "parent: " + parent + "\nprogress: " + progress + "\n"
                    + (child == null ? "no child" : child.dump());
                System.err.println("state of " + extensionContext.getDisplayName() + " at failure:\n" + state);
                failure.addSuppressed(new AssertionError("state at failure:\n" + state));
                throw failure;
            }
        }
    };

    @BeforeEach
    void useFreshDirectory() throws IOException {
        final Path devShm = Path.of("/dev/shm");
        final Path base = Files.isDirectory(devShm) && Files.isWritable(devShm) ? devShm : Path.of("/tmp");
        directory = Files.createTempDirectory(base, "rdc");
        previousDirectory = System.getProperty(ShmConfiguration.DIRECTORY_PROP_NAME);
        System.setProperty(ShmConfiguration.DIRECTORY_PROP_NAME, directory.toString());
    }

    @AfterEach
    void closeAll() throws Exception {
        try {
            if (child != null) {
                child.close();
            }
            if (parent != null) {
                parent.close();
            }
        } finally {
            if (previousDirectory == null) {
                System.clearProperty(ShmConfiguration.DIRECTORY_PROP_NAME);
            } else {
                System.setProperty(ShmConfiguration.DIRECTORY_PROP_NAME, previousDirectory);
            }
            ShmDirectory.deleteRecursively(directory);
        }
    }

    @Test
    @Timeout(120)
    void shouldCarryWritesReadsAndSendsFromChildToParent() throws Exception {
        connect(LENGTH);

        final String filled = value(child.command("fill 1 " + LENGTH, "ok"), "crc");
        assertEquals(filled, value(child.command("write " + LENGTH, "ok"), "crc"));
        assertParentHolds(1, filled);

        final String filledForImmediates = value(child.command("fill 2 " + LENGTH, "ok"), "crc");
        child.send("writeimm " + LENGTH);
        parent.receive(LENGTH, true);
        child.expect("ok");
        assertParentHolds(2, filledForImmediates);

        ShmProcessPeer.fill(parent.memory(), 0, LENGTH, 3);
        assertEquals(checksum(parent.memory(), LENGTH), value(child.command("read " + LENGTH, "ok"), "crc"));

        final String filledForSends = value(child.command("fill 4 " + LENGTH, "ok"), "crc");
        child.send("send " + LENGTH);
        parent.receive(LENGTH, false);
        child.expect("ok");
        assertParentHolds(4, filledForSends);

        exitBoth();
        assertDirectoryEmpty();
    }

    @Test
    @Timeout(120)
    void shouldCarryWritesReadsAndSendsFromParentToChild() throws Exception {
        connect(LENGTH);

        ShmProcessPeer.fill(parent.memory(), 0, LENGTH, 5);
        parent.write(WorkRequestOpcode.RDMA_WRITE, LENGTH);
        assertEquals(checksum(parent.memory(), LENGTH), value(child.command("crc " + LENGTH, "ok"), "crc"));

        ShmProcessPeer.fill(parent.memory(), 0, LENGTH, 6);
        child.send("recvimm " + LENGTH);
        parent.write(WorkRequestOpcode.RDMA_WRITE_WITH_IMM, LENGTH);
        assertEquals(checksum(parent.memory(), LENGTH), value(child.expect("ok"), "crc"));

        final String filled = value(child.command("fill 7 " + LENGTH, "ok"), "crc");
        parent.read(LENGTH);
        assertParentHolds(7, filled);

        ShmProcessPeer.fill(parent.memory(), 0, LENGTH, 8);
        child.send("recv " + LENGTH);
        parent.sendMessages(LENGTH);
        assertEquals(checksum(parent.memory(), LENGTH), value(child.expect("ok"), "crc"));

        exitBoth();
        assertDirectoryEmpty();
    }

    @Test
    @Timeout(120)
    void shouldFlushParentWithinOneSecondWhenChildIsKilledMidStream() throws Exception {
        connect((long) STREAM_SLOTS * PIECE);
        final StreamCheck check = new StreamCheck();
        progress = check;
        for (int i = 0; i < RECEIVE_DEPTH; i++) {
            parent.postReceive(i, 0, 0);
        }
        final ReadinessWaiter waiter = new ReadinessWaiter(parent);
        final Thread waiterThread = Thread.ofPlatform().daemon().name("readiness-waiter").start(waiter);
        child.command("stream " + STREAM_SLOTS, "streaming");
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (check.successes < KILL_AFTER) {
            pollStream(check, deadline);
        }

        check.killedAt = System.nanoTime();
        child.process().destroyForcibly();
        deadline = System.nanoTime() + WAIT_NANOS;
        while (check.flushed < RECEIVE_DEPTH) {
            pollStream(check, deadline);
            if (check.errorAt == 0 && parent.queuePair().state() == QueuePairState.ERROR) {
                check.errorAt = System.nanoTime();
            }
        }
        check.allFlushedAt = System.nanoTime();
        waiterThread.join(TimeUnit.SECONDS.toMillis(30));
        System.out.println("crash detection: " + check + ", " + waiter);

        assertEquals(QueuePairState.ERROR, parent.queuePair().state());
        assertTrue(check.successes >= KILL_AFTER, check.toString());
        assertEquals(RECEIVE_DEPTH, check.flushed, check.toString());
        assertTrue(check.allFlushedAt - check.killedAt < DETECTION_LIMIT_NANOS, "flushes too late: " + check);
        assertTrue(waiter.wokenAt != 0 && waiter.wokenAt - check.killedAt < DETECTION_LIMIT_NANOS,
            "the readiness waiter was not woken in time: " + waiter + ", " + check);
        assertEquals(0, parent.receiveQueue().poll(c -> check.onCompletion(c), 16), "completions after the flush");
        assertEquals(137, child.awaitExit(), "exit status of a SIGKILLed child");

        parent.close();
        parent = null;
        assertEquals(List.of(HexFormat.of().formatHex(childEndpoint.gid())), listDirectory(),
            "only the killed child's folder should remain until it is reclaimed");
        try (RdmaDevice reclaimer = RdmaProviders.byName("shm").openDevice(null)) {
            assertEquals(List.of(HexFormat.of().formatHex(reclaimer.queryGid(1, 0))), listDirectory(),
                "opening a device reclaims the dead child's folder");
        }
        assertDirectoryEmpty();
    }

    @Test
    @Timeout(120)
    void shouldFlushParentWhenChildClosesItsQueuePair() throws Exception {
        connect(4L * PIECE);
        child.command("fill 9 " + 4 * PIECE, "ok");
        child.send("writeimm " + 4 * PIECE);
        parent.receive(4L * PIECE, true);
        child.expect("ok");
        final StreamCheck check = new StreamCheck();
        progress = check;
        for (int i = 0; i < RECEIVE_DEPTH; i++) {
            parent.postReceive(i, 0, 0);
        }

        check.killedAt = System.nanoTime();
        child.command("closeqp", "ok");
        final long deadline = System.nanoTime() + WAIT_NANOS;
        while (check.flushed < RECEIVE_DEPTH) {
            pollStream(check, deadline);
            if (check.errorAt == 0 && parent.queuePair().state() == QueuePairState.ERROR) {
                check.errorAt = System.nanoTime();
            }
        }
        check.allFlushedAt = System.nanoTime();
        System.out.println("graceful close detection: " + check);

        assertEquals(QueuePairState.ERROR, parent.queuePair().state());
        assertEquals(0, check.successes, check.toString());
        assertTrue(check.allFlushedAt - check.killedAt < DETECTION_LIMIT_NANOS, "flushes too late: " + check);
        exitBoth();
        assertDirectoryEmpty();
    }

    @Test
    @Timeout(60)
    void shouldKeepTheFoldersOfALiveProcessWithTwoDevicesWhenAnotherProcessOpensOne() throws Exception {
        try (RdmaDevice first = RdmaProviders.byName("shm").openDevice(null);
            RdmaDevice second = RdmaProviders.byName("shm").openDevice(null)) {
            final List<String> parentFolders = Stream.of(first.queryGid(1, 0), second.queryGid(1, 0))
                .map(gid -> HexFormat.of().formatHex(gid)).sorted().toList();
            assertEquals(parentFolders, listDirectory());

            child = ShmChildProcess.start(directory, PIECE);
            childEndpoint = ShmProcessPeer.Endpoint.parse(child.expect("gid="));
            final List<String> expected = Stream.concat(parentFolders.stream(),
                Stream.of(HexFormat.of().formatHex(childEndpoint.gid()))).sorted().toList();
            assertEquals(expected, listDirectory(), "the child's device reclaimed a folder of a live process");
            for (final String folder : parentFolders) {
                assertTrue(Files.exists(directory.resolve(folder).resolve(ShmDirectory.LOCK_FILE)), folder);
            }
            child.endInput();
            assertEquals(0, child.awaitExit());
        }
        assertDirectoryEmpty();
    }

    // ----- helpers -----

    private void connect(final long regionLength) throws IOException {
        child = ShmChildProcess.start(directory, regionLength);
        parent = ShmProcessPeer.open(regionLength);
        childEndpoint = ShmProcessPeer.Endpoint.parse(child.expect("gid="));
        child.send(parent.endpoint().format());
        parent.connect(childEndpoint);
        child.expect("ready");
        assertEquals(QueuePairState.READY_TO_SEND, parent.queuePair().state());
    }

    private void assertParentHolds(final long seed, final String childChecksum) {
        final long mismatch = ShmProcessPeer.mismatch(parent.memory(), 0, LENGTH, seed);
        assertEquals(-1, mismatch, "piece " + mismatch / PIECE + " differs at byte " + mismatch % PIECE);
        assertEquals(childChecksum, checksum(parent.memory(), LENGTH));
    }

    private void exitBoth() throws Exception {
        child.command("exit", "bye");
        assertEquals(0, child.awaitExit());
        parent.close();
        parent = null;
    }

    private void pollStream(final StreamCheck check, final long deadline) {
        final int count = parent.receiveQueue().poll(check::onCompletion, 16);
        for (; check.toRepost > 0; check.toRepost--) {
            parent.postReceive(RECEIVE_DEPTH + check.successes - check.toRepost, 0, 0);
        }
        if (count == 0) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("timed out: " + check);
            }
            Thread.yield();
        }
    }

    private List<String> listDirectory() throws IOException {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.map(path -> path.getFileName().toString()).sorted().toList();
        }
    }

    private void assertDirectoryEmpty() throws IOException {
        assertEquals(List.of(), listDirectory(), "shared files left in " + directory);
    }

    /**
     * Checks the receives of a {@link ShmProcessPeer#stream}: SUCCESS in sequence with intact pieces, then only
     * WORK_REQUEST_FLUSHED.
     */
    private final class StreamCheck {
        long successes;
        int flushed;
        int toRepost;
        long killedAt;
        long errorAt;
        long firstFlushAt;
        long allFlushedAt;

        void onCompletion(final WorkCompletion completion) {
            if (completion.status() == CompletionStatus.WORK_REQUEST_FLUSHED) {
                if (flushed++ == 0) {
                    firstFlushAt = System.nanoTime();
                }
                return;
            }
            final long piece = (successes % STREAM_SLOTS) * PIECE;
            if (completion.status() != CompletionStatus.SUCCESS || flushed > 0
                || completion.opcode() != CompletionOpcode.RECV_RDMA_WITH_IMM || !completion.hasImmediate()
                || completion.immediate() != (int) successes || completion.workRequestId() != successes
                || ShmProcessPeer.mismatch(parent.memory(), piece, PIECE, successes) != -1) {
                throw new IllegalStateException("completion " + completion + " breaks the stream after " + this);
            }
            successes++;
            toRepost++;
        }

        private long sinceKill(final long at) {
            return at == 0 ? -1 : TimeUnit.NANOSECONDS.toMicros(at - killedAt);
        }

        @Override
        public String toString() {
            return "StreamCheck{successes=" + successes + ", flushed=" + flushed + ", errorAfterMicros="
                + sinceKill(errorAt) + ", firstFlushAfterMicros=" + sinceKill(firstFlushAt)
                + ", allFlushedAfterMicros=" + sinceKill(allFlushedAt) + '}';
        }
    }

    /**
     * Waits on the parent's readiness source with its receive completion queue armed, until the queue pair is in
     * ERROR; it rearms after every signal, and checks the state after arming so as not to miss the last one.
     */
    private static final class ReadinessWaiter implements Runnable {
        private final ShmProcessPeer peer;
        volatile long wokenAt;
        volatile int signals;
        volatile String how = "waiting";

        ReadinessWaiter(final ShmProcessPeer peer) {
            this.peer = peer;
        }

        @Override
        public void run() {
            try {
                final long deadline = System.nanoTime() + WAIT_NANOS;
                while (System.nanoTime() - deadline < 0) {
                    peer.receiveQueue().requestNotification();
                    if (peer.queuePair().state() == QueuePairState.ERROR) {
                        finish("state read after arming");
                        return;
                    }
                    final int count = peer.readiness().await(TimeUnit.SECONDS.toNanos(10), token -> { });
                    signals += count;
                    if (peer.queuePair().state() == QueuePairState.ERROR) {
                        finish(count > 0 ? "signal" : "await returned without a signal");
                        return;
                    }
                }
                how = "gave up";
            } catch (final IOException | RuntimeException ex) {
                how = "failed: " + ex;
            }
        }

        private void finish(final String reason) {
            wokenAt = System.nanoTime();
            how = reason;
        }

        @Override
        public String toString() {
            return "ReadinessWaiter{how=" + how + ", signals=" + signals + '}';
        }
    }
}
