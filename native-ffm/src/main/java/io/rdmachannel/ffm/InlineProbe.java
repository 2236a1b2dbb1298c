package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_INLINE_DATA;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_RECV_SGE;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_RECV_WR;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_SEND_SGE;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.CAP_MAX_SEND_WR;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.IBV_QP_INIT_ATTR;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_CAP;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_QP_TYPE;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_RECV_CQ;
import static io.rdmachannel.ffm.layout.IbvQpLayouts.QP_INIT_ATTR_SEND_CQ;
import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.ffm.verbs.IbvCalls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * Finds the inline limit of a device, which {@code ibv_query_device} does not report: a binary search over
 * {@code max_inline_data} with throw-away RC queue pairs of depth 1 on a throw-away protection domain and completion
 * queue.
 */
final class InlineProbe {
    private InlineProbe() {
    }

    static int maxInlineData(MemorySegment context) throws IOException {
        MemorySegment pd = IbvCalls.allocPd(context);
        try {
            MemorySegment cq = IbvCalls.createCq(context, 1, MemorySegment.NULL, MemorySegment.NULL, 0);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment init = arena.allocate(IBV_QP_INIT_ATTR.layout());
                int good = 0;
                int bad = NativeDevice.INLINE_PROBE_LIMIT + 1;
                if (!accepts(pd, cq, init, 0)) {
                    return 0;
                }
                while (bad - good > 1) {
                    int middle = (good + bad) >>> 1;
                    if (accepts(pd, cq, init, middle)) {
                        good = middle;
                    } else {
                        bad = middle;
                    }
                }
                return good;
            } finally {
                IbvCalls.destroyCq(cq);
            }
        } finally {
            IbvCalls.deallocPd(pd);
        }
    }

    private static boolean accepts(MemorySegment pd, MemorySegment cq, MemorySegment init, int inline)
        throws NativeCallException {
        init.fill((byte) 0);
        init.set(ADDRESS, QP_INIT_ATTR_SEND_CQ, cq);
        init.set(ADDRESS, QP_INIT_ATTR_RECV_CQ, cq);
        init.set(JAVA_INT, QP_INIT_ATTR_CAP + CAP_MAX_SEND_WR, 1);
        init.set(JAVA_INT, QP_INIT_ATTR_CAP + CAP_MAX_RECV_WR, 1);
        init.set(JAVA_INT, QP_INIT_ATTR_CAP + CAP_MAX_SEND_SGE, 1);
        init.set(JAVA_INT, QP_INIT_ATTR_CAP + CAP_MAX_RECV_SGE, 1);
        init.set(JAVA_INT, QP_INIT_ATTR_CAP + CAP_MAX_INLINE_DATA, inline);
        init.set(JAVA_INT, QP_INIT_ATTR_QP_TYPE, VerbsConstants.IBV_QPT_RC);
        MemorySegment qp;
        try {
            qp = IbvCalls.createQp(pd, init);
        } catch (NativeCallException e) {
            return false;
        }
        IbvCalls.destroyQp(qp);
        return true;
    }
}
