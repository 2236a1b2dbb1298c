package io.rdmachannel.ffm;

import io.rdmachannel.channel.IbSocketAddress;
import io.rdmachannel.channel.cm.CmEndpointFactory;
import io.rdmachannel.channel.cm.CmListener;
import io.rdmachannel.channel.cm.ConnectionRequestFilter;
import io.rdmachannel.channel.cm.ConnectionRequest;
import io.rdmachannel.channel.cm.RejectReason;
import io.rdmachannel.channel.cm.Rejection;
import io.rdmachannel.ffm.RdmaCmConnectionManager.CmEvent;
import io.rdmachannel.ffm.cm.RdmaCmCalls;
import io.rdmachannel.ffm.layout.RdmaCmLayouts;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.net.BindException;
import java.net.SocketAddress;
import java.nio.ByteBuffer;

/**
 * A listening {@code rdma_cm_id}: {@code rdma_bind_addr} then {@code rdma_listen}. Its connection requests arrive
 * on the CM's event thread as CONNECT_REQUEST events with a new child id each.
 */
final class RdmaCmListener implements CmListener {
    /** EADDRINUSE on Linux. */
    static final int EADDRINUSE = 98;
    /** EADDRNOTAVAIL on Linux. */
    static final int EADDRNOTAVAIL = 99;
    /** ENODEV on Linux: no RDMA device has the address. */
    static final int ENODEV = 19;
    /**
     * With AF_IB the kernel leaves its 36-byte {@code ib_connect_hdr} in front of the requester's private data.
     */
    private static final int IB_CONNECT_HEADER = 36;

    private final RdmaCmConnectionManager cm;
    private final MemorySegment id;
    private final SocketAddress localAddress;
    private final int backlog;
    private final ConnectionRequestFilter filter;
    private final CmEndpointFactory factory;
    private final boolean ib;
    private int inProgress;
    private volatile boolean closed;

    private RdmaCmListener(RdmaCmConnectionManager cm, MemorySegment id, SocketAddress localAddress, int backlog,
        ConnectionRequestFilter filter, CmEndpointFactory factory) {
        this.cm = cm;
        this.id = id;
        this.localAddress = localAddress;
        this.backlog = backlog;
        this.filter = filter;
        this.factory = factory;
        this.ib = localAddress instanceof IbSocketAddress;
    }

    /** Create, bind and listen (on the event thread). */
    static RdmaCmListener open(RdmaCmConnectionManager cm, SocketAddress address, int backlog,
        ConnectionRequestFilter filter, CmEndpointFactory factory) throws IOException {
        MemorySegment id = cm.createId();
        try {
            try (Arena temporary = Arena.ofConfined()) {
                RdmaCmCalls.bindAddr(id, CmAddresses.toNative(address, temporary));
            } catch (NativeCallException e) {
                throw bindFailure(address, e);
            }
            RdmaCmCalls.listen(id, backlog);
            SocketAddress bound = CmAddresses.withPort(address, RdmaCmCalls.getSrcPort(id));
            RdmaCmListener listener = new RdmaCmListener(cm, id, bound, backlog, filter, factory);
            cm.own(id, listener);
            return listener;
        } catch (IOException | RuntimeException e) {
            cm.destroyId(id);
            throw e;
        }
    }

    static IOException bindFailure(SocketAddress address, NativeCallException e) {
        BindException failure;
        if (e.errno() == EADDRINUSE) {
            failure = new BindException("Address already in use");
        } else if (e.errno() == EADDRNOTAVAIL || e.errno() == ENODEV) {
            failure = new BindException("Cannot assign requested address: no RDMA device has " + address);
        } else {
            return e;
        }
        failure.initCause(e);
        return failure;
    }

    @Override
    public SocketAddress localAddress() {
        return localAddress;
    }

    /** A connection request for this listener (event thread). */
    void onRequest(CmEvent event) {
        MemorySegment child = event.idSegment();
        if (closed) {
            RdmaCmAttempt.reject(cm, child, Rejection.of(RejectReason.CLOSING));
            return;
        }
        if (inProgress >= backlog) {
            RdmaCmAttempt.reject(cm, child, Rejection.of(RejectReason.BACKLOG_FULL));
            return;
        }
        SocketAddress remote = CmAddresses.fromNative(child.asSlice(RdmaCmLayouts.CM_ID_DST_ADDR));
        SocketAddress local = CmAddresses.fromNative(child.asSlice(RdmaCmLayouts.CM_ID_SRC_ADDR));
        byte[] data = event.privateData();
        int offset = ib ? Math.min(IB_CONNECT_HEADER, data.length) : 0;
        ByteBuffer privateData = ByteBuffer.wrap(data, offset, data.length - offset).slice();
        Rejection refused;
        try {
            refused = filter.check(new ConnectionRequest(remote, local, cm.deviceNameOf(child),
                privateData.asReadOnlyBuffer()));
        } catch (RuntimeException e) {
            RdmaCmConnectionManager.LOG.warn("the connection request filter failed", e);
            refused = new Rejection(RejectReason.POLICY, "the listener's filter failed");
        }
        if (refused != null) {
            RdmaCmAttempt.reject(cm, child, refused);
            return;
        }
        inProgress++;
        RdmaCmAttempt.passive(cm, this, child, local, remote, privateData, event.connParam()).accept(factory);
    }

    void requestEnded() {
        inProgress--;
    }

    /** An event for the listening id itself (DEVICE_REMOVAL). */
    void onEvent(CmEvent event) {
        RdmaCmConnectionManager.LOG.warn("listener {}: {}", localAddress, event);
    }

    /** Destroy the id (event thread). */
    void closeNow() {
        if (!closed) {
            closed = true;
            cm.destroyId(id);
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        cm.execute(this::closeNow);
    }

    @Override
    public String toString() {
        return "RdmaCmListener{" + localAddress + ", closed=" + closed + '}';
    }
}
