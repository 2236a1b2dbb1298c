package io.rdmachannel.ffm;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.ffm.cm.RdmaCmCalls;
import io.rdmachannel.ffm.internal.Errno;
import io.rdmachannel.ffm.internal.NativeLibrary;
import io.rdmachannel.ffm.internal.Platform;
import io.rdmachannel.ffm.verbs.IbvCalls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * Whether real RDMA can be used here, computed once on first use: the platform ABI is the one the layouts were
 * verified for, libibverbs and librdmacm load, every symbol the bindings link is present, the kernel has the RDMA
 * subsystem and at least one device exists. This class, and every binding class, loads without the libraries.
 */
public final class RdmaNative {
    private RdmaNative() {
    }

    private static final class Holder {
        static final Throwable CAUSE = computeUnavailabilityCause();
    }

    /**
     * Whether the native provider can open devices.
     *
     * @return true if {@link #unavailabilityCause()} is {@code null}.
     */
    public static boolean isAvailable() {
        return Holder.CAUSE == null;
    }

    /**
     * Why the native provider is unavailable.
     *
     * @return the cause, or {@code null} when available.
     */
    public static Throwable unavailabilityCause() {
        return Holder.CAUSE;
    }

    /**
     * Throw if unavailable.
     *
     * @throws UnsatisfiedLinkError with the {@link #unavailabilityCause()} as cause.
     */
    public static void ensureAvailability() {
        if (Holder.CAUSE != null) {
            throw (UnsatisfiedLinkError) new UnsatisfiedLinkError("native RDMA is not available: "
                + Holder.CAUSE.getMessage()).initCause(Holder.CAUSE);
        }
    }

    private static Throwable computeUnavailabilityCause() {
        try {
            String abiProblem = Platform.abiProblem();
            if (abiProblem != null) {
                return new UnsupportedOperationException(abiProblem);
            }
            for (NativeLibrary library : List.of(NativeLibrary.IBVERBS, NativeLibrary.RDMACM)) {
                if (library.loadFailure() != null) {
                    return library.loadFailure();
                }
            }
            forceLinking();
            List<String> missing = new ArrayList<>();
            for (NativeLibrary library : NativeLibrary.values()) {
                library.missingSymbols().forEach(name -> missing.add(name + " (" + library.soname() + ")"));
            }
            if (!missing.isEmpty()) {
                return new UnsatisfiedLinkError("unexpected ABI: symbols not found: " + String.join(", ", missing));
            }
            return probeDevices();
        } catch (Throwable t) {
            return t;
        }
    }

    private static void forceLinking() {
        // Initialising the call classes looks up every symbol they link; missing ones are recorded.
        IbvCalls.wcStatusStr(0);
        RdmaCmCalls.eventStr(0);
    }

    private static Throwable probeDevices() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment count = arena.allocate(JAVA_INT);
            MemorySegment list;
            try {
                list = IbvCalls.getDeviceList(count);
            } catch (NativeCallException e) {
                if (e.errno() == Errno.ENOSYS) {
                    return new IOException("no RDMA subsystem in the kernel (" + e.getMessage() + ")", e);
                }
                return e;
            }
            int devices = count.get(JAVA_INT, 0);
            IbvCalls.freeDeviceList(list);
            return devices > 0 ? null : new IOException("no RDMA devices found (ibv_get_device_list returned 0)");
        }
    }
}
