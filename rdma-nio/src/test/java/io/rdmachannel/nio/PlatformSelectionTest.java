package io.rdmachannel.nio;

import static java.nio.channels.SelectionKey.OP_READ;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * An RDMA selector with platform channels (JDK pipes here) registered next to RDMA channels: readiness of both in
 * one selection, waiting in the platform selector and being woken there by RDMA readiness and wakeup, interest
 * changes, close and cancel releasing the platform channel, and no allocation per selection.
 */
@Timeout(20)
class PlatformSelectionTest {
    private final ChannelFixture fixture = new ChannelFixture();
    private final Selector selector;
    private final Pipe pipe;

    PlatformSelectionTest() throws IOException {
        selector = fixture.provider.openSelector();
        pipe = fixture.provider.openPipe();
        pipe.source().configureBlocking(false);
    }

    @AfterEach
    void close() throws IOException {
        selector.close();
        pipe.sink().close();
        pipe.source().close();
        fixture.close();
    }

    private SocketChannel[] nonBlockingPair() throws IOException {
        final SocketChannel[] pair = fixture.pair();
        pair[0].configureBlocking(false);
        pair[1].configureBlocking(false);
        return pair;
    }

    private void writeToPipe() throws IOException {
        pipe.sink().write(ByteBuffer.wrap(new byte[] {1}));
    }

    private static <T> FutureTask<T> start(final boolean virtual, final java.util.concurrent.Callable<T> task) {
        final FutureTask<T> future = new FutureTask<>(task);
        (virtual ? Thread.ofVirtual() : Thread.ofPlatform().daemon()).name("selecting").start(future);
        return future;
    }

    @Test
    void shouldReportPlatformAndRdmaReadinessInOneSelection() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        final SelectionKey rdmaKey = pair[0].register(selector, OP_READ);
        final SelectionKey pipeKey = pipe.source().register(selector, OP_READ);
        assertSame(selector, pipeKey.selector());
        assertSame(pipeKey, pipe.source().keyFor(selector));
        assertEquals(0, selector.selectNow());

        writeToPipe();
        assertEquals(1, selector.select(10_000));
        assertEquals(Set.of(pipeKey), selector.selectedKeys());
        assertEquals(OP_READ, pipeKey.readyOps());

        // the pipe stays readable, so a selection may return at once with 0 (its key is selected with the same
        // ready set, as the JDK's) before the RDMA byte is seen: select until both keys are in the selected set
        pair[1].write(ByteBuffer.wrap(new byte[] {2}));
        ChannelFixture.await("both keys selected", () -> {
            try {
                selector.select(1000);
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
            return selector.selectedKeys().equals(Set.of(pipeKey, rdmaKey));
        });
        assertEquals(OP_READ, rdmaKey.readyOps());
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldBeWokenInThePlatformSelectorByRdmaReadiness(final boolean virtual) throws Exception {
        final SocketChannel[] pair = nonBlockingPair();
        final SelectionKey rdmaKey = pair[0].register(selector, OP_READ);
        pipe.source().register(selector, OP_READ);
        selector.selectNow();
        final Thread[] selecting = new Thread[1];
        final FutureTask<Integer> selection = start(virtual, () -> {
            selecting[0] = Thread.currentThread();
            return selector.select();
        });
        ChannelFixture.await("the selection to start", () -> selecting[0] != null);
        ChannelFixture.await("the selection to wait", () -> waits(selecting[0]));

        pair[1].write(ByteBuffer.wrap(new byte[] {1}));

        assertEquals(1, selection.get(10, TimeUnit.SECONDS));
        assertEquals(Set.of(rdmaKey), selector.selectedKeys());
    }

    @Test
    void shouldEndAPlatformWaitOnWakeup() throws Exception {
        pipe.source().register(selector, OP_READ);
        final Thread[] selecting = new Thread[1];
        final FutureTask<Integer> selection = start(false, () -> {
            selecting[0] = Thread.currentThread();
            return selector.select();
        });
        ChannelFixture.await("the selection to start", () -> selecting[0] != null);
        ChannelFixture.await("the selection to wait", () -> waits(selecting[0]));

        selector.wakeup();

        assertEquals(0, selection.get(10, TimeUnit.SECONDS));
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void shouldEndAPlatformWaitOnInterruptKeepingTheStatus(final boolean virtual) throws Exception {
        pipe.source().register(selector, OP_READ);
        final Thread[] selecting = new Thread[1];
        final boolean[] interrupted = new boolean[1];
        final FutureTask<Integer> selection = start(virtual, () -> {
            selecting[0] = Thread.currentThread();
            try {
                return selector.select();
            } finally {
                interrupted[0] = Thread.currentThread().isInterrupted();
            }
        });
        ChannelFixture.await("the selection to start", () -> selecting[0] != null);
        ChannelFixture.await("the selection to wait", () -> waits(selecting[0]));

        selecting[0].interrupt();

        assertEquals(0, selection.get(10, TimeUnit.SECONDS));
        assertTrue(interrupted[0], "the interrupt status is kept");
        assertTrue(selector.isOpen(), "an interrupt does not close a selector");
    }

    @Test
    void shouldNotReturnEarlyFromATimedSelectionWithPlatformKeys() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        pair[0].register(selector, OP_READ);
        pipe.source().register(selector, OP_READ);

        final long start = System.nanoTime();
        assertEquals(0, selector.select(200));
        final long waited = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        assertTrue(waited >= 195, "select(200) returned after " + waited + " ms with nothing ready");
    }

    @Test
    void shouldApplyInterestChangesToThePlatformRegistration() throws IOException {
        final SelectionKey key = pipe.source().register(selector, 0);
        writeToPipe();
        assertEquals(0, selector.selectNow(), "no interest, no readiness");

        key.interestOps(OP_READ);

        assertEquals(1, selector.selectNow());
        assertTrue(key.isReadable());
        selector.selectedKeys().clear();
        key.interestOps(0);
        assertEquals(0, selector.selectNow());
    }

    @Test
    void shouldDropTheKeyOfAClosedPlatformChannelAndReleaseIt() throws IOException {
        final SelectionKey key = pipe.source().register(selector, OP_READ);
        selector.selectNow();

        pipe.source().close();

        assertFalse(key.isValid());
        selector.selectNow();
        assertFalse(selector.keys().contains(key));
        assertFalse(pipe.source().isRegistered(), "no selector holds the closed channel any more");
        // the platform released the pipe's read end: writing to the write end fails
        assertTrue(writeFails(), "the closed source's file descriptor was released");
    }

    @Test
    void shouldLetACancelledPlatformChannelBeRegisteredAgain() throws IOException {
        final SelectionKey first = pipe.source().register(selector, OP_READ);
        selector.selectNow();
        first.cancel();
        selector.selectNow();

        final SelectionKey second = pipe.source().register(selector, OP_READ);
        writeToPipe();

        assertEquals(1, selector.selectNow());
        assertEquals(Set.of(second), selector.selectedKeys());
    }

    @Test
    void shouldReleasePlatformChannelsWhenItCloses() throws IOException {
        final SelectionKey key = pipe.source().register(selector, OP_READ);
        selector.selectNow();
        pipe.source().close();

        selector.close();

        assertFalse(key.isValid());
        assertFalse(pipe.source().isRegistered());
        assertTrue(writeFails(), "the closed source's file descriptor was released");
    }

    private boolean writeFails() {
        try {
            writeToPipe();
            return false;
        } catch (final IOException ex) {
            return true;
        }
    }

    /**
     * With a platform channel (and an RDMA channel) registered, a steady selection loop still allocates nothing.
     */
    @Test
    void shouldNotAllocatePerSelectionWithPlatformKeys() throws IOException {
        final SocketChannel[] pair = nonBlockingPair();
        pair[0].register(selector, OP_READ);
        pipe.source().register(selector, OP_READ);

        SelectionAllocation.assertNoAllocation(selector, pipe.sink());
    }

    /**
     * Whether the thread waits: parked, or in the platform selector's native wait.
     */
    private static boolean waits(final Thread thread) {
        final Thread.State state = thread.getState();
        if (state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) {
            return true;
        }
        final StackTraceElement[] stack = thread.getStackTrace();
        return stack.length > 0 && stack[0].isNativeMethod() && stack[0].getClassName().equals("sun.nio.ch.EPoll");
    }
}
