package io.rdmachannel.interop.contract;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.interop.contract.RemoteChannels.Request;
import io.rdmachannel.interop.contract.RemoteChannels.Response;
import io.rdmachannel.nio.RdmaSelectorProvider;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.NotSerializableException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.Serializable;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketOption;
import java.nio.ByteBuffer;
import java.nio.channels.Channel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.channels.spi.SelectorProvider;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The child JVM of {@link RemoteChannels}: real rdmachannel socket channels and selectors on the shm provider, worked
 * by the test JVM's proxies over one TCP connection. Every request runs on its own thread and answers with the value
 * or the exception of the real object. Prints {@value #READY} and its port, then serves until its stdin ends.
 * <p>
 * Operations: on the host ({@link RemoteChannels#HOST}) {@code openSocketChannel} and {@code openSelector}; on a
 * channel {@code read}, {@code readv}, {@code write}, {@code writev} (bytes travel as arrays), {@code setOption},
 * {@code getOption}, {@code supportedOptions} (options by name), {@code socket.read} and {@code socket.write} (the
 * adaptor's streams), any other public method of {@code SocketChannel} by name, and of its adaptor {@code Socket}
 * with the prefix {@code socket.}; on a selector {@code register}, {@code interestOps}, {@code select} (with the keys
 * cancelled since the last one) and {@code wakeup} of one numbered selection, and {@code close}.
 */
public final class RemoteChannelHost {
    /** The line the child prints when it accepts the connection, followed by its port. */
    static final String READY = "REMOTE-CHANNELS ";

    private final SelectorProvider provider;
    private final Map<Integer, Object> objects = new ConcurrentHashMap<>();
    private final AtomicInteger ids = new AtomicInteger(RemoteChannels.HOST);
    private final ExecutorService workers = Executors.newCachedThreadPool(task -> {
        final Thread thread = new Thread(task, "remote-call");
        thread.setDaemon(true);
        return thread;
    });
    private final ObjectOutputStream out;

    private RemoteChannelHost(final SelectorProvider provider, final OutputStream out) throws IOException {
        this.provider = provider;
        this.out = new ObjectOutputStream(new BufferedOutputStream(out, 1 << 16));
        this.out.flush();
    }

    public static void main(final String[] args) throws Exception {
        final SelectorProvider provider = new RdmaSelectorProvider(StreamTransports.open(RdmaProviders.byName("shm")));
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            System.out.println(READY + server.getLocalPort());
            Thread.ofPlatform().daemon().name("stdin").start(RemoteChannelHost::exitAtEndOfStdin);
            final Socket connection = server.accept();
            connection.setTcpNoDelay(true);
            final RemoteChannelHost host = new RemoteChannelHost(provider, connection.getOutputStream());
            host.serve(new ObjectInputStream(new BufferedInputStream(connection.getInputStream(), 1 << 16)));
        }
        System.exit(0);
    }

    private static void exitAtEndOfStdin() {
        try (InputStream in = System.in) {
            while (in.read() >= 0) {
                // only the end matters
            }
        } catch (final IOException ignore) {
            // the parent is gone
        }
        System.exit(0);
    }

    private void serve(final ObjectInputStream in) throws IOException, ClassNotFoundException {
        while (true) {
            final Request request;
            try {
                request = (Request) in.readObject();
            } catch (final java.io.EOFException ex) {
                return;
            }
            workers.execute(() -> answer(request));
        }
    }

    private void answer(final Request request) {
        final Object target = objects.get(request.target());
        Object value = null;
        Throwable failure = null;
        try {
            value = request.target() == RemoteChannels.HOST ? host(request) : call(target, request);
            if (value != null && "getOption".equals(request.op())) {
                serialisable(value);
            }
        } catch (final InvocationTargetException ex) {
            failure = ex.getCause();
        } catch (final Exception | Error ex) {
            failure = ex;
        }
        if (failure != null && !serialisable(failure)) {
            failure = new IOException("unserialisable failure: " + failure);
        }
        final Boolean open = target instanceof Channel channel ? channel.isOpen() : null;
        try {
            synchronized (out) {
                out.writeObject(new Response(request.call(), value, failure, open));
                out.reset();
                out.flush();
            }
        } catch (final IOException ex) {
            System.exit(3);
        }
    }

    private Object call(final Object target, final Request request) throws Exception {
        return switch (target) {
            case SocketChannel channel -> onChannel(channel, request.op(), request.args());
            case SelectorState selector -> selector.on(request.op(), request.args());
            case null -> throw new IllegalStateException("no object " + request.target());
            default -> throw new IllegalStateException("not callable: " + target);
        };
    }

    private static boolean serialisable(final Object value) {
        try (ObjectOutputStream probe = new ObjectOutputStream(new ByteArrayOutputStream())) {
            probe.writeObject(value);
            return true;
        } catch (final NotSerializableException ex) {
            return false;
        } catch (final IOException ex) {
            throw new IllegalStateException(ex);
        }
    }

    private Object host(final Request request) throws IOException {
        final Object opened = switch (request.op()) {
            case "openSocketChannel" -> provider.openSocketChannel();
            case "openSelector" -> new SelectorState(provider.openSelector());
            default -> throw new IllegalArgumentException("unknown host operation " + request.op());
        };
        final int id = ids.incrementAndGet();
        objects.put(id, opened);
        return id;
    }

    private Object onChannel(final SocketChannel channel, final String op, final Object[] args) throws Exception {
        return switch (op) {
            case "read" -> {
                final ByteBuffer buffer = ByteBuffer.allocate((Integer) args[0]);
                final int n = channel.read(buffer);
                yield n < 0 ? (Object) n : Arrays.copyOf(buffer.array(), n);
            }
            case "readv" -> {
                final int[] lengths = (int[]) args[0];
                final ByteBuffer[] buffers = new ByteBuffer[lengths.length];
                for (int i = 0; i < lengths.length; i++) {
                    buffers[i] = ByteBuffer.allocate(lengths[i]);
                }
                final long n = channel.read(buffers);
                final ByteArrayOutputStream data = new ByteArrayOutputStream();
                for (final ByteBuffer buffer : buffers) {
                    data.write(buffer.array(), 0, buffer.position());
                }
                yield new Object[] {n, data.toByteArray()};
            }
            case "write" -> channel.write(ByteBuffer.wrap((byte[]) args[0]));
            case "writev" -> {
                final byte[][] parts = (byte[][]) args[0];
                final ByteBuffer[] buffers = new ByteBuffer[parts.length];
                for (int i = 0; i < parts.length; i++) {
                    buffers[i] = ByteBuffer.wrap(parts[i]);
                }
                yield channel.write(buffers);
            }
            case "setOption" -> {
                setOption(channel, option(channel, (String) args[0]), args[1]);
                yield null;
            }
            case "getOption" -> channel.getOption(option(channel, (String) args[0]));
            case "supportedOptions" -> channel.supportedOptions().stream().map(SocketOption::name)
                .toArray(String[]::new);
            case "socket.read" -> {
                final byte[] bytes = new byte[(Integer) args[0]];
                final int n = channel.socket().getInputStream().read(bytes);
                yield n < 0 ? (Object) n : Arrays.copyOf(bytes, n);
            }
            case "socket.write" -> {
                channel.socket().getOutputStream().write((byte[]) args[0]);
                yield null;
            }
            default -> op.startsWith("socket.") ? invoke(Socket.class, channel.socket(), op.substring(7), args)
                : invoke(SocketChannel.class, channel, op, args);
        };
    }

    @SuppressWarnings("unchecked")
    private static <T> void setOption(final SocketChannel channel, final SocketOption<T> option, final Object value)
        throws IOException {
        channel.setOption(option, (T) value);
    }

    private static SocketOption<?> option(final SocketChannel channel, final String name) {
        return channel.supportedOptions().stream().filter(option -> option.name().equals(name)).findFirst()
            .orElseThrow(() -> new UnsupportedOperationException("'" + name + "' not supported"));
    }

    /**
     * Calls the public method of {@code api} with that name whose parameters take {@code args}; a result that cannot
     * travel (the fluent setters' {@code this}, a stream) is not sent back.
     */
    private static Object invoke(final Class<?> api, final Object target, final String name, final Object[] args)
        throws InvocationTargetException, IllegalAccessException {
        for (final Method method : api.getMethods()) {
            if (method.getName().equals(name) && takes(method.getParameterTypes(), args)) {
                final Object result = method.invoke(target, args);
                return result instanceof Serializable ? result : null;
            }
        }
        throw new IllegalArgumentException("no " + api.getSimpleName() + "." + name + " for " + Arrays.toString(args));
    }

    private static boolean takes(final Class<?>[] types, final Object[] args) {
        if (types.length != args.length) {
            return false;
        }
        for (int i = 0; i < types.length; i++) {
            final Class<?> type = types[i] == int.class ? Integer.class : types[i] == boolean.class ? Boolean.class
                : types[i] == long.class ? Long.class : types[i];
            if (args[i] != null && !type.isInstance(args[i])) {
                return false;
            }
            if (args[i] == null && types[i].isPrimitive()) {
                return false;
            }
        }
        return true;
    }

    /**
     * A selector and its keys by id. Selections are numbered by the test JVM; a wakeup names the selection it is
     * meant for, so one that arrives after that selection ended wakes nothing, and one that arrives before it
     * started makes it return at once.
     */
    private final class SelectorState {
        private final Selector selector;
        private final Map<Integer, SelectionKey> keys = new ConcurrentHashMap<>();
        private long selecting;
        private long wakeupFor;

        SelectorState(final Selector selector) {
            this.selector = selector;
        }

        Object on(final String op, final Object[] args) throws IOException {
            return switch (op) {
                case "register" -> {
                    final SocketChannel channel = (SocketChannel) objects.get((Integer) args[0]);
                    final int id = ids.incrementAndGet();
                    keys.put(id, channel.register(selector, (Integer) args[1], id));
                    yield id;
                }
                case "interestOps" -> {
                    keys.get((Integer) args[0]).interestOps((Integer) args[1]);
                    yield null;
                }
                case "select" -> select((Long) args[0], (int[]) args[1], (Long) args[2]);
                case "wakeup" -> {
                    wakeup((Long) args[0]);
                    yield null;
                }
                case "close" -> {
                    selector.close();
                    yield null;
                }
                default -> throw new IllegalArgumentException("unknown selector operation " + op);
            };
        }

        /**
         * Cancels the keys, selects (at once when {@code timeout} is -1, else as {@code select(timeout)}) and
         * answers key id and ready operations, in pairs.
         */
        private long[] select(final long selection, final int[] cancelled, final long timeout) throws IOException {
            for (final int id : cancelled) {
                final SelectionKey key = keys.remove(id);
                if (key != null) {
                    key.cancel();
                }
            }
            final Map<Integer, Integer> ready = new LinkedHashMap<>();
            // clears a wakeup left from an earlier selection and deregisters the cancelled keys
            selector.selectNow(key -> ready.merge((Integer) key.attachment(), key.readyOps(), (a, b) -> a | b));
            final boolean woken = begin(selection);
            try {
                if (timeout >= 0 && !woken && ready.isEmpty()) {
                    selector.select(key -> ready.merge((Integer) key.attachment(), key.readyOps(), (a, b) -> a | b),
                        timeout);
                }
            } finally {
                end();
            }
            final long[] pairs = new long[ready.size() * 2];
            int i = 0;
            for (final Map.Entry<Integer, Integer> entry : ready.entrySet()) {
                pairs[i++] = entry.getKey();
                pairs[i++] = entry.getValue();
            }
            return pairs;
        }

        private synchronized boolean begin(final long selection) {
            selecting = selection;
            return wakeupFor == selection;
        }

        private synchronized void end() {
            selecting = 0;
        }

        private synchronized void wakeup(final long selection) {
            if (selecting == selection) {
                selector.wakeup();
            } else {
                wakeupFor = selection;
            }
        }
    }
}
