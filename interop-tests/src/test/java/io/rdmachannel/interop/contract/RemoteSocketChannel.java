package io.rdmachannel.interop.contract;

import io.rdmachannel.interop.contract.RemoteChannels.Response;

import java.io.IOException;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketOption;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * A socket channel of the child JVM ({@link RemoteChannelHost}) seen from the test JVM: every operation is done by
 * the real channel there. What a channel of this JVM does itself is kept here, with the JDK's own base classes: the
 * open and blocking state, selection keys (on a {@link SplitSelector}), and in blocking calls the
 * {@code begin}/{@code end} protocol, so that an interrupt closes the channel and a close during a call makes it
 * throw {@code AsynchronousCloseException} or {@code ClosedByInterruptException} as a local channel would. When the
 * real channel closed itself (a failed connect, its adaptor's close), so does this one.
 */
final class RemoteSocketChannel extends SocketChannel {
    /** How long {@link #toString()} waits for the child: failure reports must not hang on a hung child. */
    private static final Duration DESCRIBE_WAIT = Duration.ofSeconds(10);

    private final RemoteChannels host;
    private final int id;
    private final Object socketLock = new Object();
    private RemoteSocket socket;
    private volatile Set<SocketOption<?>> options;

    private RemoteSocketChannel(final SelectorProvider provider, final RemoteChannels host, final int id) {
        super(provider);
        this.host = host;
        this.id = id;
    }

    /**
     * Opens a channel in the child.
     *
     * @param provider the provider the channel reports (whose selectors take it).
     * @return the proxy.
     * @throws IOException if the child cannot open one.
     */
    static RemoteSocketChannel open(final SelectorProvider provider) throws IOException {
        final RemoteChannels host = RemoteChannels.get();
        return new RemoteSocketChannel(provider, host, (Integer) host.call(RemoteChannels.HOST, "openSocketChannel")
            .value());
    }

    /** The channel's id in the child. */
    int id() {
        return id;
    }

    /** The child, for the selectors of this channel. */
    RemoteChannels host() {
        return host;
    }

    /**
     * Calls the real channel; if it is closed after the call, so is this proxy.
     */
    Object call(final String op, final Object... args) throws IOException {
        final Response response;
        try {
            response = host.call(id, op, args);
        } catch (final IOException | RuntimeException ex) {
            closeIfClosedThere(ex);
            throw ex;
        }
        closeIfClosed(response.open());
        return response.value();
    }

    private void closeIfClosedThere(final Exception ex) {
        if (!isOpen()) {
            return;
        }
        try {
            if (Boolean.FALSE.equals(host.call(id, "isOpen").value())) {
                close();
            }
        } catch (final IOException | RuntimeException probe) {
            ex.addSuppressed(probe);
        }
    }

    private void closeIfClosed(final Boolean open) throws IOException {
        if (Boolean.FALSE.equals(open) && isOpen()) {
            close();
        }
    }

    /**
     * A call that may block: between {@code begin} and {@code end} when this channel is blocking.
     *
     * @param op   the operation.
     * @param args its arguments.
     * @return the value.
     * @throws IOException what the real channel threw, or {@code AsynchronousCloseException} or
     *                     {@code ClosedByInterruptException} if this channel was closed or interrupted meanwhile.
     */
    Object blockingCall(final String op, final Object... args) throws IOException {
        if (!isBlocking() || !isOpen()) {
            // a closed channel throws ClosedChannelException, not AsynchronousCloseException
            return call(op, args);
        }
        final Response response;
        try {
            begin();
            response = host.call(id, op, args);
        } catch (final IOException | RuntimeException ex) {
            // throws AsynchronousCloseException or ClosedByInterruptException if this channel was closed meanwhile
            end(false);
            closeIfClosedThere(ex);
            throw ex;
        }
        final Object value = response.value();
        end(!(value instanceof Integer n && n < 0) && !Boolean.FALSE.equals(value));
        closeIfClosed(response.open());
        return value;
    }

    @Override
    public SocketChannel bind(final SocketAddress local) throws IOException {
        call("bind", RemoteChannels.sendable(local));
        return this;
    }

    @Override
    public <T> SocketChannel setOption(final SocketOption<T> name, final T value) throws IOException {
        Objects.requireNonNull(name);
        if (!supportedOptions().contains(name)) {
            throw new UnsupportedOperationException("'" + name + "' not supported");
        }
        call("setOption", name.name(), value);
        return this;
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(final SocketOption<T> name) throws IOException {
        Objects.requireNonNull(name);
        if (!supportedOptions().contains(name)) {
            throw new UnsupportedOperationException("'" + name + "' not supported");
        }
        return (T) call("getOption", name.name());
    }

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        Set<SocketOption<?>> known = options;
        if (known == null) {
            try {
                known = Stream.of((String[]) host.call(id, "supportedOptions").value()).map(RemoteChannels::option)
                    .filter(Objects::nonNull).collect(Collectors.toUnmodifiableSet());
            } catch (final IOException ex) {
                throw new IllegalStateException("cannot ask the remote channel for its options", ex);
            }
            options = known;
        }
        return known;
    }

    @Override
    public SocketChannel shutdownInput() throws IOException {
        call("shutdownInput");
        return this;
    }

    @Override
    public SocketChannel shutdownOutput() throws IOException {
        call("shutdownOutput");
        return this;
    }

    @Override
    public Socket socket() {
        synchronized (socketLock) {
            if (socket == null) {
                try {
                    socket = new RemoteSocket(this);
                } catch (final SocketException ex) {
                    throw new IllegalStateException(ex);
                }
            }
            return socket;
        }
    }

    @Override
    public boolean isConnected() {
        return Boolean.TRUE.equals(quietly("isConnected"));
    }

    @Override
    public boolean isConnectionPending() {
        return Boolean.TRUE.equals(quietly("isConnectionPending"));
    }

    /** A query that declares no exception. */
    Object quietly(final String op, final Object... args) {
        try {
            return call(op, args);
        } catch (final IOException ex) {
            throw new IllegalStateException("remote " + op + " failed", ex);
        }
    }

    @Override
    public boolean connect(final SocketAddress remote) throws IOException {
        return (Boolean) blockingCall("connect", RemoteChannels.sendable(Objects.requireNonNull(remote)));
    }

    @Override
    public boolean finishConnect() throws IOException {
        return (Boolean) blockingCall("finishConnect");
    }

    @Override
    public SocketAddress getRemoteAddress() throws IOException {
        return (SocketAddress) call("getRemoteAddress");
    }

    @Override
    public int read(final ByteBuffer dst) throws IOException {
        Objects.requireNonNull(dst);
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("Read-only buffer");
        }
        final Object value = blockingCall("read", dst.remaining());
        if (value instanceof Integer end) {
            return end;
        }
        final byte[] bytes = (byte[]) value;
        dst.put(bytes);
        return bytes.length;
    }

    @Override
    public long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, dsts.length);
        final int[] lengths = new int[length];
        for (int i = 0; i < length; i++) {
            if (dsts[offset + i].isReadOnly()) {
                throw new IllegalArgumentException("Read-only buffer");
            }
            lengths[i] = dsts[offset + i].remaining();
        }
        final Object[] value = (Object[]) blockingCall("readv", lengths);
        final long n = (Long) value[0];
        final ByteBuffer data = ByteBuffer.wrap((byte[]) value[1]);
        for (int i = 0; i < length && data.hasRemaining(); i++) {
            final ByteBuffer dst = dsts[offset + i];
            final int chunk = Math.min(dst.remaining(), data.remaining());
            dst.put(data.slice(data.position(), chunk));
            data.position(data.position() + chunk);
        }
        return n;
    }

    @Override
    public int write(final ByteBuffer src) throws IOException {
        final byte[] bytes = new byte[src.remaining()];
        src.get(src.position(), bytes);
        final int n = (Integer) blockingCall("write", (Object) bytes);
        src.position(src.position() + n);
        return n;
    }

    @Override
    public long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, srcs.length);
        final byte[][] parts = new byte[length][];
        for (int i = 0; i < length; i++) {
            final ByteBuffer src = srcs[offset + i];
            parts[i] = new byte[src.remaining()];
            src.get(src.position(), parts[i]);
        }
        long left = (Long) blockingCall("writev", (Object) parts);
        final long n = left;
        for (int i = 0; i < length && left > 0; i++) {
            final ByteBuffer src = srcs[offset + i];
            final int chunk = (int) Math.min(src.remaining(), left);
            src.position(src.position() + chunk);
            left -= chunk;
        }
        return n;
    }

    @Override
    public SocketAddress getLocalAddress() throws IOException {
        return (SocketAddress) call("getLocalAddress");
    }

    @Override
    protected void implCloseSelectableChannel() throws IOException {
        host.call(id, "close");
    }

    @Override
    protected void implConfigureBlocking(final boolean block) throws IOException {
        host.call(id, "configureBlocking", block);
    }

    @Override
    public String toString() {
        try {
            return "remote " + RemoteChannels.await(host.callAsync(id, "toString"), DESCRIBE_WAIT).value();
        } catch (final IOException ex) {
            return "RemoteSocketChannel[" + id + ", " + ex + "]";
        }
    }
}
