package io.rdmachannel.interop.contract;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.interop.dropin.ChildJvm;
import io.rdmachannel.nio.RdmaSocketOptions;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.SocketOption;
import java.net.StandardSocketOptions;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.UnsupportedAddressTypeException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The test JVM's end of {@link RemoteChannelHost}: a child JVM that owns real rdmachannel channels and selectors on
 * the shm provider and runs, one request at a time per calling thread, what this JVM's proxies
 * ({@link RemoteSocketChannel}, {@link SplitSelector}) ask of them. The far end of every connection of the
 * {@code rdma-shm-procs} transport lives there, so the suite's connections cross a process boundary: the
 * handshake with another process, the agents' links, the mappings of another process's files and the wake-ups
 * across processes.
 * <p>
 * A call is a {@link Request} on one TCP connection (the JDK's, on the loopback), answered by a {@link Response}
 * with the value or the exception the real channel threw, deserialised here with its exact class and message. The
 * child runs each request on its own thread, so a blocked read and the close that ends it are in flight together.
 * The child starts once per JVM, on first use, and ends with this JVM's stdin pipe to it.
 */
final class RemoteChannels {
    /** The host object's id: requests to open channels and selectors. */
    static final int HOST = 0;

    private static final long START_SECONDS = 60;
    /** The longest any call may take: longer than any blocking call of the suite (its tests time out sooner). */
    private static final Duration MAX_WAIT = Duration.ofMinutes(5);
    private static final Map<String, SocketOption<?>> OPTIONS = knownOptions();

    private static volatile RemoteChannels instance;

    private final ChildJvm child;
    private final java.net.Socket connection;
    private final ObjectOutputStream out;
    private final Map<Long, CompletableFuture<Response>> pending = new ConcurrentHashMap<>();
    private final AtomicLong calls = new AtomicLong();
    private volatile IOException gone;

    private RemoteChannels(final ChildJvm child, final java.net.Socket connection) throws IOException {
        this.child = child;
        this.connection = connection;
        this.out = new ObjectOutputStream(new BufferedOutputStream(connection.getOutputStream(), 1 << 16));
        out.flush();
        final ObjectInputStream in = new ObjectInputStream(new BufferedInputStream(connection.getInputStream(),
            1 << 16));
        Thread.ofPlatform().daemon().name("remote-channels-responses").start(() -> readResponses(in));
    }

    /**
     * The child, started on first use.
     *
     * @return the connection to it.
     * @throws IOException if it cannot be started or reached.
     */
    static RemoteChannels get() throws IOException {
        RemoteChannels current = instance;
        if (current == null) {
            synchronized (RemoteChannels.class) {
                current = instance;
                if (current == null) {
                    current = start();
                    instance = current;
                }
            }
        }
        return current;
    }

    private static RemoteChannels start() throws IOException {
        final ChildJvm child = ChildJvm.start(RemoteChannelHost.class, false, List.of());
        try {
            final int port = Integer.parseInt(child.expect(RemoteChannelHost.READY, START_SECONDS).split(" ")[1]);
            final java.net.Socket connection = new java.net.Socket(InetAddress.getLoopbackAddress(), port);
            connection.setTcpNoDelay(true);
            return new RemoteChannels(child, connection);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
            child.close();
            throw new IOException("interrupted starting the remote channel host", ex);
        } catch (final IOException | RuntimeException | AssertionError ex) {
            child.close();
            throw ex;
        }
    }

    /**
     * Calls {@code op} on the child's object {@code target} and waits for its answer, uninterruptibly (a thread
     * interrupted in a blocking call learns of it from its channel, as with a local one), for at most 5 minutes.
     *
     * @param target the object's id, or {@link #HOST}.
     * @param op     the operation.
     * @param args   its arguments, serialisable.
     * @return the answer.
     * @throws IOException the exception the child's object threw, or why the child cannot answer.
     */
    Response call(final int target, final String op, final Object... args) throws IOException {
        return await(callAsync(target, op, args));
    }

    /**
     * Like {@link #call} without waiting.
     *
     * @return the answer to come; it completes exceptionally only when the child is gone.
     */
    CompletableFuture<Response> callAsync(final int target, final String op, final Object... args)
        throws IOException {
        final long id = calls.incrementAndGet();
        final CompletableFuture<Response> answer = new CompletableFuture<>();
        pending.put(id, answer);
        final IOException failure = gone;
        if (failure != null) {
            pending.remove(id);
            throw new IOException("the remote channel host is gone", failure);
        }
        try {
            synchronized (out) {
                out.writeObject(new Request(id, target, op, args));
                out.reset();
                out.flush();
            }
        } catch (final IOException ex) {
            pending.remove(id);
            throw new IOException("cannot reach the remote channel host: " + child.describe(), ex);
        }
        return answer;
    }

    /**
     * Waits for an answer uninterruptibly and throws what the child's object threw.
     *
     * @param answer the answer to come.
     * @return the answer, when it is a value.
     * @throws IOException what the object threw.
     */
    static Response await(final CompletableFuture<Response> answer) throws IOException {
        return await(answer, MAX_WAIT);
    }

    /**
     * Like {@link #await(CompletableFuture)} for at most {@code limit}: a call that is not answered by then fails
     * (the longest blocking call of the suite is far shorter: this keeps a hung child from hanging the build).
     *
     * @param answer the answer to come.
     * @param limit  how long to wait at most.
     * @return the answer, when it is a value.
     * @throws IOException what the object threw, or that no answer came in time.
     */
    static Response await(final CompletableFuture<Response> answer, final Duration limit) throws IOException {
        final long deadline = System.nanoTime() + limit.toNanos();
        boolean interrupted = false;
        Response response = null;
        try {
            while (response == null) {
                try {
                    response = answer.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                } catch (final InterruptedException ex) {
                    // the caller learns of the interrupt from its channel, as with a local one
                    interrupted = true;
                } catch (final TimeoutException ex) {
                    throw new IOException("no answer from the remote channel host within " + limit, ex);
                } catch (final ExecutionException ex) {
                    throw ex.getCause() instanceof IOException io ? new IOException(io.getMessage(), io)
                        : new IOException(ex.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        final Throwable failure = response.failure();
        if (failure == null) {
            return response;
        }
        if (failure instanceof IOException io) {
            throw io;
        }
        if (failure instanceof RuntimeException runtime) {
            throw runtime;
        }
        if (failure instanceof Error error) {
            throw error;
        }
        throw new IOException(failure);
    }

    private void readResponses(final ObjectInputStream in) {
        IOException failure;
        try {
            while (true) {
                final Response response = (Response) in.readObject();
                final CompletableFuture<Response> answer = pending.remove(response.call());
                if (answer != null) {
                    answer.complete(response);
                }
            }
        } catch (final IOException ex) {
            failure = ex;
        } catch (final ClassNotFoundException ex) {
            failure = new IOException(ex);
        }
        final IOException described = new IOException("remote channel host gone: " + child.describe(), failure);
        gone = described;
        for (final Long id : List.copyOf(pending.keySet())) {
            final CompletableFuture<Response> answer = pending.remove(id);
            if (answer != null) {
                answer.completeExceptionally(described);
            }
        }
        try {
            connection.close();
        } catch (final IOException ignore) {
            // already failed
        }
    }

    /**
     * The local socket option of that name: the standard options and rdmachannel's.
     *
     * @param name the option's name.
     * @return the option, or null if this JVM knows none of that name.
     */
    static SocketOption<?> option(final String name) {
        return OPTIONS.get(name);
    }

    private static Map<String, SocketOption<?>> knownOptions() {
        final Map<String, SocketOption<?>> options = new HashMap<>();
        for (final Class<?> holder : List.of(StandardSocketOptions.class, RdmaSocketOptions.class)) {
            for (final Field field : holder.getFields()) {
                if (Modifier.isStatic(field.getModifiers()) && SocketOption.class.isAssignableFrom(field.getType())) {
                    try {
                        final SocketOption<?> option = (SocketOption<?>) field.get(null);
                        options.put(option.name(), option);
                    } catch (final IllegalAccessException ex) {
                        throw new IllegalStateException(ex);
                    }
                }
            }
        }
        return Map.copyOf(options);
    }

    /**
     * An address to send to the child: the kinds the real channels know (IP, Unix domain and rdmachannel's GID
     * addresses, all serialisable) travel; any other {@code SocketAddress} subclass is refused here with the
     * exception the real channel throws for it.
     *
     * @param address the address, null allowed (the real channel decides what null means).
     * @return the address.
     * @throws UnsupportedAddressTypeException for another kind of address.
     */
    static SocketAddress sendable(final SocketAddress address) {
        if (address == null || address instanceof InetSocketAddress || address instanceof UnixDomainSocketAddress
            || address instanceof IbSocketAddress) {
            return address;
        }
        throw new UnsupportedAddressTypeException();
    }

    /**
     * One call.
     *
     * @param call   its id, unique in this JVM.
     * @param target the object called.
     * @param op     the operation.
     * @param args   its arguments.
     */
    record Request(long call, int target, String op, Object[] args) implements Serializable {
    }

    /**
     * One answer.
     *
     * @param call    the call answered.
     * @param value   the value, null for none or on failure.
     * @param failure what the object threw, or null.
     * @param open    for a channel, whether it is still open after the call (a failed connect, an adaptor's close
     *                and a reset close it there); null otherwise.
     */
    record Response(long call, Object value, Throwable failure, Boolean open) implements Serializable {
    }
}
