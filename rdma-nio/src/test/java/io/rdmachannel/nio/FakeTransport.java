package io.rdmachannel.nio;

import java.io.IOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicInteger;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.stream.ReadinessObserver;
import io.rdmachannel.channel.stream.StreamConnector;
import io.rdmachannel.channel.stream.StreamListener;
import io.rdmachannel.channel.stream.StreamOptions;
import io.rdmachannel.channel.stream.StreamTransport;

/**
 * An in-memory stream transport: bounded byte pipes per direction (so writers meet back-pressure), half-close, close
 * and abort, refused connects where nobody listens, and observers called from a separate "engine" thread when an
 * armed endpoint changes. Connects complete on the engine thread, so a non-blocking connect is always pending first.
 */
final class FakeTransport implements StreamTransport, AutoCloseable {
    private final ExecutorService engine = Executors.newSingleThreadExecutor(task -> {
        final Thread thread = new Thread(task, "fake-engine");
        thread.setDaemon(true);
        return thread;
    });
    private final Map<Object, FakeListener> listeners = new ConcurrentHashMap<>();
    private final AtomicInteger nextPort = new AtomicInteger(40_000);
    private final int pipeCapacity;
    /** Connects to these ports (or IB addresses) stay pending forever. */
    final Set<Object> unanswered = ConcurrentHashMap.newKeySet();
    /** Every connection made, client and server sides. */
    final List<FakeConnection> connections = new CopyOnWriteArrayList<>();
    /** The options given to every listen. */
    final List<StreamOptions> listenOptions = new CopyOnWriteArrayList<>();
    /** The options given to every connect. */
    final List<StreamOptions> connectOptions = new CopyOnWriteArrayList<>();
    final AtomicInteger arms = new AtomicInteger();
    /** Whether listening fails as on an address no RDMA device serves. */
    volatile boolean refuseListen;
    private final Queue<Runnable> held = new ConcurrentLinkedQueue<>();

    FakeTransport() {
        this(64 * 1024);
    }

    FakeTransport(final int pipeCapacity) {
        this.pipeCapacity = pipeCapacity;
    }

    @Override
    public String providerName() {
        return "fake";
    }

    static Object key(final SocketAddress address) {
        return address instanceof InetSocketAddress inet ? (Object) inet.getPort() : address;
    }

    @Override
    public StreamListener listen(final SocketAddress local, final int backlog, final StreamOptions options,
        final ReadinessObserver observer) throws IOException {
        if (refuseListen) {
            throw new BindException("Cannot assign requested address: no RDMA device has " + local);
        }
        listenOptions.add(options);
        SocketAddress bound = local;
        if (local instanceof InetSocketAddress inet && inet.getPort() == 0) {
            bound = new InetSocketAddress(inet.getAddress(), nextPort.incrementAndGet());
        }
        final FakeListener listener = new FakeListener(this, bound, backlog, observer);
        if (listeners.putIfAbsent(key(bound), listener) != null) {
            throw new BindException("Address already in use");
        }
        return listener;
    }

    Map<Object, FakeListener> listeners() {
        return listeners;
    }

    void unlisten(final FakeListener listener) {
        listeners.remove(key(listener.localAddress()), listener);
    }

    @Override
    public StreamConnector connect(final SocketAddress remote, final SocketAddress local, final StreamOptions options,
        final ReadinessObserver observer) throws IOException {
        connectOptions.add(options);
        final SocketAddress from;
        if (remote instanceof IbSocketAddress) {
            final byte[] gid = new byte[16];
            gid[0] = (byte) 0xfe;
            gid[1] = (byte) 0x80;
            gid[15] = 2;
            from = IbSocketAddress.of(gid, nextPort.incrementAndGet());
        } else if (local instanceof InetSocketAddress inet && inet.getPort() != 0) {
            from = local;
        } else {
            from = new InetSocketAddress(InetAddress.getLoopbackAddress(), nextPort.incrementAndGet());
        }
        final FakeConnector connector = new FakeConnector(this, observer);
        if (unanswered.contains(key(remote))) {
            held.add(() -> complete(connector, from, remote));
        } else {
            execute(() -> complete(connector, from, remote));
        }
        return connector;
    }

    /**
     * Answer the connects held so far (to addresses in {@link #unanswered}), on the engine thread.
     */
    void release() {
        Runnable task;
        while ((task = held.poll()) != null) {
            execute(task);
        }
    }

    private void complete(final FakeConnector connector, final SocketAddress from, final SocketAddress remote) {
        final FakeListener listener = listeners.get(key(remote));
        if (listener == null) {
            // as the real engines: no listener means no RDMA there, which the drop-in may fall back on
            connector.fail(RejectReason.NO_LISTENER.exception());
            return;
        }
        final FakeConnection client = new FakeConnection(this, from, remote, pipeCapacity);
        final FakeConnection server = new FakeConnection(this, listener.localAddress(), from, pipeCapacity);
        FakeConnection.pair(client, server);
        if (!listener.offer(server)) {
            connector.fail(RejectReason.BACKLOG_FULL.exception());
            return;
        }
        connections.add(client);
        connections.add(server);
        connector.succeed(client);
    }

    void execute(final Runnable task) {
        try {
            engine.execute(task);
        } catch (final RejectedExecutionException ignore) {
            // shut down
        }
    }

    /**
     * Whether every connection made was released (closed or aborted).
     */
    boolean allReleased() {
        return connections.stream().allMatch(FakeConnection::isReleased);
    }

    @Override
    public void close() {
        engine.shutdownNow();
    }
}
