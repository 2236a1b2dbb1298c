package io.rdmachannel.ffm.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.rdmachannel.ffm.NativeCallException;
import java.lang.foreign.MemorySegment;

import org.junit.jupiter.api.Test;

class ErrnoTest {
    @Test
    void shouldCaptureErrnoOfFailedLibcCall() {
        NativeCallException e = assertThrows(NativeCallException.class, () -> LibC.fcntl(-1, LibC.F_GETFL, 0));

        assertEquals("fcntl(..) failed with error(9): Bad file descriptor", e.getMessage());
        assertEquals("fcntl", e.function());
        assertEquals(Errno.EBADF, e.errno());
    }

    @Test
    void shouldDescribeErrors() {
        assertEquals("Cannot allocate memory", Errno.strerror(Errno.ENOMEM));
        assertEquals("ibv_reg_mr(..) failed with error(12): Cannot allocate memory",
            Errno.exception("ibv_reg_mr", Errno.ENOMEM).getMessage());
    }

    @Test
    void shouldMapAddressInfoCodes() {
        NativeCallException e = assertThrows(NativeCallException.class,
            () -> ErrorPolicy.ADDRINFO_CODE.check("rdma_getaddrinfo", Errno.EAI_NONAME, Errno.callState()));

        assertEquals("rdma_getaddrinfo(..) failed with error(-2): Name or service not known", e.getMessage());
        assertEquals(Errno.EAI_NONAME, e.addressInfoError());
        assertEquals(0, e.errno());
    }

    @Test
    void shouldReturnErrnoValuesDirectly() throws Exception {
        assertEquals(0, ErrorPolicy.RETURNS_ERRNO.check("ibv_modify_qp", 0, null));
        NativeCallException e = assertThrows(NativeCallException.class,
            () -> ErrorPolicy.RETURNS_ERRNO.check("ibv_modify_qp", Errno.EINVAL, null));
        assertEquals("ibv_modify_qp(..) failed with error(22): Invalid argument", e.getMessage());
        assertEquals(ErrorPolicy.WOULD_BLOCK,
            ErrorPolicy.RETURNS_ERRNO.checkNonBlocking("ibv_post_send", Errno.EAGAIN, null));
    }

    @Test
    void shouldReportNullPointerFailures() {
        NativeCallException e = assertThrows(NativeCallException.class,
            () -> ErrorPolicy.NULL_SETS_ERRNO.check("ibv_open_device", MemorySegment.NULL.address(), failedState()));
        assertEquals("ibv_open_device", e.function());
        assertEquals(Errno.EBADF, e.errno());
    }

    private static MemorySegment failedState() {
        try {
            LibC.fcntl(-1, LibC.F_GETFL, 0);
        } catch (NativeCallException expected) {
            return Errno.callState();
        }
        throw new AssertionError("fcntl(-1) succeeded");
    }
}
