package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * An echo server with blocking channels: an acceptor thread and one thread per connection, all of the mode's kind
 * (platform or virtual).
 */
final class BlockingEchoServer implements EchoServer {

    private static final int BUFFER_SIZE = 64 * 1024;

    private final IoMode mode;
    private final ServerSocketChannel listener;
    private final SocketAddress address;
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    private final AtomicLong accepted = new AtomicLong();
    private final AtomicLong echoed = new AtomicLong();
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private volatile boolean running = true;
    private Forked<Void> acceptor;

    private BlockingEchoServer(final IoMode mode, final ServerSocketChannel listener) throws IOException {
        this.mode = mode;
        this.listener = listener;
        this.address = listener.getLocalAddress();
    }

    static BlockingEchoServer start(final ContractTransport transport, final IoMode mode, final int backlog)
        throws IOException {
        final ServerSocketChannel listener = transport.openServerSocketChannel();
        try {
            listener.bind(transport.bindAddress(), backlog);
        } catch (final IOException ex) {
            listener.close();
            throw ex;
        }
        final BlockingEchoServer server = new BlockingEchoServer(mode, listener);
        server.acceptor = mode.fork("echo-acceptor", () -> {
            server.acceptLoop();
            return null;
        });
        return server;
    }

    private void acceptLoop() {
        try {
            while (running) {
                final SocketChannel channel = listener.accept();
                connections.add(channel);
                final long id = accepted.incrementAndGet();
                mode.fork("echo-" + id, () -> {
                    echo(channel);
                    return null;
                });
            }
        } catch (final ClosedChannelException ex) {
            if (running) {
                failure.compareAndSet(null, ex);
            }
        } catch (final Throwable ex) {
            failure.compareAndSet(null, ex);
        }
    }

    private void echo(final SocketChannel channel) {
        final ByteBuffer buffer = ByteBuffer.allocate(BUFFER_SIZE);
        try (channel) {
            while (channel.read(buffer.clear()) >= 0) {
                buffer.flip();
                while (buffer.hasRemaining()) {
                    echoed.addAndGet(channel.write(buffer));
                }
            }
            channel.shutdownOutput();
        } catch (final IOException ex) {
            if (running) {
                failure.compareAndSet(null, ex);
            }
        } finally {
            connections.remove(channel);
        }
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
        return connections.size();
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
        listener.close();
        for (final SocketChannel channel : connections) {
            channel.close();
        }
        joinQuietly(acceptor);
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
        return "blocking echo server (" + mode + ") " + address + " accepted=" + accepted + " open="
            + connections.size() + " echoed=" + echoed + " failure=" + failure.get();
    }
}
