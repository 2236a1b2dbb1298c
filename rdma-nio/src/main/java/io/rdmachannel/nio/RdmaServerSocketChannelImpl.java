package io.rdmachannel.nio;

import java.io.IOException;
import java.net.ProtocolFamily;
import java.net.ServerSocket;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.SocketTimeoutException;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.IllegalBlockingModeException;
import java.nio.channels.NotYetBoundException;
import java.nio.channels.SelectionKey;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;

import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamListener;
import io.rdmachannel.channel.stream.StreamReadiness;
import io.rdmachannel.channel.stream.StreamTransport;

/**
 * The server channel state machine (after the JDK's ServerSocketChannelImpl).
 */
final class RdmaServerSocketChannelImpl extends RdmaServerSocketChannel implements RdmaSelectableChannel {
    private static final int ST_INUSE = 0;
    private static final int ST_CLOSING = 1;
    private static final int ST_CLOSED = 2;
    private static final int DEFAULT_BACKLOG = 50;

    private final RdmaSelectorProvider provider;
    private final StreamTransport transport;
    private final ProtocolFamily family;
    private final ReadinessRelay relay = new ReadinessRelay();

    // Lock held by the thread in accept
    private final ReentrantLock acceptLock = new ReentrantLock();
    // Lock for the fields below; never held while parking
    private final Object stateLock = new Object();

    // -- The following fields are protected by stateLock
    private volatile int state;
    private Thread acceptThread;
    private volatile StreamListener listener;
    private SocketAddress localAddress;
    private final OptionValues options = new OptionValues(true);
    private ServerSocket socket;
    // -- End of fields protected by stateLock

    RdmaServerSocketChannelImpl(final RdmaSelectorProvider provider, final StreamTransport transport,
        final ProtocolFamily family) {
        super(provider);
        this.provider = provider;
        this.transport = transport;
        this.family = family;
    }

    @Override
    public ServerSocket socket() {
        synchronized (stateLock) {
            if (socket == null) {
                socket = new RdmaServerSocketAdaptor(this);
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

    SocketAddress localAddress() {
        synchronized (stateLock) {
            return localAddress;
        }
    }

    boolean isBound() {
        synchronized (stateLock) {
            return localAddress != null;
        }
    }

    @Override
    public <T> ServerSocketChannel setOption(final SocketOption<T> name, final T value) throws IOException {
        OptionValues.checkType(OptionValues.SERVER_OPTIONS, name, value);
        synchronized (stateLock) {
            ensureOpen();
            options.set(name, value);
            return this;
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T getOption(final SocketOption<T> name) throws IOException {
        OptionValues.checkSupported(OptionValues.SERVER_OPTIONS, name);
        synchronized (stateLock) {
            ensureOpen();
            return (T) options.get(name);
        }
    }

    @Override
    public Set<SocketOption<?>> supportedOptions() {
        return OptionValues.SERVER_OPTIONS;
    }

    @Override
    public ServerSocketChannel bind(final SocketAddress local, final int backlog) throws IOException {
        synchronized (stateLock) {
            ensureOpen();
            if (localAddress != null) {
                throw new AlreadyBoundException();
            }
            final SocketAddress address = local == null ? Addresses.anyLocal(family) : Addresses.check(local, family);
            final StreamListener bound = transport.listen(address, backlog < 1 ? DEFAULT_BACKLOG : backlog,
                options.stream(), relay);
            listener = bound;
            localAddress = bound.localAddress();
        }
        relay.onReadiness();
        return this;
    }

    private void ensureOpen() throws ClosedChannelException {
        if (!isOpen()) {
            throw new ClosedChannelException();
        }
    }

    @Override
    public SocketChannel accept() throws IOException {
        return implAccept(isBlocking(), 0);
    }

    /**
     * A blocking accept with a timeout, for the server socket adaptor.
     *
     * @throws IllegalBlockingModeException if the channel is non-blocking.
     * @throws SocketTimeoutException "Accept timed out".
     */
    SocketChannel blockingAccept(final long nanos) throws IOException {
        acceptLock.lock();
        try {
            if (!isBlocking()) {
                throw new IllegalBlockingModeException();
            }
            return implAccept(true, ReadinessRelay.deadline(nanos));
        } finally {
            acceptLock.unlock();
        }
    }

    private SocketChannel implAccept(final boolean blocking, final long deadline) throws IOException {
        acceptLock.lock();
        try {
            ensureOpen();
            final ReadinessRelay childRelay = new ReadinessRelay();
            StreamConnection accepted = null;
            try {
                begin(blocking);
                final StreamListener bound = listener;
                accepted = bound.accept(childRelay);
                while (blocking && accepted == null && isOpen()) {
                    final long seen = relay.generation();
                    if (!isOpen()) {
                        break;
                    }
                    bound.arm();
                    accepted = bound.accept(childRelay);
                    if (accepted == null && !relay.await(seen, deadline)) {
                        throw new SocketTimeoutException("Accept timed out");
                    }
                    if (accepted == null && isOpen()) {
                        accepted = bound.accept(childRelay);
                    }
                }
            } finally {
                end(blocking, accepted != null);
            }
            if (accepted == null) {
                return null;
            }
            final OptionValues inherited;
            synchronized (stateLock) {
                inherited = options.inherit();
            }
            return new RdmaSocketChannelImpl(provider, transport, family, childRelay, accepted, inherited);
        } finally {
            acceptLock.unlock();
        }
    }

    private void begin(final boolean blocking) throws ClosedChannelException {
        if (blocking) {
            begin();
        }
        synchronized (stateLock) {
            ensureOpen();
            if (localAddress == null) {
                throw new NotYetBoundException();
            }
            if (blocking) {
                acceptThread = Thread.currentThread();
            }
        }
    }

    private void end(final boolean blocking, final boolean completed) throws IOException {
        if (blocking) {
            synchronized (stateLock) {
                acceptThread = null;
                if (state == ST_CLOSING) {
                    tryClose();
                }
            }
            end(completed);
        }
    }

    // -- selection

    @Override
    public ReadinessRelay relay() {
        return relay;
    }

    @Override
    public int translateReadyOps(final int interestOps) {
        final StreamListener bound = listener;
        if (state == ST_INUSE && bound != null && (bound.readyOps() & StreamReadiness.ACCEPT) != 0) {
            return SelectionKey.OP_ACCEPT & interestOps;
        }
        return 0;
    }

    @Override
    public void armEndpoint() {
        final StreamListener bound = listener;
        if (state == ST_INUSE && bound != null) {
            bound.arm();
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
        synchronized (stateLock) {
            state = ST_CLOSING;
        }
        relay.signal();
        if (!isBlocking()) {
            acceptLock.lock();
            acceptLock.unlock();
        }
        synchronized (stateLock) {
            if (state == ST_CLOSING) {
                tryClose();
            }
        }
    }

    private boolean tryClose() {
        assert Thread.holdsLock(stateLock) && state == ST_CLOSING;
        if (acceptThread == null && !isRegistered()) {
            state = ST_CLOSED;
            final StreamListener bound = listener;
            if (bound != null) {
                bound.close();
            }
            return true;
        }
        return false;
    }

    @Override
    public void kill() {
        acceptLock.lock();
        acceptLock.unlock();
        synchronized (stateLock) {
            if (state == ST_CLOSING) {
                tryClose();
            }
        }
    }

    @Override
    public String toString() {
        final StringBuilder text = new StringBuilder(RdmaServerSocketChannel.class.getName()).append('[');
        if (!isOpen()) {
            text.append("closed");
        } else {
            final SocketAddress local = localAddress();
            text.append(local == null ? "unbound" : local.toString());
        }
        return text.append(']').toString();
    }
}
