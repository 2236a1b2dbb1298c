package io.rdmachannel.ffm;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.ffm.verbs.IbvCalls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code native} RDMA provider: real devices through libibverbs, bound with the FFM API. Found by
 * {@link java.util.ServiceLoader}; loads without the native libraries and reports itself unavailable (with
 * {@link RdmaNative#unavailabilityCause()}) where there is no RDMA stack or device.
 *
 * <p>What it offers: devices ({@code ibv_open_device}), protection domains, memory regions (allocated page-aligned
 * and registered, or registered over caller memory), completion queues signalling a readiness source (a completion
 * channel multiplexed with epoll and an eventfd), RC queue pairs moved through their states by hand, and shared
 * receive queues. The data-path verbs ({@code post_send}, {@code post_recv}, {@code poll_cq}, ...) are called through
 * the context's ops table, critical or not as {@code CriticalPolicy} decides per device.
 *
 * <p>Connections: the {@code rdma_cm} connection manager (librdmacm, IP addressing; AF_IB where a port has an
 * InfiniBand link layer); queue pairs can also be connected by exchanging GID and QP number out of band and calling
 * {@link io.rdmachannel.channel.spi.QueuePair#modify}. XRC domains and queue pairs are not offered:
 * {@code openXrcDomain} reports why, with the device's own answer to {@code ibv_open_xrcd}.
 */
public final class NativeProvider implements RdmaProvider {
    /** The provider name. */
    public static final String NAME = "native";

    /**
     * Called by {@link java.util.ServiceLoader}.
     */
    public NativeProvider() {
        // availability is computed once, lazily, by RdmaNative
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean isAvailable() {
        return RdmaNative.isAvailable();
    }

    @Override
    public Throwable unavailabilityCause() {
        return RdmaNative.unavailabilityCause();
    }

    @Override
    public List<String> deviceNames() throws IOException {
        if (!isAvailable()) {
            return List.of();
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment list = IbvCalls.getDeviceList(count);
            try {
                return names(list, count.get(JAVA_INT, 0));
            } finally {
                IbvCalls.freeDeviceList(list);
            }
        }
    }

    private static List<String> names(MemorySegment list, int count) {
        MemorySegment devices = list.reinterpret(ADDRESS.byteSize() * count);
        List<String> names = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            names.add(IbvCalls.getDeviceName(devices.getAtIndex(ADDRESS, i)));
        }
        return names;
    }

    @Override
    public RdmaDevice openDevice(String name) throws IOException {
        ensureAvailability();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment list = IbvCalls.getDeviceList(count);
            try {
                int devices = count.get(JAVA_INT, 0);
                List<String> names = names(list, devices);
                int index = name == null ? 0 : names.indexOf(name);
                if (index < 0 || devices == 0) {
                    throw new IllegalArgumentException("the native provider has no device named '" + name
                        + "'; it offers " + names);
                }
                MemorySegment device = list.reinterpret(ADDRESS.byteSize() * devices).getAtIndex(ADDRESS, index);
                return NativeDevice.open(this, names.get(index), device);
            } finally {
                IbvCalls.freeDeviceList(list);
            }
        }
    }

    /**
     * The {@code rdma_cm} connection manager (librdmacm), the default.
     *
     * @return {@code [rdma_cm]}.
     */
    @Override
    public List<String> connectionManagerNames() {
        return List.of(RdmaCmConnectionManager.NAME);
    }

    /**
     * Open the {@code rdma_cm} connection manager: an event channel and its thread. It wraps the devices librdmacm
     * opens for its ids and releases them when closed.
     *
     * @throws IllegalStateException if the provider is unavailable, with its cause.
     */
    @Override
    public ConnectionManager openConnectionManager(String name) throws IOException {
        if (name != null && !RdmaCmConnectionManager.NAME.equals(name)) {
            throw new IllegalArgumentException("the native provider has no connection manager named '" + name
                + "'; it offers " + RdmaCmConnectionManager.NAME + ", and every provider offers oob");
        }
        ensureAvailability();
        return new RdmaCmConnectionManager(this);
    }

    @Override
    public String toString() {
        return "NativeProvider{available=" + isAvailable() + '}';
    }
}
