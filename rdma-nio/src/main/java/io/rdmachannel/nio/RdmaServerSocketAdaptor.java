package io.rdmachannel.nio;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketOption;
import java.net.StandardSocketOptions;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;

import io.rdmachannel.channel.IbSocketAddress;

/**
 * The {@link ServerSocket} view of an RDMA server channel (the JDK's ServerSocketAdaptor): {@code accept()} returns
 * the accepted channel's socket, honours SO_TIMEOUT, and refuses a non-blocking channel with nothing to accept.
 */
final class RdmaServerSocketAdaptor extends ServerSocket {
    private final RdmaServerSocketChannelImpl channel;
    private volatile int timeout;

    RdmaServerSocketAdaptor(final RdmaServerSocketChannelImpl channel) {
        super(new DummySocketImpl());
        this.channel = channel;
    }

    @Override
    public void bind(final SocketAddress local) throws IOException {
        bind(local, 50);
    }

    @Override
    public void bind(final SocketAddress local, final int backlog) throws IOException {
        try {
            channel.bind(local == null ? new InetSocketAddress(0) : local, backlog);
        } catch (final Exception failure) {
            throw SocketExceptions.translate(failure);
        }
    }

    @Override
    public InetAddress getInetAddress() {
        return channel.localAddress() instanceof InetSocketAddress inet ? inet.getAddress() : null;
    }

    @Override
    public int getLocalPort() {
        return switch (channel.localAddress()) {
            case InetSocketAddress inet -> inet.getPort();
            case IbSocketAddress ib -> ib.port();
            case null, default -> -1;
        };
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return channel.localAddress();
    }

    @Override
    public Socket accept() throws IOException {
        SocketChannel accepted = null;
        try {
            final int millis = timeout;
            if (millis > 0) {
                accepted = channel.blockingAccept(MILLISECONDS.toNanos(millis));
            } else {
                accepted = channel.accept();
                if (accepted == null) {
                    throw new IllegalBlockingModeException();
                }
            }
        } catch (final Exception failure) {
            throw SocketExceptions.translate(failure);
        }
        return accepted.socket();
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public ServerSocketChannel getChannel() {
        return channel;
    }

    @Override
    public boolean isBound() {
        return channel.isBound();
    }

    @Override
    public boolean isClosed() {
        return !channel.isOpen();
    }

    @Override
    public void setSoTimeout(final int timeout) throws SocketException {
        if (!channel.isOpen()) {
            throw new SocketException("Socket is closed");
        }
        if (timeout < 0) {
            throw new IllegalArgumentException("timeout < 0");
        }
        this.timeout = timeout;
    }

    @Override
    public int getSoTimeout() throws SocketException {
        if (!channel.isOpen()) {
            throw new SocketException("Socket is closed");
        }
        return timeout;
    }

    @Override
    public void setReuseAddress(final boolean on) throws SocketException {
        try {
            channel.setOption(StandardSocketOptions.SO_REUSEADDR, on);
        } catch (final IOException failure) {
            throw SocketExceptions.toSocketException(failure);
        }
    }

    @Override
    public boolean getReuseAddress() throws SocketException {
        try {
            return channel.getOption(StandardSocketOptions.SO_REUSEADDR);
        } catch (final IOException failure) {
            throw SocketExceptions.toSocketException(failure);
        }
    }

    @Override
    public String toString() {
        if (!isBound()) {
            return "ServerSocket[unbound]";
        }
        return "ServerSocket[addr=" + channel.localAddress() + ",localport=" + getLocalPort() + "]";
    }

    @Override
    public void setReceiveBufferSize(final int size) throws SocketException {
        if (size <= 0) {
            throw new IllegalArgumentException("size cannot be 0 or negative");
        }
        try {
            channel.setOption(StandardSocketOptions.SO_RCVBUF, size);
        } catch (final IOException failure) {
            throw SocketExceptions.toSocketException(failure);
        }
    }

    @Override
    public int getReceiveBufferSize() throws SocketException {
        try {
            return channel.getOption(StandardSocketOptions.SO_RCVBUF);
        } catch (final IOException failure) {
            throw SocketExceptions.toSocketException(failure);
        }
    }

    @Override
    public <T> ServerSocket setOption(final SocketOption<T> name, final T value) throws IOException {
        channel.setOption(name, value);
        return this;
    }

    @Override
    public <T> T getOption(final SocketOption<T> name) throws IOException {
        return channel.getOption(name);
    }

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        return channel.supportedOptions();
    }
}
