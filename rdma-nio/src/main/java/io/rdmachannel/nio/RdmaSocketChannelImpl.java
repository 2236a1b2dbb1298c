package io.rdmachannel.nio;

import java.io.IOException;
import java.net.ProtocolFamily;
import java.net.Socket;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ConnectionPendingException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.NoConnectionPendingException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.SelectionKey;
import java.nio.channels.SocketChannel;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamConnector;
import io.rdmachannel.channel.stream.StreamOptions;
import io.rdmachannel.channel.stream.StreamReadiness;
import io.rdmachannel.channel.stream.StreamTransport;

/**
 * The socket channel state machine (after the JDK's SocketChannelImpl). Every blocking operation is
 * {@code begin()}, a non-blocking attempt on the endpoint, then arm / attempt again / park on the relay, and
 * {@code end()}; close wakes parked threads through the relay and defers releasing the endpoint until no thread is in
 * a blocking operation and no selector holds a key.
 */
final class RdmaSocketChannelImpl extends RdmaSocketChannel implements RdmaSelectableChannel {
    private static final int ST_UNCONNECTED = 0;
    private static final int ST_CONNECTIONPENDING = 1;
    private static final int ST_CONNECTED = 2;
    private static final int ST_CLOSING = 3;
    private static final int ST_CLOSED = 4;

    private final StreamTransport transport;
    private final ProtocolFamily family;
    private final ReadinessRelay relay;

    // Lock held by the current reader (and by connect and finishConnect)
    private final ReentrantLock readLock = new ReentrantLock();
    // Lock held by the current writer (and by connect and finishConnect)
    private final ReentrantLock writeLock = new ReentrantLock();
    // Lock for the fields below; never held while parking
    private final Object stateLock = new Object();

    // -- The following fields are protected by stateLock
    private volatile int state;
    private Thread readerThread;
    private Thread writerThread;
    private SocketAddress localAddress;
    private SocketAddress remoteAddress;
    private volatile StreamConnector connector;
    private volatile StreamConnection connection;
    private volatile boolean isInputClosed;
    private volatile boolean isOutputClosed;
    private final OptionValues options;
    private volatile long busyPollNanos;
    private Socket socket;
    // -- End of fields protected by stateLock

    RdmaSocketChannelImpl(final RdmaSelectorProvider provider, final StreamTransport transport,
        final ProtocolFamily family) {
        super(provider);
        this.transport = transport;
        this.family = family;
        this.relay = new ReadinessRelay();
        this.options = new OptionValues(false);
    }

    /**
     * An accepted channel: connected, blocking.
     */
    RdmaSocketChannelImpl(final RdmaSelectorProvider provider, final StreamTransport transport,
        final ProtocolFamily family, final ReadinessRelay relay, final StreamConnection connection,
        final OptionValues options) {
        super(provider);
        this.transport = transport;
        this.family = family;
        this.relay = relay;
        this.options = options;
        this.busyPollNanos = options.busyPollNanos();
        this.connection = connection;
        this.localAddress = connection.localAddress();
        this.remoteAddress = connection.remoteAddress();
        this.state = ST_CONNECTED;
    }

    // -- addresses, options, adaptor

    @Override
    public Socket socket() {
        synchronized (stateLock) {
            if (socket == null) {
                socket = RdmaSocketAdaptor.create(this);
            }
            return socket;
        }
    }

    @Override
    public SocketAddress getLocalAddress() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            return localAddress;
        }
    }

    @Override
    public SocketAddress getRemoteAddress() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            return remoteAddress;
        }
    }

    SocketAddress localAddress() {
        synchronized (stateLock) {
            return localAddress;
        }
    }

    SocketAddress remoteAddress() {
        synchronized (stateLock) {
            return remoteAddress;
        }
    }

    @Override
    public <T> SocketChannel setOption(final SocketOption<T> name, final T value) throws IOException {
        OptionValues.checkType(OptionValues.CLIENT_OPTIONS, name, value);
        synchronized (stateLock) {
            ensureOpen();
            options.set(name, value);
            busyPollNanos = options.busyPollNanos();
            return this;
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(final SocketOption<T> name) throws IOException {
        OptionValues.checkSupported(OptionValues.CLIENT_OPTIONS, name);
        synchronized (stateLock) {
            ensureOpen();
            return (T) options.get(name);
        }
    }

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        return OptionValues.CLIENT_OPTIONS;
    }

    @Override
    public SocketChannel bind(final SocketAddress local) throws IOException {
        readLock.lock();
        try {
            writeLock.lock();
            try {
                synchronized (stateLock) {
                    ensureOpen();
                    if (state == ST_CONNECTIONPENDING) {
                        throw new ConnectionPendingException();
                    }
                    if (localAddress != null) {
                        throw new AlreadyBoundException();
                    }
                    localAddress = local == null ? Addresses.anyLocal(family) : Addresses.check(local, family);
                }
            } finally {
                writeLock.unlock();
            }
        } finally {
            readLock.unlock();
        }
        return this;
    }

    // -- state

    @Override
    public boolean isConnected() {
        return state == ST_CONNECTED;
    }

    @Override
    public boolean isConnectionPending() {
        return state == ST_CONNECTIONPENDING;
    }

    boolean isInputOpen() {
        return !isInputClosed;
    }

    boolean isOutputOpen() {
        return !isOutputClosed;
    }

    private void ensureOpen() throws ClosedChannelException {
        if (!isOpen()) {
            throw new ClosedChannelException();
        }
    }

    private void ensureOpenAndConnected() throws ClosedChannelException {
        final int current = state;
        if (current < ST_CONNECTED) {
            throw new NotYetConnectedException();
        } else if (current > ST_CONNECTED) {
            throw new ClosedChannelException();
        }
    }

    // -- connect

    @Override
    public boolean connect(final SocketAddress remote) throws IOException {
        final SocketAddress address = Addresses.checkRemote(remote, family);
        try {
            readLock.lock();
            try {
                writeLock.lock();
                try {
                    ensureOpen();
                    return implConnect(address, isBlocking(), 0);
                } finally {
                    writeLock.unlock();
                }
            } finally {
                readLock.unlock();
            }
        } catch (final IOException ex) {
            close();
            throw ex;
        }
    }

    /**
     * Connect with a timeout, for the socket adaptor; closes the channel if the connection cannot be made.
     *
     * @throws IllegalBlockingModeException if the channel is non-blocking.
     * @throws SocketTimeoutException "Connect timed out".
     */
    void blockingConnect(final SocketAddress remote, final long nanos) throws IOException {
        final SocketAddress address = Addresses.checkRemote(remote, family);
        try {
            readLock.lock();
            try {
                writeLock.lock();
                try {
                    if (!isBlocking()) {
                        throw new IllegalBlockingModeException();
                    }
                    implConnect(address, true, ReadinessRelay.deadline(nanos));
                } finally {
                    writeLock.unlock();
                }
            } finally {
                readLock.unlock();
            }
        } catch (final IOException ex) {
            close();
            throw ex;
        }
    }

    private boolean implConnect(final SocketAddress address, final boolean blocking, final long deadline)
        throws IOException {
        boolean connected = false;
        try {
            beginConnect(blocking, address);
            final SocketAddress local;
            final long busyPoll;
            synchronized (stateLock) {
                local = localAddress;
                busyPoll = busyPollNanos;
            }
            final StreamConnector attempt = transport.connect(address, local, streamOptions(busyPoll), relay);
            synchronized (stateLock) {
                if (state == ST_CONNECTIONPENDING) {
                    connector = attempt;
                } else {
                    attempt.close();
                }
            }
            connected = pollConnect();
            if (!connected && blocking) {
                connected = awaitConnect(deadline);
            }
        } finally {
            endConnect(blocking, connected);
        }
        return connected;
    }

    private StreamOptions streamOptions(final long busyPoll) {
        synchronized (stateLock) {
            return options.stream().busyPollNanos(busyPoll);
        }
    }

    private void beginConnect(final boolean blocking, final SocketAddress address) throws ClosedChannelException {
        if (blocking) {
            begin();
        }
        synchronized (stateLock) {
            ensureOpen();
            if (state == ST_CONNECTED) {
                throw new AlreadyConnectedException();
            }
            if (state == ST_CONNECTIONPENDING) {
                throw new ConnectionPendingException();
            }
            state = ST_CONNECTIONPENDING;
            remoteAddress = address;
            if (blocking) {
                readerThread = Thread.currentThread();
            }
        }
    }

    private void endConnect(final boolean blocking, final boolean completed) throws IOException {
        try {
            endRead(blocking, completed);
            if (completed) {
                synchronized (stateLock) {
                    if (state == ST_CONNECTIONPENDING) {
                        final SocketAddress local = connection.localAddress();
                        if (local != null) {
                            localAddress = local;
                        }
                        state = ST_CONNECTED;
                    }
                }
            }
        } finally {
            // selectors re-check the key: OP_CONNECT may now be pending, or the connection's ops apply
            relay.onReadiness();
        }
    }

    /**
     * Finish the attempt if it is done.
     *
     * @return true once the connection is established (and held by this channel).
     */
    private boolean pollConnect() throws IOException {
        final StreamConnector attempt = connector;
        if (attempt == null) {
            return false;
        }
        final StreamConnection established = attempt.finish();
        if (established == null) {
            return false;
        }
        synchronized (stateLock) {
            if (state == ST_CONNECTIONPENDING && isOpen()) {
                connection = established;
                connector = null;
                return true;
            }
        }
        established.close();
        return false;
    }

    private boolean awaitConnect(final long deadline) throws IOException {
        while (isOpen()) {
            final long seen = relay.generation();
            final StreamConnector attempt = connector;
            if (attempt == null || !isOpen()) {
                return false;
            }
            attempt.arm();
            if (pollConnect()) {
                return true;
            }
            if (!relay.await(seen, deadline)) {
                throw new SocketTimeoutException("Connect timed out");
            }
            if (pollConnect()) {
                return true;
            }
        }
        return false;
    }

    @Override
    public boolean finishConnect() throws IOException {
        try {
            readLock.lock();
            try {
                writeLock.lock();
                try {
                    if (isConnected()) {
                        return true;
                    }
                    ensureOpen();
                    final boolean blocking = isBlocking();
                    boolean connected = false;
                    try {
                        beginFinishConnect(blocking);
                        connected = pollConnect();
                        if (!connected && blocking) {
                            connected = awaitConnect(0);
                        }
                    } finally {
                        endConnect(blocking, connected);
                    }
                    return connected;
                } finally {
                    writeLock.unlock();
                }
            } finally {
                readLock.unlock();
            }
        } catch (final IOException ex) {
            close();
            throw ex;
        }
    }

    private void beginFinishConnect(final boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
        }
        synchronized (stateLock) {
            ensureOpen();
            if (state != ST_CONNECTIONPENDING) {
                throw new NoConnectionPendingException();
            }
            if (blocking) {
                readerThread = Thread.currentThread();
            }
        }
    }

    // -- read

    @Override
    public int read(final ByteBuffer dst) throws IOException {
        Objects.requireNonNull(dst);
        readLock.lock();
        try {
            ensureOpenAndConnected();
            checkWritable(dst);
            final boolean blocking = isBlocking();
            int n = 0;
            try {
                beginRead(blocking);
                if (isInputClosed) {
                    return -1;
                }
                final StreamConnection stream = connection;
                n = stream.read(dst);
                while (blocking && n == 0 && dst.hasRemaining() && awaitReady(stream, StreamReadiness.READ, 0)) {
                    n = stream.read(dst);
                }
            } finally {
                endRead(blocking, n > 0);
            }
            return n <= 0 && isInputClosed ? -1 : n;
        } finally {
            readLock.unlock();
        }
    }

    @Override
    public long read(final ByteBuffer[] dsts, final int offset, final int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, dsts.length);
        for (int i = offset; i < offset + length; i++) {
            Objects.requireNonNull(dsts[i]);
        }
        readLock.lock();
        try {
            ensureOpenAndConnected();
            for (int i = offset; i < offset + length; i++) {
                checkWritable(dsts[i]);
            }
            final boolean blocking = isBlocking();
            long n = 0;
            try {
                beginRead(blocking);
                if (isInputClosed) {
                    return -1;
                }
                final StreamConnection stream = connection;
                n = stream.read(dsts, offset, length);
                while (blocking && n == 0 && hasRemaining(dsts, offset, length)
                    && awaitReady(stream, StreamReadiness.READ, 0)) {
                    n = stream.read(dsts, offset, length);
                }
            } finally {
                endRead(blocking, n > 0);
            }
            return n <= 0 && isInputClosed ? -1 : n;
        } finally {
            readLock.unlock();
        }
    }

    /**
     * A blocking read with a timeout, for the socket adaptor's input stream.
     *
     * @param nanos the timeout, 0 for none.
     * @throws IllegalBlockingModeException if the channel is non-blocking.
     * @throws SocketTimeoutException "Read timed out".
     */
    int blockingRead(final byte[] bytes, final int offset, final int length, final long nanos) throws IOException {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        if (length == 0) {
            return 0;
        }
        readLock.lock();
        try {
            ensureOpenAndConnected();
            if (!isBlocking()) {
                throw new IllegalBlockingModeException();
            }
            final ByteBuffer dst = ByteBuffer.wrap(bytes, offset, length);
            final long deadline = ReadinessRelay.deadline(nanos);
            int n = 0;
            try {
                beginRead(true);
                if (isInputClosed) {
                    return -1;
                }
                final StreamConnection stream = connection;
                n = stream.read(dst);
                while (n == 0 && awaitReady(stream, StreamReadiness.READ, deadline)) {
                    n = stream.read(dst);
                }
            } finally {
                endRead(true, n > 0);
            }
            return n <= 0 && isInputClosed ? -1 : n;
        } finally {
            readLock.unlock();
        }
    }

    private void beginRead(final boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
            synchronized (stateLock) {
                ensureOpen();
                readerThread = Thread.currentThread();
            }
        }
    }

    private void endRead(final boolean blocking, final boolean completed) throws AsynchronousCloseException {
        if (blocking) {
            synchronized (stateLock) {
                readerThread = null;
                if (state == ST_CLOSING) {
                    tryClose();
                }
            }
            end(completed);
        }
    }

    // -- write

    @Override
    public int write(final ByteBuffer src) throws IOException {
        Objects.requireNonNull(src);
        writeLock.lock();
        try {
            ensureOpenAndConnected();
            final boolean blocking = isBlocking();
            int n = 0;
            boolean completed = false;
            try {
                beginWrite(blocking);
                final StreamConnection stream = connection;
                if (blocking) {
                    final int length = src.remaining();
                    try {
                        n = stream.write(src);
                        while (src.hasRemaining() && (n > 0 || awaitReady(stream, StreamReadiness.WRITE, 0))) {
                            n = stream.write(src);
                        }
                    } catch (final IOException ex) {
                        rethrowUnlessShut(ex);
                    }
                    n = length - src.remaining();
                    completed = !src.hasRemaining();
                } else {
                    n = stream.write(src);
                    completed = n > 0;
                }
            } finally {
                endWrite(blocking, completed);
            }
            if (!completed && isOutputClosed) {
                throw new AsynchronousCloseException();
            }
            return n;
        } finally {
            writeLock.unlock();
        }
    }

    @Override
    public long write(final ByteBuffer[] srcs, final int offset, final int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, srcs.length);
        for (int i = offset; i < offset + length; i++) {
            Objects.requireNonNull(srcs[i]);
        }
        writeLock.lock();
        try {
            ensureOpenAndConnected();
            final boolean blocking = isBlocking();
            long n = 0;
            boolean completed = false;
            try {
                beginWrite(blocking);
                final StreamConnection stream = connection;
                if (blocking) {
                    final long length0 = remaining(srcs, offset, length);
                    try {
                        long step = stream.write(srcs, offset, length);
                        while (hasRemaining(srcs, offset, length)
                            && (step > 0 || awaitReady(stream, StreamReadiness.WRITE, 0))) {
                            step = stream.write(srcs, offset, length);
                        }
                    } catch (final IOException ex) {
                        rethrowUnlessShut(ex);
                    }
                    n = length0 - remaining(srcs, offset, length);
                    completed = !hasRemaining(srcs, offset, length);
                } else {
                    n = stream.write(srcs, offset, length);
                    completed = n > 0;
                }
            } finally {
                endWrite(blocking, completed);
            }
            if (!completed && isOutputClosed) {
                throw new AsynchronousCloseException();
            }
            return n;
        } finally {
            writeLock.unlock();
        }
    }

    /**
     * Write every byte, for the socket adaptor's output stream.
     *
     * @throws IllegalBlockingModeException if the channel is non-blocking.
     */
    void blockingWriteFully(final byte[] bytes, final int offset, final int length) throws IOException {
        Objects.checkFromIndexSize(offset, length, bytes.length);
        if (length == 0) {
            return;
        }
        writeLock.lock();
        try {
            ensureOpenAndConnected();
            if (!isBlocking()) {
                throw new IllegalBlockingModeException();
            }
            final ByteBuffer src = ByteBuffer.wrap(bytes, offset, length);
            try {
                beginWrite(true);
                final StreamConnection stream = connection;
                int n = stream.write(src);
                while (src.hasRemaining() && (n > 0 || awaitReady(stream, StreamReadiness.WRITE, 0))) {
                    n = stream.write(src);
                }
            } catch (final IOException ex) {
                rethrowUnlessShut(ex);
            } finally {
                endWrite(true, !src.hasRemaining());
            }
            if (src.hasRemaining() && isOutputClosed) {
                throw new AsynchronousCloseException();
            }
        } finally {
            writeLock.unlock();
        }
    }

    private void beginWrite(final boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
        }
        synchronized (stateLock) {
            ensureOpen();
            if (isOutputClosed) {
                // as the JDK's SocketChannelImpl: a write after shutdownOutput fails with this subclass
                throw new AsynchronousCloseException();
            }
            if (blocking) {
                writerThread = Thread.currentThread();
            }
        }
    }

    private void endWrite(final boolean blocking, final boolean completed) throws AsynchronousCloseException {
        if (blocking) {
            synchronized (stateLock) {
                writerThread = null;
                if (state == ST_CLOSING) {
                    tryClose();
                }
            }
            end(completed);
        }
    }

    /**
     * Wait for the endpoint to become ready for {@code op}: busy-poll first if configured, then arm, look again,
     * and park on the relay.
     *
     * @return true to try the operation again, false if the channel closed or the direction was shut down.
     * @throws SocketTimeoutException "Read timed out" if the deadline passed.
     */
    private boolean awaitReady(final StreamConnection stream, final int op, final long deadline)
        throws SocketTimeoutException {
        final long spin = busyPollNanos;
        if (spin > 0 && (stream.spin(spin, op) & op) != 0) {
            return true;
        }
        final long seen = relay.generation();
        if (!isOpen() || (op == StreamReadiness.READ ? isInputClosed : isOutputClosed)) {
            return false;
        }
        stream.arm();
        if ((stream.readyOps() & op) != 0) {
            return true;
        }
        if (!relay.await(seen, deadline)) {
            throw new SocketTimeoutException("Read timed out");
        }
        return isOpen() && !(op == StreamReadiness.READ ? isInputClosed : isOutputClosed);
    }

    /**
     * A blocked write that fails because another thread closed the channel or shut its output down ends as an
     * asynchronous close (reported by the caller), not with the engine's exception.
     */
    private void rethrowUnlessShut(final IOException failure) throws IOException {
        if (isOpen() && !isOutputClosed) {
            throw failure;
        }
    }

    private static void checkWritable(final ByteBuffer dst) {
        if (dst.isReadOnly()) {
            throw new IllegalArgumentException("Read-only buffer");
        }
    }

    private static boolean hasRemaining(final ByteBuffer[] buffers, final int offset, final int length) {
        for (int i = offset; i < offset + length; i++) {
            if (buffers[i].hasRemaining()) {
                return true;
            }
        }
        return false;
    }

    private static long remaining(final ByteBuffer[] buffers, final int offset, final int length) {
        long total = 0;
        for (int i = offset; i < offset + length; i++) {
            total += buffers[i].remaining();
        }
        return total;
    }

    // -- shutdown

    @Override
    public SocketChannel shutdownInput() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            if (!isConnected()) {
                throw new NotYetConnectedException();
            }
            if (!isInputClosed) {
                // flag first: a reader woken by the engine must see it
                isInputClosed = true;
                connection.shutdownInput();
            }
        }
        relay.onReadiness();
        return this;
    }

    @Override
    public SocketChannel shutdownOutput() throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            if (!isConnected()) {
                throw new NotYetConnectedException();
            }
            if (!isOutputClosed) {
                // flag first: a writer woken by the engine must see it
                isOutputClosed = true;
                connection.shutdownOutput();
            }
        }
        relay.onReadiness();
        return this;
    }

    // -- selection

    @Override
    public ReadinessRelay relay() {
        return relay;
    }

    @Override
    public int translateReadyOps(final int interestOps) {
        final int current = state;
        int ready = 0;
        if (current == ST_CONNECTIONPENDING) {
            final StreamConnector attempt = connector;
            if (attempt != null && (attempt.readyOps() & StreamReadiness.CONNECT) != 0) {
                ready = SelectionKey.OP_CONNECT;
            }
        } else if (current == ST_CONNECTED) {
            final int streamOps = connection.readyOps();
            if ((streamOps & StreamReadiness.READ) != 0 || isInputClosed) {
                ready |= SelectionKey.OP_READ;
            }
            if ((streamOps & StreamReadiness.WRITE) != 0 || isOutputClosed) {
                ready |= SelectionKey.OP_WRITE;
            }
        }
        return ready & interestOps;
    }

    @Override
    public long busyPollNanos() {
        return busyPollNanos;
    }

    @Override
    public void armEndpoint() {
        final int current = state;
        if (current == ST_CONNECTIONPENDING) {
            final StreamConnector attempt = connector;
            if (attempt != null) {
                attempt.arm();
            }
        } else if (current == ST_CONNECTED) {
            connection.arm();
        }
    }

    // -- close

    @Override
    protected void implConfigureBlocking(final boolean block) throws IOException {
        synchronized (stateLock) {
            ensureOpen();
        }
    }

    @Override
    protected void implCloseSelectableChannel() throws IOException {
        final boolean connected;
        synchronized (stateLock) {
            connected = state == ST_CONNECTED;
            state = ST_CLOSING;
        }
        // wake threads parked in read, write or connect: they see the channel closed
        relay.signal();
        if (!isBlocking()) {
            // wait for non-blocking operations in progress to finish
            readLock.lock();
            readLock.unlock();
            writeLock.lock();
            writeLock.unlock();
        }
        synchronized (stateLock) {
            if (state == ST_CLOSING && !tryClose() && connected && isRegistered() && options.linger() != 0
                && !isOutputClosed) {
                // the release waits for the selectors; let the peer read end of stream now
                try {
                    connection.shutdownOutput();
                } catch (final IOException ignore) {
                    // the close will release everything anyway
                }
            }
        }
        relay.onReadiness();
    }

    /**
     * Release the endpoint if no thread is in a blocking operation and no selector holds a key.
     */
    private boolean tryClose() {
        assert Thread.holdsLock(stateLock) && state == ST_CLOSING;
        if (readerThread == null && writerThread == null && !isRegistered()) {
            state = ST_CLOSED;
            final StreamConnection stream = connection;
            final StreamConnector attempt = connector;
            if (stream != null) {
                if (options.linger() == 0) {
                    stream.abort();
                } else {
                    stream.close();
                }
            } else if (attempt != null) {
                attempt.close();
            }
            return true;
        }
        return false;
    }

    @Override
    public void kill() {
        readLock.lock();
        readLock.unlock();
        writeLock.lock();
        writeLock.unlock();
        synchronized (stateLock) {
            if (state == ST_CLOSING) {
                tryClose();
            }
        }
    }

    @Override
    public String toString() {
        final StringBuilder text = new StringBuilder(RdmaSocketChannel.class.getName()).append('[');
        if (!isOpen()) {
            text.append("closed");
        } else {
            synchronized (stateLock) {
                switch (state) {
                    case ST_UNCONNECTED -> text.append("unconnected");
                    case ST_CONNECTIONPENDING -> text.append("connection-pending");
                    case ST_CONNECTED -> {
                        text.append("connected");
                        if (isInputClosed) {
                            text.append(" ishut");
                        }
                        if (isOutputClosed) {
                            text.append(" oshut");
                        }
                    }
                    default -> text.append("closing");
                }
                if (localAddress != null) {
                    text.append(" local=").append(localAddress);
                }
                if (remoteAddress != null) {
                    text.append(" remote=").append(remoteAddress);
                }
                final StreamConnection stream = connection;
                if (stream != null) {
                    text.append(' ').append(stream.describe());
                }
            }
        }
        return text.append(']').toString();
    }
}
