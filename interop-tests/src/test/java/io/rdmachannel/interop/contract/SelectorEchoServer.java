package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An echo server on one selector thread: every connection is non-blocking and registered with the same selector.
 */
final class SelectorEchoServer implements EchoServer, Runnable {

    private static final int BUFFER_SIZE = 64 * 1024;

    private final ServerSocketChannel listener;
    private final Selector selector;
    private final SocketAddress address;
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong open = new AtomicLong();
    private final AtomicLong maxOpen = new AtomicLong();
    private final AtomicLong echoed = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile boolean running = true;
    private Forked<Void> loop;

    private SelectorEchoServer(final ServerSocketChannel listener, final Selector selector) throws IOException {
        this.listener = listener;
        this.selector = selector;
        this.address = listener.getLocalAddress();
    }

    static SelectorEchoServer start(final ContractTransport transport, final int backlog) throws IOException {
        final ServerSocketChannel listener = transport.openServerSocketChannel();
        final Selector selector;
        try {
            listener.bind(transport.bindAddress(), backlog);
            listener.configureBlocking(false);
            selector = transport.openSelector();
            listener.register(selector, SelectionKey.OP_ACCEPT);
        } catch (final IOException ex) {
            listener.close();
            throw ex;
        }
        final SelectorEchoServer server = new SelectorEchoServer(listener, selector);
        server.loop = IoMode.BLOCKING.fork("selector-echo-server", () -> {
            server.run();
            return null;
        });
        return server;
    }

    @Override
    public void run() {
        try {
            while (running) {
                selector.select(this::onReady);
            }
        } catch (final Throwable ex) {
            failure.compareAndSet(null, ex);
        }
    }

    /**
     * A connection is either reading (interest OP_READ, buffer empty) or draining what it read (interest OP_WRITE),
     * so it never reads more than it can write back.
     */
    private void onReady(final SelectionKey key) {
        try {
            if (key.isAcceptable()) {
                acceptAll();
                return;
            }
            final SocketChannel channel = (SocketChannel) key.channel();
            final ByteBuffer buffer = (ByteBuffer) key.attachment();
            if (key.isReadable()) {
                buffer.clear();
                if (channel.read(buffer) < 0) {
                    finish(channel);
                    return;
                }
                buffer.flip();
            }
            if (buffer.hasRemaining()) {
                echoed.addAndGet(channel.write(buffer));
            }
            key.interestOps(buffer.hasRemaining() ? SelectionKey.OP_WRITE : SelectionKey.OP_READ);
        } catch (final IOException ex) {
            failure.compareAndSet(null, ex);
            key.cancel();
        }
    }

    private void acceptAll() throws IOException {
        SocketChannel channel;
        while ((channel = listener.accept()) != null) {
            channel.configureBlocking(false);
            channel.register(selector, SelectionKey.OP_READ, ByteBuffer.allocate(BUFFER_SIZE).flip());
            accepted.incrementAndGet();
            maxOpen.accumulateAndGet(open.incrementAndGet(), Math::max);
        }
    }

    private void finish(final SocketChannel channel) throws IOException {
        channel.shutdownOutput();
        channel.close();
        open.decrementAndGet();
    }

    @Override
    public SocketAddress address() {
        return address;
    }

    @Override
    public long accepted() {
        return accepted.get();
    }

    @Override
    public long open() {
        return open.get();
    }

    long maxOpen() {
        return maxOpen.get();
    }

    @Override
    public long echoed() {
        return echoed.get();
    }

    @Override
    public void checkHealthy() throws Exception {
        final Throwable ex = failure.get();
        if (ex instanceof Exception exception) {
            throw exception;
        }
        if (ex instanceof Error error) {
            throw error;
        }
    }

    @Override
    public void close() throws IOException {
        running = false;
        selector.wakeup();
        try {
            joinQuietly(loop);
        } finally {
            for (final SelectionKey key : selector.keys()) {
                key.channel().close();
            }
            selector.close();
            listener.close();
        }
    }

    private static void joinQuietly(final Forked<Void> thread) throws IOException {
        try {
            thread.join(Duration.ofSeconds(10));
        } catch (final IOException ex) {
            throw ex;
        } catch (final Exception ex) {
            throw new IOException("echo server thread did not end cleanly", ex);
        }
    }

    @Override
    public String toString() {
        return "selector echo server " + address + " accepted=" + accepted + " open=" + open + " maxOpen=" + maxOpen
            + " echoed=" + echoed + " failure=" + failure.get();
    }
}
