package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Moves the data of a set of {@link Endpoint}s to completion in one {@link IoMode}: with blocking channels, one
 * thread per sending side and one per receiving side; non-blocking, one selector loop on the calling thread serving
 * every endpoint.
 */
final class TransferDriver {

    private static final int MAX_OPS_PER_EVENT = 16;

    private TransferDriver() {
    }

    /**
     * Runs every endpoint's transfer until each sender has written all and shut down its output and each receiver
     * has seen end of stream.
     *
     * @param transport the transport (for the selector).
     * @param mode      the mode.
     * @param endpoints the endpoints.
     * @param timeout   how long the whole transfer may take.
     * @param state     the test's state (steps are recorded there).
     * @throws Exception the first failure of any side.
     */
    static void run(final ContractTransport transport, final IoMode mode, final List<Endpoint> endpoints,
        final Duration timeout, final ConnectionState state) throws Exception {
        if (mode.blockingChannels()) {
            runBlocking(mode, endpoints, timeout, state);
        } else {
            runSelector(transport, endpoints, timeout, state);
        }
    }

    private static void runBlocking(final IoMode mode, final List<Endpoint> endpoints, final Duration timeout,
        final ConnectionState state) throws Exception {
        final List<Forked<Void>> tasks = new ArrayList<>();
        for (final Endpoint endpoint : endpoints) {
            endpoint.channel().configureBlocking(true);
            if (endpoint.sender() != null) {
                tasks.add(mode.fork(endpoint.name() + "-sender", () -> {
                    state.step("writing");
                    endpoint.sender().writeAll(endpoint.channel());
                    state.step("shutdownOutput");
                    endpoint.channel().shutdownOutput();
                    state.step("sent all");
                    return null;
                }));
            }
            if (endpoint.receiver() != null) {
                tasks.add(mode.fork(endpoint.name() + "-receiver", () -> {
                    state.step("reading");
                    endpoint.receiver().readToEnd(endpoint.channel());
                    state.step("read to end of stream");
                    return null;
                }));
            }
        }
        final long deadline = System.nanoTime() + timeout.toNanos();
        Exception failure = null;
        for (final Forked<Void> task : tasks) {
            try {
                task.join(Duration.ofNanos(Math.max(1, deadline - System.nanoTime())));
            } catch (final Exception ex) {
                if (failure == null) {
                    failure = ex;
                    closeAll(endpoints);
                } else {
                    failure.addSuppressed(ex);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static void runSelector(final ContractTransport transport, final List<Endpoint> endpoints,
        final Duration timeout, final ConnectionState state) throws Exception {
        try (Selector selector = transport.openSelector()) {
            int open = 0;
            for (final Endpoint endpoint : endpoints) {
                endpoint.channel().configureBlocking(false);
                final int ops = (endpoint.sender() != null ? SelectionKey.OP_WRITE : 0)
                    | (endpoint.receiver() != null ? SelectionKey.OP_READ : 0);
                if (ops != 0) {
                    endpoint.channel().register(selector, ops, endpoint);
                    open++;
                }
            }
            state.watch("driver.selector.keys", () -> selector.isOpen() ? selector.keys().size() : "closed");
            final long deadline = System.nanoTime() + timeout.toNanos();
            while (open > 0) {
                if (System.nanoTime() - deadline > 0) {
                    throw new AssertionError("transfer did not finish within " + timeout + ", " + open
                        + " endpoints busy");
                }
                state.step("select");
                selector.select(TransferDriver::onReady, 1_000);
                open = (int) selector.keys().stream().filter(SelectionKey::isValid).count();
            }
        }
    }

    private static void onReady(final SelectionKey key) {
        final Endpoint endpoint = (Endpoint) key.attachment();
        try {
            if (key.isWritable()) {
                for (int i = 0; i < MAX_OPS_PER_EVENT; i++) {
                    final int written = endpoint.sender().writeOnce(endpoint.channel());
                    if (written < 0) {
                        endpoint.channel().shutdownOutput();
                        key.interestOpsAnd(~SelectionKey.OP_WRITE);
                        break;
                    }
                    if (endpoint.sender().stalled()) {
                        break;
                    }
                }
            }
            if (key.isReadable()) {
                for (int i = 0; i < MAX_OPS_PER_EVENT; i++) {
                    final int read = endpoint.receiver().readOnce(endpoint.channel());
                    if (read < 0) {
                        key.interestOpsAnd(~SelectionKey.OP_READ);
                        break;
                    }
                    if (read == 0) {
                        break;
                    }
                }
            }
            if (key.interestOps() == 0) {
                key.cancel();
            }
        } catch (final IOException ex) {
            throw new UncheckedIOException(endpoint.name() + ": " + ex, ex);
        }
    }

    private static void closeAll(final List<Endpoint> endpoints) {
        for (final Endpoint endpoint : endpoints) {
            try {
                endpoint.channel().close();
            } catch (final IOException ignore) {
                // the first failure is what the test reports
            }
        }
    }
}
