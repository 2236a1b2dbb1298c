package io.rdmachannel.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

class RdmaNativeTest {
    private static final List<String> BINDING_CLASSES = List.of(
        "io.rdmachannel.ffm.RdmaNative",
        "io.rdmachannel.ffm.verbs.IbvCalls",
        "io.rdmachannel.ffm.verbs.IbvInline",
        "io.rdmachannel.ffm.verbs.QueuePairOps",
        "io.rdmachannel.ffm.cm.RdmaCmCalls",
        "io.rdmachannel.ffm.internal.NativeLibrary",
        "io.rdmachannel.ffm.internal.LibC");

    @Test
    void shouldLoadEveryBindingClass() throws Exception {
        for (String name : BINDING_CLASSES) {
            Class.forName(name, true, getClass().getClassLoader());
        }
    }

    @Test
    void shouldComputeAvailabilityOnce() {
        assertSame(RdmaNative.unavailabilityCause(), RdmaNative.unavailabilityCause());
        assertEquals(RdmaNative.unavailabilityCause() == null, RdmaNative.isAvailable());
    }

    @Test
    void shouldReportWhyUnavailableWithoutDevices() {
        assumeFalse(Files.isDirectory(Path.of("/sys/class/infiniband"))
            && RdmaNative.isAvailable(), "this machine has RDMA devices");

        assertFalse(RdmaNative.isAvailable());
        Throwable cause = RdmaNative.unavailabilityCause();
        assertNotNull(cause);
        String message = cause.getMessage();
        assertTrue(message.startsWith("no RDMA subsystem in the kernel (ibv_get_device_list(..) failed with error(38)")
            || message.startsWith("no RDMA devices found")
            || message.contains("cannot be loaded")
            || message.startsWith("unexpected ABI"), message);

        UnsatisfiedLinkError error = assertThrows(UnsatisfiedLinkError.class, RdmaNative::ensureAvailability);
        assertSame(cause, error.getCause());
        assertTrue(error.getMessage().startsWith("native RDMA is not available: "), error.getMessage());
    }

    @Test
    void shouldFormatNativeCallException() {
        NativeCallException e = new NativeCallException("ibv_reg_mr", 12, "Cannot allocate memory");

        assertEquals("ibv_reg_mr(..) failed with error(12): Cannot allocate memory", e.getMessage());
        assertEquals("ibv_reg_mr", e.function());
        assertEquals(12, e.errno());
        assertEquals(0, e.addressInfoError());
    }
}
