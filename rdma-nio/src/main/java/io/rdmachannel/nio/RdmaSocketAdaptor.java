package io.rdmachannel.nio;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketOption;
import java.net.StandardSocketOptions;
import java.net.UnknownHostException;
import java.nio.channels.SocketChannel;
import java.util.Objects;
import java.util.Set;

import io.rdmachannel.channel.IbSocketAddress;

/**
 * The {@link Socket} view of an RDMA socket channel (the JDK's SocketAdaptor). It overrides every public method so
 * that no platform socket is ever created. Its streams use the channel's read and write locks, not
 * {@code blockingLock()}, so a blocked stream read does not hold up a stream write; {@code SO_TIMEOUT} applies to
 * stream reads. Channel exceptions are translated as the JDK translates them.
 */
final class RdmaSocketAdaptor extends Socket {
    private final RdmaSocketChannelImpl channel;
    private volatile int timeout;
    private volatile boolean oobInline;

    private RdmaSocketAdaptor(final RdmaSocketChannelImpl channel) throws SocketException {
        super(new DummySocketImpl());
        this.channel = channel;
    }

    static RdmaSocketAdaptor create(final RdmaSocketChannelImpl channel) {
        try {
            return new RdmaSocketAdaptor(channel);
        } catch (final SocketException ex) {
            // Socket(SocketImpl) declares it but throws nothing for a non-null impl
            throw new IllegalStateException(ex);
        }
    }

    private InetSocketAddress inetLocal() {
        return channel.localAddress() instanceof InetSocketAddress inet ? inet : null;
    }

    private InetSocketAddress inetRemote() {
        return channel.remoteAddress() instanceof InetSocketAddress inet ? inet : null;
    }

    @Override
    public void connect(final SocketAddress remote) throws IOException {
        connect(remote, 0);
    }

    @Override
    public void connect(final SocketAddress remote, final int timeout) throws IOException {
        if (remote == null) {
            throw new IllegalArgumentException("connect: The address can't be null");
        }
        if (remote instanceof InetSocketAddress inet && inet.isUnresolved()) {
            if (!channel.isOpen()) {
                throw new SocketException("Socket is closed");
            }
            if (channel.isConnected()) {
                throw new SocketException("Already connected");
            }
            close();
            throw new UnknownHostException(inet.getHostName());
        }
        if (timeout < 0) {
            throw new IllegalArgumentException("connect: timeout can't be negative");
        }
        try {
            channel.blockingConnect(remote, timeout > 0 ? MILLISECONDS.toNanos(timeout) : Long.MAX_VALUE);
        } catch (final Exception failure) {
            throw SocketExceptions.translate(failure);
        }
    }

    @Override
    public void bind(final SocketAddress local) throws IOException {
        try {
            channel.bind(local);
        } catch (final Exception failure) {
            throw SocketExceptions.translate(failure);
        }
    }

    @Override
    public InetAddress getInetAddress() {
        final InetSocketAddress remote = inetRemote();
        return remote == null ? null : remote.getAddress();
    }

    @Override
    public InetAddress getLocalAddress() {
        if (channel.isOpen()) {
            final InetSocketAddress local = inetLocal();
            if (local != null) {
                return local.getAddress();
            }
        }
        return new InetSocketAddress(0).getAddress();
    }

    @Override
    public int getPort() {
        return switch (channel.remoteAddress()) {
            case InetSocketAddress inet -> inet.getPort();
            case IbSocketAddress ib -> Math.max(ib.port(), 0);
            case null, default -> 0;
        };
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
    public SocketAddress getRemoteSocketAddress() {
        return channel.remoteAddress();
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return channel.localAddress();
    }

    @Override
    public SocketChannel getChannel() {
        return channel;
    }

    @Override
    public InputStream getInputStream() throws IOException {
        if (!channel.isOpen()) {
            throw new SocketException("Socket is closed");
        }
        if (!channel.isConnected()) {
            throw new SocketException("Socket is not connected");
        }
        if (!channel.isInputOpen()) {
            throw new SocketException("Socket input is shutdown");
        }
        return new AdaptorInputStream();
    }

    @Override
    public OutputStream getOutputStream() throws IOException {
        if (!channel.isOpen()) {
            throw new SocketException("Socket is closed");
        }
        if (!channel.isConnected()) {
            throw new SocketException("Socket is not connected");
        }
        if (!channel.isOutputOpen()) {
            throw new SocketException("Socket output is shutdown");
        }
        return new AdaptorOutputStream();
    }

    private <T> void set(final SocketOption<T> name, final T value) throws SocketException {
        try {
            channel.setOption(name, value);
        } catch (final IOException failure) {
            throw SocketExceptions.toSocketException(failure);
        }
    }

    private <T> T get(final SocketOption<T> name) throws SocketException {
        try {
            return channel.getOption(name);
        } catch (final IOException failure) {
            throw SocketExceptions.toSocketException(failure);
        }
    }

    @Override
    public void setTcpNoDelay(final boolean on) throws SocketException {
        set(StandardSocketOptions.TCP_NODELAY, on);
    }

    @Override
    public boolean getTcpNoDelay() throws SocketException {
        return get(StandardSocketOptions.TCP_NODELAY);
    }

    @Override
    public void setSoLinger(final boolean on, final int linger) throws SocketException {
        set(StandardSocketOptions.SO_LINGER, on ? linger : -1);
    }

    @Override
    public int getSoLinger() throws SocketException {
        return get(StandardSocketOptions.SO_LINGER);
    }

    @Override
    public void sendUrgentData(final int data) throws IOException {
        throw new SocketException("Urgent data not supported");
    }

    @Override
    public void setOOBInline(final boolean on) throws SocketException {
        ensureOpen();
        oobInline = on;
    }

    @Override
    public boolean getOOBInline() throws SocketException {
        ensureOpen();
        return oobInline;
    }

    @Override
    public void setSoTimeout(final int timeout) throws SocketException {
        ensureOpen();
        if (timeout < 0) {
            throw new IllegalArgumentException("timeout < 0");
        }
        this.timeout = timeout;
    }

    @Override
    public int getSoTimeout() throws SocketException {
        ensureOpen();
        return timeout;
    }

    private void ensureOpen() throws SocketException {
        if (!channel.isOpen()) {
            throw new SocketException("Socket is closed");
        }
    }

    @Override
    public void setSendBufferSize(final int size) throws SocketException {
        if (size <= 0) {
            throw new IllegalArgumentException("Invalid send size");
        }
        set(StandardSocketOptions.SO_SNDBUF, size);
    }

    @Override
    public int getSendBufferSize() throws SocketException {
        return get(StandardSocketOptions.SO_SNDBUF);
    }

    @Override
    public void setReceiveBufferSize(final int size) throws SocketException {
        if (size <= 0) {
            throw new IllegalArgumentException("Invalid receive size");
        }
        set(StandardSocketOptions.SO_RCVBUF, size);
    }

    @Override
    public int getReceiveBufferSize() throws SocketException {
        return get(StandardSocketOptions.SO_RCVBUF);
    }

    @Override
    public void setKeepAlive(final boolean on) throws SocketException {
        set(StandardSocketOptions.SO_KEEPALIVE, on);
    }

    @Override
    public boolean getKeepAlive() throws SocketException {
        return get(StandardSocketOptions.SO_KEEPALIVE);
    }

    @Override
    public void setTrafficClass(final int tc) throws SocketException {
        set(StandardSocketOptions.IP_TOS, tc);
    }

    @Override
    public int getTrafficClass() throws SocketException {
        return get(StandardSocketOptions.IP_TOS);
    }

    @Override
    public void setReuseAddress(final boolean on) throws SocketException {
        set(StandardSocketOptions.SO_REUSEADDR, on);
    }

    @Override
    public boolean getReuseAddress() throws SocketException {
        return get(StandardSocketOptions.SO_REUSEADDR);
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public void shutdownInput() throws IOException {
        try {
            channel.shutdownInput();
        } catch (final Exception failure) {
            throw SocketExceptions.translate(failure);
        }
    }

    @Override
    public void shutdownOutput() throws IOException {
        try {
            channel.shutdownOutput();
        } catch (final Exception failure) {
            throw SocketExceptions.translate(failure);
        }
    }

    @Override
    public String toString() {
        if (channel.isConnected()) {
            return "Socket[addr=" + channel.remoteAddress() + ",localport=" + getLocalPort() + "]";
        }
        return "Socket[unconnected]";
    }

    @Override
    public boolean isConnected() {
        return channel.isConnected();
    }

    @Override
    public boolean isBound() {
        return channel.localAddress() != null;
    }

    @Override
    public boolean isClosed() {
        return !channel.isOpen();
    }

    @Override
    public boolean isInputShutdown() {
        return !channel.isInputOpen();
    }

    @Override
    public boolean isOutputShutdown() {
        return !channel.isOutputOpen();
    }

    @Override
    public <T> Socket setOption(final SocketOption<T> name, final T value) throws IOException {
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

    /**
     * Reads through the channel's read lock, with the adaptor's SO_TIMEOUT.
     */
    private final class AdaptorInputStream extends InputStream {
        @Override
        public int read() throws IOException {
            final byte[] one = new byte[1];
            final int n = read(one, 0, 1);
            return n > 0 ? one[0] & 0xFF : -1;
        }

        @Override
        public int read(final byte[] bytes, final int offset, final int length) throws IOException {
            Objects.checkFromIndexSize(offset, length, bytes.length);
            final int millis = timeout;
            return channel.blockingRead(bytes, offset, length, millis > 0 ? MILLISECONDS.toNanos(millis) : 0);
        }

        @Override
        public int available() throws IOException {
            if (!channel.isOpen()) {
                throw new SocketException("Socket is closed");
            }
            return 0;
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }

    /**
     * Writes through the channel's write lock; never short.
     */
    private final class AdaptorOutputStream extends OutputStream {
        @Override
        public void write(final int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(final byte[] bytes, final int offset, final int length) throws IOException {
            channel.blockingWriteFully(bytes, offset, length);
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}
