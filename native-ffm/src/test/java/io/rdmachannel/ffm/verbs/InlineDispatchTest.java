package io.rdmachannel.ffm.verbs;

import static io.rdmachannel.ffm.layout.IbvContextLayouts.CONTEXT_ABI_COMPAT;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_POLL_CQ;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_POST_RECV;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_POST_SEND;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_POST_SRQ_RECV;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.OPS_REQ_NOTIFY_CQ;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_QUERY_PORT;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VCTX_SZ;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VERBS_CONTEXT;
import static io.rdmachannel.ffm.layout.IbvContextLayouts.VERBS_CONTEXT_SIZE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_ACTIVE_MTU;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_SIZE;
import static io.rdmachannel.ffm.layout.IbvDeviceLayouts.PORT_ATTR_STATE;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import io.rdmachannel.ffm.layout.IbvQpLayouts;
import io.rdmachannel.ffm.layout.IbvResourceLayouts;
import io.rdmachannel.ffm.layout.IbvWorkRequestLayouts;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandles;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Proves the inline dispatch without a device: a fake {@code verbs_context} + {@code ibv_context} in native memory
 * whose ops point to upcall stubs, so calling "post_send" through the table reaches Java with the arguments given.
 */
class InlineDispatchTest {
    private static final List<String> CALLS = new ArrayList<>();

    private Arena arena;
    private MemorySegment context;

    @BeforeEach
    void buildFakeProvider() throws Exception {
        arena = Arena.ofConfined();
        MemorySegment verbsContext = arena.allocate(VERBS_CONTEXT_SIZE, 8);
        context = verbsContext.asSlice(VERBS_CONTEXT.offset("context"));
        FunctionDescriptor intPpp = FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS);
        context.set(ADDRESS, OPS_POST_SEND, stub("postSend", intPpp));
        context.set(ADDRESS, OPS_POST_RECV, stub("postRecv", intPpp));
        context.set(ADDRESS, OPS_POST_SRQ_RECV, stub("postSrqRecv", intPpp));
        context.set(ADDRESS, OPS_POLL_CQ, stub("pollCq", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS)));
        context.set(ADDRESS, OPS_REQ_NOTIFY_CQ,
            stub("reqNotifyCq", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT)));
        context.set(JAVA_LONG, CONTEXT_ABI_COMPAT, -1L);
        verbsContext.set(JAVA_LONG, VERBS_CONTEXT.offset("sz"), VERBS_CONTEXT_SIZE);
        verbsContext.set(ADDRESS, VERBS_CONTEXT.offset("query_port"),
            stub("queryPort", FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_BYTE, ADDRESS, JAVA_LONG)));
        CALLS.clear();
    }

    @AfterEach
    void free() {
        arena.close();
    }

    private MemorySegment stub(String name, FunctionDescriptor descriptor) throws ReflectiveOperationException {
        return Linker.nativeLinker().upcallStub(
            MethodHandles.lookup().findStatic(InlineDispatchTest.class, name, descriptor.toMethodType()),
            descriptor, arena);
    }

    private MemorySegment object(long size) {
        MemorySegment object = arena.allocate(size, 8);
        object.set(ADDRESS, 0, context);
        return object;
    }

    @Test
    void shouldReachPostSendAndPostRecvThroughTheOpsTable() {
        MemorySegment qp = object(IbvQpLayouts.QP_SIZE);
        MemorySegment wr = arena.allocate(IbvWorkRequestLayouts.SEND_WR_SIZE);
        MemorySegment recvWr = arena.allocate(IbvWorkRequestLayouts.RECV_WR_SIZE);
        MemorySegment bad = arena.allocate(ADDRESS);
        QueuePairOps ops = QueuePairOps.of(qp, false);

        assertEquals(0, ops.postSend(qp, wr, bad));
        assertEquals(12, ops.postRecv(qp, recvWr, bad));

        assertEquals(List.of(
            "postSend " + qp.address() + " " + wr.address() + " " + bad.address(),
            "postRecv " + qp.address() + " " + recvWr.address() + " " + bad.address()), CALLS);
        assertEquals(wr.address(), bad.get(ADDRESS, 0).address(), "the fake provider set *bad_wr");
    }

    @Test
    void shouldReachPollAndNotifyThroughTheOpsTable() {
        MemorySegment cq = object(IbvResourceLayouts.CQ_SIZE);
        MemorySegment wc = arena.allocate(IbvWorkRequestLayouts.WC_SIZE * 16);
        CompletionQueueOps ops = CompletionQueueOps.of(cq, false);

        assertEquals(15, ops.pollCq(cq, 16, wc));
        assertEquals(0, ops.reqNotifyCq(cq, 1));

        assertEquals(List.of(
            "pollCq " + cq.address() + " 16 " + wc.address(),
            "reqNotifyCq " + cq.address() + " 1"), CALLS);
    }

    @Test
    void shouldReachPostSrqRecvThroughTheOpsTable() {
        MemorySegment srq = object(IbvResourceLayouts.SRQ_SIZE);
        MemorySegment wr = arena.allocate(IbvWorkRequestLayouts.RECV_WR_SIZE);
        MemorySegment bad = arena.allocate(ADDRESS);

        assertEquals(0, SharedReceiveQueueOps.of(srq, false).postSrqRecv(srq, wr, bad));
        assertEquals(List.of("postSrqRecv " + srq.address() + " " + wr.address() + " " + bad.address()), CALLS);
    }

    @Test
    void shouldQueryPortThroughTheVerbsContextWithTheFullLength() throws Exception {
        MemorySegment attr = arena.allocate(PORT_ATTR_SIZE, 8);

        IbvInline.queryPort(context, 1, attr);

        assertEquals(List.of("queryPort " + context.address() + " 1 " + attr.address() + " 52"), CALLS);
        assertEquals(4, attr.get(JAVA_INT, PORT_ATTR_STATE));
        assertEquals(5, attr.get(JAVA_INT, PORT_ATTR_ACTIVE_MTU));
    }

    @Test
    void shouldPortVerbsGetCtxOpChecks() {
        assertEquals(-320, VCTX_QUERY_PORT);
        assertFalse(IbvInline.verbsContextOp(context, VCTX_QUERY_PORT).equals(MemorySegment.NULL));

        MemorySegment sz = MemorySegment.ofAddress(context.address() + VCTX_SZ).reinterpret(Long.BYTES);
        sz.set(JAVA_LONG, 0, 328 + 319);
        assertEquals(MemorySegment.NULL, IbvInline.verbsContextOp(context, VCTX_QUERY_PORT), "sz too small");
        sz.set(JAVA_LONG, 0, VERBS_CONTEXT_SIZE);

        context.set(JAVA_LONG, CONTEXT_ABI_COMPAT, 0L);
        assertEquals(MemorySegment.NULL, IbvInline.verbsContextOp(context, VCTX_QUERY_PORT), "no verbs_context");
    }

    @Test
    void shouldRefuseAMissingOp() {
        context.set(ADDRESS, OPS_POST_SEND, MemorySegment.NULL);
        MemorySegment qp = object(IbvQpLayouts.QP_SIZE);

        IllegalStateException e = assertThrows(IllegalStateException.class, () -> QueuePairOps.of(qp, false));
        assertEquals("the provider has no ops.post_send", e.getMessage());
    }

    @Test
    void shouldLinkCriticalHandlesForEverySignature() throws Throwable {
        // Critical calls must not call back into Java, so they cannot reach the stubs; prove they link and run
        // against a real C function of a compatible shape: int abs(int) ignores the extra arguments on x86-64.
        MemorySegment abs = Linker.nativeLinker().defaultLookup().find("abs").orElseThrow();
        assertEquals(7, (int) IbvInline.INT_PI_CRITICAL_HANDLE.invokeExact(abs, MemorySegment.ofAddress(-7), 0));
        assertEquals(0, (int) IbvInline.INT_PPP_CRITICAL_HANDLE.invokeExact(abs, MemorySegment.NULL,
            MemorySegment.NULL, MemorySegment.NULL));
        assertEquals(3, (int) IbvInline.INT_PIP_CRITICAL_HANDLE.invokeExact(abs, MemorySegment.ofAddress(3), 0,
            MemorySegment.NULL));
    }

    static int postSend(MemorySegment qp, MemorySegment wr, MemorySegment bad) {
        CALLS.add("postSend " + qp.address() + " " + wr.address() + " " + bad.address());
        bad.reinterpret(ADDRESS.byteSize()).set(ADDRESS, 0, wr);
        return 0;
    }

    static int postRecv(MemorySegment qp, MemorySegment wr, MemorySegment bad) {
        CALLS.add("postRecv " + qp.address() + " " + wr.address() + " " + bad.address());
        return 12;
    }

    static int postSrqRecv(MemorySegment srq, MemorySegment wr, MemorySegment bad) {
        CALLS.add("postSrqRecv " + srq.address() + " " + wr.address() + " " + bad.address());
        return 0;
    }

    static int pollCq(MemorySegment cq, int entries, MemorySegment wc) {
        CALLS.add("pollCq " + cq.address() + " " + entries + " " + wc.address());
        return entries - 1;
    }

    static int reqNotifyCq(MemorySegment cq, int solicitedOnly) {
        CALLS.add("reqNotifyCq " + cq.address() + " " + solicitedOnly);
        return 0;
    }

    static int queryPort(MemorySegment context, byte port, MemorySegment attr, long length) {
        CALLS.add("queryPort " + context.address() + " " + port + " " + attr.address() + " " + length);
        MemorySegment portAttr = attr.reinterpret(length);
        portAttr.set(JAVA_INT, PORT_ATTR_STATE, 4);
        portAttr.set(JAVA_INT, PORT_ATTR_ACTIVE_MTU, 5);
        return 0;
    }
}
