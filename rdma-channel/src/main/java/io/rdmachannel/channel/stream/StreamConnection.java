package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.ConnectionStatistics;
import io.rdmachannel.channel.spi.WaitSet;
import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.util.function.BooleanSupplier;

/**
 * An established byte stream. All calls are non-blocking. At most one thread reads and one thread writes at a
 * time (the NIO face's read and write locks); {@link #readyOps()}, {@link #arm()} and the shutdown and close calls
 * may come from any thread.
 */
public interface StreamConnection extends AutoCloseable {
    /**
     * Read into {@code dst} what has arrived.
     *
     * @param dst the buffer; heap or direct.
     * @return the bytes read, 0 if none are available, -1 at end of stream (peer shut down its output or closed,
     *     or this side shut down its input).
     * @throws java.net.SocketException "Connection reset" once the connection failed (sticky).
     */
    int read(ByteBuffer dst) throws IOException;

    /**
     * Scattering read; fills the buffers in order.
     *
     * @param dsts the buffers.
     * @param offset the first buffer.
     * @param length the number of buffers.
     * @return as {@link #read(ByteBuffer)}.
     * @throws IOException as {@link #read(ByteBuffer)}.
     */
    long read(ByteBuffer[] dsts, int offset, int length) throws IOException;

    /**
     * Write as much of {@code src} as flow control allows now.
     *
     * @param src the bytes; heap or direct.
     * @return the bytes taken (they will be delivered unless the connection fails), 0 if none can be taken now.
     * @throws java.nio.channels.ClosedChannelException after {@link #shutdownOutput()}.
     * @throws IOException "Broken pipe" (an {@code IOException}, as the JDK's channels throw) after the peer closed,
     *     or a {@link java.net.SocketException} "Connection reset" after a failure.
     */
    int write(ByteBuffer src) throws IOException;

    /**
     * Gathering write; drains the buffers in order.
     *
     * @param srcs the buffers.
     * @param offset the first buffer.
     * @param length the number of buffers.
     * @return as {@link #write(ByteBuffer)}.
     * @throws IOException as {@link #write(ByteBuffer)}.
     */
    long write(ByteBuffer[] srcs, int offset, int length) throws IOException;

    /**
     * Process arrived events and report readiness: {@link StreamReadiness#READ} when a read would not return 0,
     * {@link StreamReadiness#WRITE} when a write would take bytes or fail.
     *
     * @return ready bits.
     */
    int readyOps();

    /**
     * Call the observer once when {@link #readyOps()} may have changed (arms the completion queue).
     */
    void arm();

    /**
     * Wait by polling instead of parking, for up to the given time, until one of the {@code interest} bits is ready.
     * Runs on the caller's thread: no wake-up and no thread hop.
     *
     * @param nanos how long to spin.
     * @param interest {@link StreamReadiness} bits to wait for.
     * @return {@link #readyOps()} at the end.
     */
    int spin(long nanos, int interest);

    /**
     * Whether a platform thread can wait for this connection itself ({@link #awaitDirect}), woken by the event it
     * waits for (the peer's message, a send completion) without a poller thread in between.
     *
     * @return false where only {@link #arm()} and the observer report readiness.
     */
    default boolean supportsDirectWait() {
        return false;
    }

    /**
     * Park the calling platform thread until what {@code interest} waits for may have happened: a reader waits for
     * the receive side only (a send completion does not wake it); a writer for the peer's credits or regions when it
     * is short of them, else for its own sends to complete. Returns at once if the connection is ready for
     * {@code interest}, or if {@code stillWaiting} says no after the thread registered as a waiter (so a
     * {@link #wakeDirectWaiters()} after the caller's state change cannot be missed). Spurious returns are possible:
     * the caller tries its operation and waits again. Virtual threads must not call it: it blocks the carrier.
     *
     * @param interest {@link StreamReadiness#READ} or {@link StreamReadiness#WRITE}.
     * @param timeoutNanos the longest wait, negative for none.
     * @param stillWaiting checked after registering: false returns at once (the channel closed or shut down).
     * @throws UnsupportedOperationException if {@link #supportsDirectWait()} is false.
     */
    default void awaitDirect(final int interest, final long timeoutNanos, final BooleanSupplier stillWaiting) {
        throw new UnsupportedOperationException("this connection cannot wake a waiting thread directly");
    }

    /**
     * Whether a thread can wait for this connection together with others in one {@link WaitSet} ({@link #armDirect}).
     *
     * @return false where the completion queues cannot be waited on in a set.
     */
    default boolean supportsWaitSet() {
        return false;
    }

    /**
     * A new, empty set of the kind this connection's completion queues join
     * ({@link io.rdmachannel.channel.spi.CompletionQueue#newWaitSet()}).
     *
     * @return the set, which the caller closes; null if {@link #supportsWaitSet()} is false.
     */
    default WaitSet newWaitSet() {
        return null;
    }

    /**
     * Arm for a platform thread that waits for several connections at once (a selector) on a {@link WaitSet}: the
     * words of the completion queues {@code interest} waits on (the receive side for a reader; both for a writer) go
     * into the set, and until {@link #disarmDirect()} the connection wakes them also for what is not a completion (a
     * keepalive failure, a local shutdown, its release) and reports such changes to its observer. The caller reads the
     * readiness again after arming, and calls {@link #disarmDirect()} once after its wait.
     *
     * @param interest {@link StreamReadiness} bits waited for.
     * @param set the waiting thread's set.
     * @return false if the connection cannot be waited on in a set (no direct waits, not established, the set too
     *     full): nothing was added or armed, and the caller arms with {@link #arm()} instead.
     */
    default boolean armDirect(final int interest, final WaitSet set) {
        return false;
    }

    /**
     * End one {@link #armDirect} that returned true.
     */
    default void disarmDirect() {
        // nothing was armed
    }

    /**
     * Wake every thread in {@link #awaitDirect} (a close, a shutdown, an interrupt). Cheap when none waits; safe
     * from any thread.
     */
    default void wakeDirectWaiters() {
        // nobody waits directly
    }

    /**
     * Start or stop probing an idle connection so a dead peer is noticed (SO_KEEPALIVE), at any time: an accepted
     * connection, or one connected before, gets the probe from now on.
     */
    void keepAlive(boolean enabled);

    /**
     * What this connection has done so far; also after close. Safe from any thread; it takes the connection's
     * locks briefly, so a statistics reader never makes the data path allocate or wait for long.
     *
     * @return a snapshot of the counters.
     */
    ConnectionStatistics statistics();

    /**
     * End this side's output (a half-close); the peer reads end of stream after the bytes written so far.
     * Idempotent.
     *
     * @throws IOException if the shutdown message cannot be sent.
     */
    void shutdownOutput() throws IOException;

    /**
     * End this side's input: reads return -1, arriving bytes are discarded. Idempotent.
     */
    void shutdownInput();

    /**
     * Whether {@link #shutdownOutput()} was called.
     *
     * @return true after a half-close of output.
     */
    boolean isOutputShutdown();

    /**
     * Whether {@link #shutdownInput()} was called.
     *
     * @return true after a half-close of input.
     */
    boolean isInputShutdown();

    /**
     * The local address.
     *
     * @return the address.
     */
    SocketAddress localAddress();

    /**
     * The peer's address; equals the address the connector was given.
     *
     * @return the address.
     */
    SocketAddress remoteAddress();

    /**
     * A one-line dump of the connection's protocol state (positions, credits, queue-pair state, last completion
     * status) for diagnostics.
     *
     * @return the state.
     */
    String describe();

    /**
     * Close gracefully: bytes already taken are delivered, then the peer reads end of stream. Releases every
     * resource. Idempotent.
     */
    @Override
    void close();

    /**
     * Close abortively (SO_LINGER 0): the peer sees a reset. Releases every resource. Idempotent.
     */
    void abort();
}
