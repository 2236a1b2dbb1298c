package io.rdmachannel.interop.contract;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketImpl;
import java.net.SocketOption;
import java.nio.channels.SocketChannel;
import java.util.Objects;
import java.util.Set;

/**
 * The socket adaptor of a {@link RemoteSocketChannel}: each method is the real adaptor's in the child, where
 * {@code SO_TIMEOUT} and the blocking checks apply; its streams read and write through it, as blocking calls of the
 * channel (an interrupt closes it, as with the JDK's adaptor).
 */
final class RemoteSocket extends Socket {
    private final RemoteSocketChannel channel;

    RemoteSocket(final RemoteSocketChannel channel) throws SocketException {
        super(noImpl());
        this.channel = channel;
    }

    /** No implementation: every method of the socket is overridden (a typed null picks the right constructor). */
    private static SocketImpl noImpl() {
        return null;
    }

    private Object call(final String op, final Object... args) throws SocketException {
        try {
            return channel.call("socket." + op, args);
        } catch (final SocketException ex) {
            throw ex;
        } catch (final IOException ex) {
            final SocketException socket = new SocketException(ex.getMessage());
            socket.initCause(ex);
            throw socket;
        }
    }

    private Object query(final String op) {
        return channel.quietly("socket." + op);
    }

    @Override
    public void connect(final SocketAddress endpoint) throws IOException {
        connect(endpoint, 0);
    }

    @Override
    public void connect(final SocketAddress endpoint, final int timeout) throws IOException {
        channel.blockingCall("socket.connect", RemoteChannels.sendable(endpoint), timeout);
    }

    @Override
    public void bind(final SocketAddress bindpoint) throws IOException {
        channel.call("socket.bind", RemoteChannels.sendable(bindpoint));
    }

    @Override
    public InetAddress getInetAddress() {
        return (InetAddress) query("getInetAddress");
    }

    @Override
    public InetAddress getLocalAddress() {
        return (InetAddress) query("getLocalAddress");
    }

    @Override
    public int getPort() {
        return (Integer) query("getPort");
    }

    @Override
    public int getLocalPort() {
        return (Integer) query("getLocalPort");
    }

    @Override
    public SocketAddress getRemoteSocketAddress() {
        return (SocketAddress) query("getRemoteSocketAddress");
    }

    @Override
    public SocketAddress getLocalSocketAddress() {
        return (SocketAddress) query("getLocalSocketAddress");
    }

    @Override
    public SocketChannel getChannel() {
        return channel;
    }

    @Override
    public InputStream getInputStream() throws IOException {
        channel.call("socket.getInputStream");
        return new InputStream() {
            @Override
            public int read() throws IOException {
                final byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(final byte[] bytes, final int offset, final int length) throws IOException {
                Objects.checkFromIndexSize(offset, length, bytes.length);
                if (length == 0) {
                    return 0;
                }
                final Object value = channel.blockingCall("socket.read", length);
                if (value instanceof Integer end) {
                    return end;
                }
                final byte[] read = (byte[]) value;
                System.arraycopy(read, 0, bytes, offset, read.length);
                return read.length;
            }

            @Override
            public void close() throws IOException {
                channel.close();
            }
        };
    }

    @Override
    public OutputStream getOutputStream() throws IOException {
        channel.call("socket.getOutputStream");
        return new OutputStream() {
            @Override
            public void write(final int b) throws IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(final byte[] bytes, final int offset, final int length) throws IOException {
                Objects.checkFromIndexSize(offset, length, bytes.length);
                channel.blockingCall("socket.write", (Object) java.util.Arrays.copyOfRange(bytes, offset,
                    offset + length));
            }

            @Override
            public void close() throws IOException {
                channel.close();
            }
        };
    }

    @Override
    public void setTcpNoDelay(final boolean on) throws SocketException {
        call("setTcpNoDelay", on);
    }

    @Override
    public boolean getTcpNoDelay() throws SocketException {
        return (Boolean) call("getTcpNoDelay");
    }

    @Override
    public void setSoLinger(final boolean on, final int linger) throws SocketException {
        call("setSoLinger", on, linger);
    }

    @Override
    public int getSoLinger() throws SocketException {
        return (Integer) call("getSoLinger");
    }

    @Override
    public void setSoTimeout(final int timeout) throws SocketException {
        call("setSoTimeout", timeout);
    }

    @Override
    public int getSoTimeout() throws SocketException {
        return (Integer) call("getSoTimeout");
    }

    @Override
    public void setSendBufferSize(final int size) throws SocketException {
        call("setSendBufferSize", size);
    }

    @Override
    public int getSendBufferSize() throws SocketException {
        return (Integer) call("getSendBufferSize");
    }

    @Override
    public void setReceiveBufferSize(final int size) throws SocketException {
        call("setReceiveBufferSize", size);
    }

    @Override
    public int getReceiveBufferSize() throws SocketException {
        return (Integer) call("getReceiveBufferSize");
    }

    @Override
    public void setKeepAlive(final boolean on) throws SocketException {
        call("setKeepAlive", on);
    }

    @Override
    public boolean getKeepAlive() throws SocketException {
        return (Boolean) call("getKeepAlive");
    }

    @Override
    public void setReuseAddress(final boolean on) throws SocketException {
        call("setReuseAddress", on);
    }

    @Override
    public boolean getReuseAddress() throws SocketException {
        return (Boolean) call("getReuseAddress");
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

    @Override
    public void close() throws IOException {
        channel.close();
    }

    @Override
    public void shutdownInput() throws IOException {
        channel.call("socket.shutdownInput");
    }

    @Override
    public void shutdownOutput() throws IOException {
        channel.call("socket.shutdownOutput");
    }

    @Override
    public boolean isConnected() {
        return (Boolean) query("isConnected");
    }

    @Override
    public boolean isBound() {
        return (Boolean) query("isBound");
    }

    @Override
    public boolean isClosed() {
        return !channel.isOpen();
    }

    @Override
    public boolean isInputShutdown() {
        return (Boolean) query("isInputShutdown");
    }

    @Override
    public boolean isOutputShutdown() {
        return (Boolean) query("isOutputShutdown");
    }

    @Override
    public String toString() {
        return "remote " + query("toString");
    }
}
