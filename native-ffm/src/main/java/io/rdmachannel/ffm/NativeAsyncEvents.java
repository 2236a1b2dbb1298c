package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvContextLayouts.CONTEXT_ASYNC_FD;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.ASYNC_EVENT_ELEMENT;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.ASYNC_EVENT_SIZE;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.ASYNC_EVENT_TYPE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.ffm.internal.EpollWaitSet;
import io.rdmachannel.ffm.internal.LibC;
import io.rdmachannel.ffm.verbs.IbvCalls;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The reader of the devices' asynchronous events: one daemon thread for the JVM, started with the first device,
 * waits in epoll on the {@code async_fd} of every open {@code ibv_context} (made non-blocking), takes each event with
 * {@code ibv_get_async_event}, hands it to every {@link NativeDevice} over that context and acknowledges it.
 *
 * <p>A context is watched once however many devices wrap it (two {@code rdma_cm} managers wrap the contexts
 * librdmacm opened); the last device to close stops watching it. Reading a context and stopping to watch it
 * exclude each other, so a device never closes its context while an event of it is being read. An event is
 * acknowledged after the devices handled it: {@code ibv_destroy_qp} and {@code ibv_destroy_cq} wait for the
 * acknowledgement of their objects' events, so the handlers must not wait for a queue pair that is being destroyed
 * (see {@link NativeQueuePair#failFromDevice}).
 */
final class NativeAsyncEvents {
    static final Logger LOG = LoggerFactory.getLogger(NativeAsyncEvents.class);
    private static final int CAPACITY = 8;
    private static final NativeAsyncEvents SHARED = new NativeAsyncEvents();

    private final Map<Long, Watched> byContext = new HashMap<>();
    private final Map<Long, Watched> byToken = new HashMap<>();
    private EpollWaitSet waitSet;
    private long nextToken;

    /** One watched context: its devices and the buffer its events are read into. */
    private static final class Watched {
        final MemorySegment context;
        final int fd;
        final long token;
        final MemorySegment event = Arena.ofAuto().allocate(ASYNC_EVENT_SIZE, 8);
        final List<NativeDevice> devices = new ArrayList<>(1);
        /** Under the instance's monitor: set when no device is left, after which the context is not read again. */
        boolean gone;

        Watched(MemorySegment context, int fd, long token) {
            this.context = context;
            this.fd = fd;
            this.token = token;
        }
    }

    private NativeAsyncEvents() {
    }

    static NativeAsyncEvents shared() {
        return SHARED;
    }

    /**
     * Read the events of a device's context from now on.
     *
     * @throws NativeCallException if the descriptor cannot be made non-blocking or watched.
     */
    void watch(NativeDevice device) throws NativeCallException {
        MemorySegment context = device.context();
        synchronized (this) {
            if (waitSet == null) {
                EpollWaitSet set = new EpollWaitSet(CAPACITY);
                waitSet = set;
                Thread.ofPlatform().daemon().name("rdmachannel-async-events").start(() -> run(set));
            }
            Watched watched = byContext.get(context.address());
            if (watched == null) {
                int fd = context.get(JAVA_INT, CONTEXT_ASYNC_FD);
                LibC.setNonBlocking(fd);
                watched = new Watched(context, fd, nextToken++);
                waitSet.add(fd, LibC.EPOLLIN, watched.token);
                byContext.put(context.address(), watched);
                byToken.put(watched.token, watched);
            }
            synchronized (watched) {
                watched.devices.add(device);
            }
        }
    }

    /** Stop giving a device the events of its context; the context is no longer read once no device is left. */
    void unwatch(NativeDevice device) {
        synchronized (this) {
            Watched watched = byContext.get(device.context().address());
            if (watched == null) {
                return;
            }
            // waits for a read of the context in progress
            synchronized (watched) {
                watched.devices.remove(device);
                if (!watched.devices.isEmpty()) {
                    return;
                }
                watched.gone = true;
            }
            byContext.remove(device.context().address());
            byToken.remove(watched.token);
            try {
                waitSet.remove(watched.fd);
            } catch (NativeCallException e) {
                LOG.debug("cannot stop watching the async events of {}", device.name(), e);
            }
        }
    }

    /** The devices whose events are read now. */
    synchronized List<NativeDevice> devices() {
        List<NativeDevice> devices = new ArrayList<>();
        for (Watched watched : byContext.values()) {
            synchronized (watched) {
                devices.addAll(watched.devices);
            }
        }
        return devices;
    }

    private void run(EpollWaitSet set) {
        while (true) {
            try {
                int ready = set.await(-1);
                for (int i = 0; i < ready; i++) {
                    Watched watched;
                    synchronized (this) {
                        watched = byToken.get(set.token(i));
                    }
                    if (watched != null) {
                        drain(watched);
                    }
                }
            } catch (NativeCallException | RuntimeException e) {
                LOG.error("reading the devices' async events failed", e);
                pause();
            }
        }
    }

    private static void pause() {
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Take, hand out and acknowledge every pending event of a context. */
    private static void drain(Watched watched) throws NativeCallException {
        synchronized (watched) {
            while (!watched.gone && IbvCalls.getAsyncEvent(watched.context, watched.event)) {
                int type = watched.event.get(JAVA_INT, ASYNC_EVENT_TYPE);
                long element = watched.event.get(JAVA_LONG, ASYNC_EVENT_ELEMENT);
                int port = watched.event.get(JAVA_INT, ASYNC_EVENT_ELEMENT);
                try {
                    for (NativeDevice device : watched.devices) {
                        device.onAsyncEvent(type, element, port);
                    }
                } catch (RuntimeException e) {
                    LOG.error("handling async event {} failed", IbvCalls.eventTypeStr(type), e);
                } finally {
                    IbvCalls.ackAsyncEvent(watched.event);
                }
            }
        }
    }
}
