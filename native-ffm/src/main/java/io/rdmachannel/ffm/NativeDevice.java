package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_ATTR_DEVICE_CAP_FLAGS;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_ATTR_MAX_CQE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_ATTR_MAX_MR_SIZE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_ATTR_MAX_QP_WR;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_ATTR_MAX_SGE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_ATTR_MAX_SRQ;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_ATTR_MAX_SRQ_SGE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_ATTR_MAX_SRQ_WR;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.DEVICE_TRANSPORT_TYPE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.IBV_DEVICE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.IBV_DEVICE_ATTR;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_ACTIVE_MTU;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_GID_TBL_LEN;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_LINK_LAYER;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_MAX_MSG_SZ;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_SIZE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_STATE;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.CONTEXT_DEVICE;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.CONTEXT_SIZE;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.GID_SIZE;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.XRCD_INIT_ATTR_COMP_MASK;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.XRCD_INIT_ATTR_FD;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.XRCD_INIT_ATTR_OFLAGS;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.XRCD_INIT_ATTR_SIZE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.DeviceAttributes;
import io.rdmachannel.channel.spi.DeviceCapability;
import io.rdmachannel.channel.spi.DeviceEvents;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.DeviceResources;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.ffm.internal.CriticalPolicy;
import io.rdmachannel.ffm.verbs.IbvCalls;
import io.rdmachannel.ffm.verbs.IbvInline;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HexFormat;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;

/**
 * An opened {@code ibv_context}. Attributes come from {@code ibv_query_device} and {@code ibv_query_port} of port 1.
 *
 * <p>The inline limit is not in the device attributes (rxe and mlx5 report none there), so it is probed once at open:
 * queue pairs of depth 1 are created with growing {@code max_inline_data} up to {@value #INLINE_PROBE_LIMIT} bytes
 * (a binary search), and the largest value the device accepted is the limit. It is a lower bound of what the device
 * can do; a queue pair asking for it is always created.
 *
 * <p>The source GID of a queue pair is chosen when it moves to READY_TO_RECEIVE ({@link #sourceGidIndex}): on RoCE,
 * the RoCE v2 entry of the same kind as the remote GID (IPv4-mapped, IPv6 link-local or IPv6 global), read from the
 * kernel's {@code gid_attrs/types} in sysfs; on InfiniBand, index 0.
 *
 * <p>Asynchronous events ({@link NativeAsyncEvents} reads them for every open device) are counted in
 * {@link #events()}. A port event re-reads the port's state; a port going down fails nothing (the queue pairs retry
 * and resume when it comes back in time). An error event of a queue pair, of a completion queue or shared receive
 * queue, or a fatal device event {@linkplain NativeQueuePair#failFromDevice fails} each queue pair concerned: moved
 * to ERROR, with a failed receive completion delivered to its owner even if the device delivers none.
 */
final class NativeDevice implements RdmaDevice {
    static final int PORT = 1;
    static final int INLINE_PROBE_LIMIT = 1024;
    private static final String ROCE_V2 = "RoCE v2";

    private final NativeProvider provider;
    private final String name;
    private final MemorySegment context;
    private final DeviceAttributes attributes;
    private final int linkLayer;
    private final int gidTableLength;
    private final int maxSharedReceiveQueueSge;
    private final boolean critical;
    private final int transport;
    private final boolean ownsContext;
    private final AtomicInteger openChildren = new AtomicInteger();
    /** The eventfds of platform threads waiting directly on this device's completion channels. */
    private final WaitingThread.Pool waiters = new WaitingThread.Pool();
    private final ResourceCounter resources = new ResourceCounter();
    /** The open queue pairs by their {@code ibv_qp} address, which is how an async event names one. */
    private final Map<Long, NativeQueuePair> queuePairs = new ConcurrentHashMap<>();
    /** The open shared receive queues by their {@code ibv_srq} address, for their limit events. */
    private final Map<Long, NativeSharedReceiveQueue> sharedReceiveQueues = new ConcurrentHashMap<>();
    private final AtomicLong portDownEvents = new AtomicLong();
    private final AtomicLong portUpEvents = new AtomicLong();
    private final AtomicLong queuePairErrorEvents = new AtomicLong();
    private final AtomicLong completionQueueErrorEvents = new AtomicLong();
    private final AtomicLong sharedReceiveQueueErrorEvents = new AtomicLong();
    private final AtomicLong deviceFatalEvents = new AtomicLong();
    private final AtomicLong otherEvents = new AtomicLong();
    private final AtomicLong queuePairsFailed = new AtomicLong();
    private volatile int portState;
    private volatile boolean closed;

    private NativeDevice(NativeProvider provider, String name, MemorySegment context, MemorySegment deviceAttr,
        MemorySegment portAttr, int transport, int maxInline, boolean ownsContext) {
        this.provider = provider;
        this.name = name;
        this.context = context;
        this.transport = transport;
        this.ownsContext = ownsContext;
        this.linkLayer = portAttr.get(JAVA_BYTE, PORT_ATTR_LINK_LAYER);
        this.portState = portAttr.get(JAVA_INT, PORT_ATTR_STATE);
        this.gidTableLength = portAttr.get(JAVA_INT, PORT_ATTR_GID_TBL_LEN);
        this.maxSharedReceiveQueueSge = deviceAttr.get(JAVA_INT, DEVICE_ATTR_MAX_SRQ_SGE);
        this.critical = CriticalPolicy.allowsCritical(name);
        Set<DeviceCapability> capabilities = EnumSet.of(DeviceCapability.REMOTE_ACCESS_TO_REGISTERED_MEMORY);
        int maxSrq = deviceAttr.get(JAVA_INT, DEVICE_ATTR_MAX_SRQ);
        if (maxSrq > 0) {
            capabilities.add(DeviceCapability.SHARED_RECEIVE_QUEUE);
        }
        if ((deviceAttr.get(JAVA_INT, DEVICE_ATTR_DEVICE_CAP_FLAGS) & VerbsConstants.IBV_DEVICE_XRC) != 0) {
            capabilities.add(DeviceCapability.XRC);
        }
        if (transport == VerbsConstants.IBV_TRANSPORT_IB) {
            capabilities.add(DeviceCapability.RDMA_WRITE_WITH_IMMEDIATE);
        }
        this.attributes = new DeviceAttributes(name,
            deviceAttr.get(JAVA_INT, DEVICE_ATTR_MAX_QP_WR),
            deviceAttr.get(JAVA_INT, DEVICE_ATTR_MAX_CQE),
            deviceAttr.get(JAVA_INT, DEVICE_ATTR_MAX_SGE),
            maxInline,
            maxSrq > 0 ? deviceAttr.get(JAVA_INT, DEVICE_ATTR_MAX_SRQ_WR) : 0,
            clampUnsigned(deviceAttr.get(JAVA_LONG, DEVICE_ATTR_MAX_MR_SIZE)),
            Integer.toUnsignedLong(portAttr.get(JAVA_INT, PORT_ATTR_MAX_MSG_SZ)),
            VerbsConstants.mtuBytes(portAttr.get(JAVA_INT, PORT_ATTR_ACTIVE_MTU)),
            capabilities);
    }

    /** A {@code uint64_t} limit as a Java long: values beyond {@link Long#MAX_VALUE} (rxe says 2^64 - 1) clamp. */
    private static long clampUnsigned(long value) {
        return value < 0 ? Long.MAX_VALUE : value;
    }

    static NativeDevice open(NativeProvider provider, String name, MemorySegment device) throws IOException {
        MemorySegment context = IbvCalls.openDevice(device).reinterpret(CONTEXT_SIZE);
        try {
            return describe(provider, name, device, context, true);
        } catch (IOException | RuntimeException | Error e) {
            try {
                IbvCalls.closeDevice(context);
            } catch (NativeCallException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * A device over an {@code ibv_context} someone else opened and closes, such as the contexts librdmacm opens for
     * its ids ({@code rdma_cm_id.verbs}); closing it releases nothing native.
     */
    static NativeDevice wrap(NativeProvider provider, MemorySegment context) throws IOException {
        MemorySegment sized = context.reinterpret(CONTEXT_SIZE);
        MemorySegment device = sized.get(ADDRESS, CONTEXT_DEVICE);
        return describe(provider, IbvCalls.getDeviceName(device), device, sized, false);
    }

    private static NativeDevice describe(NativeProvider provider, String name, MemorySegment device,
        MemorySegment context, boolean ownsContext) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment deviceAttr = arena.allocate(IBV_DEVICE_ATTR.layout());
            IbvCalls.queryDevice(context, deviceAttr);
            MemorySegment portAttr = arena.allocate(PORT_ATTR_SIZE, 8);
            IbvInline.queryPort(context, PORT, portAttr);
            int transport = device.reinterpret(IBV_DEVICE.size()).get(JAVA_INT, DEVICE_TRANSPORT_TYPE);
            int maxInline = InlineProbe.maxInlineData(context);
            NativeDevice opened = new NativeDevice(provider, name, context, deviceAttr, portAttr, transport,
                maxInline, ownsContext);
            NativeAsyncEvents.shared().watch(opened);
            return opened;
        }
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public RdmaProvider provider() {
        return provider;
    }

    @Override
    public DeviceAttributes attributes() {
        return attributes;
    }

    MemorySegment context() {
        return context;
    }

    boolean critical() {
        return critical;
    }

    /** Whether the device is iWARP ({@code IBV_TRANSPORT_IWARP}) rather than InfiniBand or RoCE. */
    boolean iwarp() {
        return transport == VerbsConstants.IBV_TRANSPORT_IWARP;
    }

    int linkLayer() {
        return linkLayer;
    }

    int maxSharedReceiveQueueSge() {
        return maxSharedReceiveQueueSge;
    }

    /**
     * {@code ibv_query_gid}: the GID at an index, as the index is given (no reordering). On RoCE, index 0 is usually
     * the IPv6 link-local GID; an IP-based GID (e.g. {@code ::ffff:192.0.2.1}) follows.
     */
    @Override
    public byte[] queryGid(int portNumber, int index) throws IOException {
        ensureOpen();
        if (portNumber < 1 || portNumber > 255 || index < 0) {
            throw new IllegalArgumentException("portNumber=" + portNumber + ", index=" + index + " is out of range");
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment gid = arena.allocate(GID_SIZE);
            IbvCalls.queryGid(context, (byte) portNumber, index, gid);
            return gid.toArray(JAVA_BYTE);
        }
    }

    /**
     * The local GID index a queue pair sends from towards a remote GID: on InfiniBand 0; on RoCE the first RoCE v2
     * entry of the same kind as the remote GID (IPv4-mapped, link-local, other IPv6), else the first entry of that
     * kind, else 0.
     */
    int sourceGidIndex(int portNumber, byte[] remoteGid) throws IOException {
        if (linkLayer != VerbsConstants.IBV_LINK_LAYER_ETHERNET) {
            return 0;
        }
        int wanted = gidKind(remoteGid);
        int sameKind = -1;
        for (int index = 0; index < gidTableLength; index++) {
            byte[] gid;
            try {
                gid = queryGid(portNumber, index);
            } catch (NativeCallException e) {
                continue;
            }
            if (isZero(gid) || gidKind(gid) != wanted) {
                continue;
            }
            if (ROCE_V2.equals(gidType(portNumber, index))) {
                return index;
            }
            if (sameKind < 0) {
                sameKind = index;
            }
        }
        return Math.max(sameKind, 0);
    }

    private String gidType(int portNumber, int index) {
        Path type = Path.of("/sys/class/infiniband", name, "ports", Integer.toString(portNumber), "gid_attrs",
            "types", Integer.toString(index));
        try {
            return Files.readString(type).trim();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    private static int gidKind(byte[] gid) {
        boolean ipv4Mapped = gid[10] == (byte) 0xFF && gid[11] == (byte) 0xFF
            && Arrays.equals(gid, 0, 10, new byte[10], 0, 10);
        if (ipv4Mapped) {
            return 0;
        }
        return gid[0] == (byte) 0xFE && (gid[1] & 0xC0) == 0x80 ? 1 : 2;
    }

    private static boolean isZero(byte[] gid) {
        return Arrays.equals(gid, new byte[gid.length]);
    }

    @Override
    public ProtectionDomain allocateProtectionDomain() throws IOException {
        ensureOpen();
        MemorySegment pd = IbvCalls.allocPd(context);
        openChildren.incrementAndGet();
        resources.opened(ResourceCounter.Kind.PROTECTION_DOMAIN);
        return new NativeProtectionDomain(this, pd);
    }

    @Override
    public ReadinessSource createReadinessSource() throws IOException {
        ensureOpen();
        NativeReadinessSource source = NativeReadinessSource.create(this);
        openChildren.incrementAndGet();
        resources.opened(ResourceCounter.Kind.READINESS_SOURCE);
        return source;
    }

    @Override
    public CompletionQueue createCompletionQueue(int entries, ReadinessSource readinessSource, long token)
        throws IOException {
        ensureOpen();
        if (entries < 1 || entries > attributes.maxCompletionQueueEntries()) {
            throw new IllegalArgumentException("entries=" + entries + " is outside [1, "
                + attributes.maxCompletionQueueEntries() + "]");
        }
        NativeReadinessSource source = null;
        if (readinessSource != null) {
            if (!(readinessSource instanceof NativeReadinessSource nativeSource) || nativeSource.device() != this) {
                throw new IllegalArgumentException("the readiness source belongs to another device");
            }
            source = nativeSource;
        }
        NativeCompletionQueue queue = NativeCompletionQueue.create(this, entries, source, token);
        openChildren.incrementAndGet();
        resources.opened(ResourceCounter.Kind.COMPLETION_QUEUE);
        return queue;
    }

    /** A queue pair was created on this device: async events may name it from now on. */
    void track(NativeQueuePair queuePair) {
        queuePairs.put(queuePair.address(), queuePair);
    }

    /** The open queue pair of a number, or {@code null}. */
    NativeQueuePair queuePair(int number) {
        for (NativeQueuePair queuePair : queuePairs.values()) {
            if (queuePair.number() == number) {
                return queuePair;
            }
        }
        return null;
    }

    /** A shared receive queue was created on this device: its limit events go to it. */
    void track(NativeSharedReceiveQueue queue) {
        sharedReceiveQueues.put(queue.srq().address(), queue);
    }

    /** A shared receive queue is being destroyed. */
    void forget(NativeSharedReceiveQueue queue) {
        sharedReceiveQueues.remove(queue.srq().address(), queue);
    }

    /** A queue pair is being destroyed: events naming it are ignored from now on. */
    void forget(NativeQueuePair queuePair) {
        queuePairs.remove(queuePair.address(), queuePair);
    }

    /**
     * Handle an asynchronous event of this device's context; {@link NativeAsyncEvents} calls it, and acknowledges the
     * event afterwards.
     *
     * @param type the {@code enum ibv_event_type}.
     * @param element the {@code element} union as a pointer: the queue pair, completion queue or shared receive
     *     queue the event is about.
     * @param portNumber the same union as {@code port_num}, for port events.
     */
    void onAsyncEvent(int type, long element, int portNumber) {
        String what = IbvCalls.eventTypeStr(type) + " (" + eventName(type) + ")";
        if (type == VerbsConstants.IBV_EVENT_PORT_ERR || type == VerbsConstants.IBV_EVENT_PORT_ACTIVE) {
            (type == VerbsConstants.IBV_EVENT_PORT_ERR ? portDownEvents : portUpEvents).incrementAndGet();
            refreshPortState(portNumber);
            if (type == VerbsConstants.IBV_EVENT_PORT_ERR) {
                NativeAsyncEvents.LOG.warn("{} port {}: {}; its connections retry until it comes back", name,
                    portNumber, what);
            } else {
                NativeAsyncEvents.LOG.info("{} port {}: {}", name, portNumber, what);
            }
            return;
        }
        int failed = 0;
        if (type == VerbsConstants.IBV_EVENT_QP_FATAL || type == VerbsConstants.IBV_EVENT_QP_REQ_ERR
            || type == VerbsConstants.IBV_EVENT_QP_ACCESS_ERR) {
            queuePairErrorEvents.incrementAndGet();
            NativeQueuePair queuePair = queuePairs.get(element);
            if (queuePair != null && queuePair.failFromDevice(what)) {
                failed++;
            }
        } else if (type == VerbsConstants.IBV_EVENT_CQ_ERR) {
            completionQueueErrorEvents.incrementAndGet();
            failed = failEach(queuePair -> queuePair.usesCompletionQueue(element), what);
        } else if (type == VerbsConstants.IBV_EVENT_SRQ_ERR) {
            sharedReceiveQueueErrorEvents.incrementAndGet();
            failed = failEach(queuePair -> queuePair.usesSharedReceiveQueue(element), what);
        } else if (type == VerbsConstants.IBV_EVENT_DEVICE_FATAL) {
            deviceFatalEvents.incrementAndGet();
            failed = failEach(queuePair -> true, what);
        } else {
            otherEvents.incrementAndGet();
            NativeAsyncEvents.LOG.debug("{}: {} on 0x{}", name, what, Long.toHexString(element));
            if (type == VerbsConstants.IBV_EVENT_QP_LAST_WQE_REACHED) {
                NativeQueuePair queuePair = queuePairs.get(element);
                if (queuePair != null) {
                    queuePair.lastReceiveReached();
                }
            } else if (type == VerbsConstants.IBV_EVENT_SRQ_LIMIT_REACHED) {
                NativeSharedReceiveQueue queue = sharedReceiveQueues.get(element);
                if (queue != null) {
                    queue.onLimitReached();
                }
            }
            return;
        }
        queuePairsFailed.addAndGet(failed);
        NativeAsyncEvents.LOG.warn("{}: {} on 0x{}: {} queue pairs failed", name, what, Long.toHexString(element),
            failed);
    }

    private int failEach(Predicate<NativeQueuePair> concerned, String what) {
        int failed = 0;
        for (NativeQueuePair queuePair : queuePairs.values()) {
            if (concerned.test(queuePair) && queuePair.failFromDevice(what)) {
                failed++;
            }
        }
        return failed;
    }

    private void refreshPortState(int portNumber) {
        if (portNumber != PORT) {
            return;
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment portAttr = arena.allocate(PORT_ATTR_SIZE, 8);
            IbvInline.queryPort(context, PORT, portAttr);
            portState = portAttr.get(JAVA_INT, PORT_ATTR_STATE);
        } catch (NativeCallException e) {
            NativeAsyncEvents.LOG.debug("cannot query port {} of {}", portNumber, name, e);
        }
    }

    private static String eventName(int type) {
        return switch (type) {
            case 0 -> "IBV_EVENT_CQ_ERR";
            case 1 -> "IBV_EVENT_QP_FATAL";
            case 2 -> "IBV_EVENT_QP_REQ_ERR";
            case 3 -> "IBV_EVENT_QP_ACCESS_ERR";
            case 4 -> "IBV_EVENT_COMM_EST";
            case 5 -> "IBV_EVENT_SQ_DRAINED";
            case 6 -> "IBV_EVENT_PATH_MIG";
            case 7 -> "IBV_EVENT_PATH_MIG_ERR";
            case 8 -> "IBV_EVENT_DEVICE_FATAL";
            case 9 -> "IBV_EVENT_PORT_ACTIVE";
            case 10 -> "IBV_EVENT_PORT_ERR";
            case 11 -> "IBV_EVENT_LID_CHANGE";
            case 12 -> "IBV_EVENT_PKEY_CHANGE";
            case 13 -> "IBV_EVENT_SM_CHANGE";
            case 14 -> "IBV_EVENT_SRQ_ERR";
            case 15 -> "IBV_EVENT_SRQ_LIMIT_REACHED";
            case 16 -> "IBV_EVENT_QP_LAST_WQE_REACHED";
            case 17 -> "IBV_EVENT_CLIENT_REREGISTER";
            case 18 -> "IBV_EVENT_GID_CHANGE";
            case 19 -> "IBV_EVENT_WQ_FATAL";
            default -> "event " + type;
        };
    }

    private static String portStateName(int state) {
        return switch (state) {
            case 0 -> "NOP";
            case 1 -> "DOWN";
            case 2 -> "INIT";
            case 3 -> "ARMED";
            case 4 -> "ACTIVE";
            case 5 -> "ACTIVE_DEFER";
            default -> "state " + state;
        };
    }

    @Override
    public DeviceEvents events() {
        return new DeviceEvents(portStateName(portState), portDownEvents.get(), portUpEvents.get(),
            queuePairErrorEvents.get(), completionQueueErrorEvents.get(), sharedReceiveQueueErrorEvents.get(),
            deviceFatalEvents.get(), otherEvents.get(), queuePairsFailed.get());
    }

    void childClosed(final ResourceCounter.Kind kind) {
        openChildren.decrementAndGet();
        resources.closed(kind);
    }

    ResourceCounter resourceCounter() {
        return resources;
    }

    /**
     * XRC domains are not offered by this provider yet (the shm provider emulates them): the call reports why, with
     * the device's own answer. A device that does not advertise {@code IBV_DEVICE_XRC} (the soft devices rxe and
     * siw) is asked to open a private domain ({@code ibv_open_xrcd} with no file), which it refuses with its errno;
     * a device that advertises XRC gets the domain closed again at once and the message says what is missing. The
     * file is never touched.
     *
     * @throws UnsupportedOperationException always, naming the device, its capability bit and the driver's errno.
     */
    @Override
    public XrcDomain openXrcDomain(Path file, boolean create) throws IOException {
        Objects.requireNonNull(file, "file");
        ensureOpen();
        boolean advertised = attributes.capabilities().contains(DeviceCapability.XRC);
        String answer;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment attr = arena.allocate(XRCD_INIT_ATTR_SIZE, 8);
            attr.set(JAVA_INT, XRCD_INIT_ATTR_COMP_MASK,
                VerbsConstants.IBV_XRCD_INIT_ATTR_FD | VerbsConstants.IBV_XRCD_INIT_ATTR_OFLAGS);
            attr.set(JAVA_INT, XRCD_INIT_ATTR_FD, -1);
            attr.set(JAVA_INT, XRCD_INIT_ATTR_OFLAGS, VerbsConstants.O_CREAT);
            MemorySegment xrcd = IbvInline.openXrcd(context, attr);
            answer = "ibv_open_xrcd opens a private domain";
            try {
                IbvInline.closeXrcd(context, xrcd);
            } catch (NativeCallException e) {
                answer += " (and ibv_close_xrcd failed: " + e.getMessage() + ")";
            }
        } catch (NativeCallException e) {
            answer = e.getMessage();
        }
        if (!advertised) {
            throw new UnsupportedOperationException("device " + name + " of provider native has no XRC domains: "
                + "its device_cap_flags lack IBV_DEVICE_XRC, and " + answer + " (the soft devices rxe and siw "
                + "implement no XRC; the shm provider emulates it)");
        }
        throw new UnsupportedOperationException("device " + name + " of provider native advertises XRC ("
            + answer + "), but this provider has no XRC domain, SRQ and queue pair objects over its XRC bindings "
            + "(ibv_create_srq_ex, ibv_create_qp_ex, ibv_open_qp, ibv_get_srq_num) yet: use the shm provider for XRC");
    }

    @Override
    public DeviceResources resources() {
        return resources.snapshot();
    }

    void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("native device " + name + " is closed");
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        if (openChildren.get() != 0) {
            throw new IllegalStateException("native device " + name + " still has " + openChildren.get()
                + " open protection domains, completion queues or readiness sources: close them first");
        }
        closed = true;
        // no completion queue is open, so no thread waits on one: every waiter is idle
        waiters.close();
        NativeAsyncEvents.shared().unwatch(this);
        if (!ownsContext) {
            return;
        }
        try {
            IbvCalls.closeDevice(context);
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot close native device " + name + ": " + e.getMessage(), e);
        }
    }

    /** The waiters of threads that wait directly on this device's completion channels. */
    WaitingThread.Pool waiters() {
        return waiters;
    }

    @Override
    public String toString() {
        return "NativeDevice{name=" + name + ", linkLayer=" + linkLayer + ", critical=" + critical
            + ", closed=" + closed + ", context=0x" + HexFormat.of().toHexDigits(context.address()) + '}';
    }
}
