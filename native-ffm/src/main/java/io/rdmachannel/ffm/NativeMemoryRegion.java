package io.rdmachannel.ffm;

import static io.rdmachannel.ffm.layout.IbvResourceLayouts.MR_LKEY;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.MR_RKEY;
import static io.rdmachannel.ffm.layout.IbvResourceLayouts.MR_SIZE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.ffm.verbs.IbvCalls;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * An {@code ibv_mr} registered with {@code ibv_reg_mr_iova2} (iova = address) and exactly the access asked for.
 * An allocated region owns page-aligned memory from its own shared arena: close deregisters, then frees.
 */
final class NativeMemoryRegion implements MemoryRegion {
    private static final long PAGE = 4096;

    private final NativeProtectionDomain domain;
    private final MemorySegment segment;
    private final Arena arena;
    private final MemorySegment mr;
    private final int accessFlags;
    private final int localKey;
    private final int remoteKey;
    private boolean closed;

    private NativeMemoryRegion(NativeProtectionDomain domain, MemorySegment segment, Arena arena, MemorySegment mr,
        int accessFlags) {
        this.domain = domain;
        this.segment = segment;
        this.arena = arena;
        this.mr = mr.reinterpret(MR_SIZE);
        this.accessFlags = accessFlags;
        this.localKey = this.mr.get(JAVA_INT, MR_LKEY);
        this.remoteKey = this.mr.get(JAVA_INT, MR_RKEY);
    }

    static NativeMemoryRegion allocate(NativeProtectionDomain domain, long length, int accessFlags)
        throws IOException {
        Arena arena = Arena.ofShared();
        try {
            long pages = (length + PAGE - 1) / PAGE * PAGE;
            MemorySegment memory = arena.allocate(pages, PAGE).asSlice(0, length);
            MemorySegment mr = IbvCalls.regMrIova2(domain.pd(), memory, length, memory.address(), accessFlags);
            return new NativeMemoryRegion(domain, memory, arena, mr, accessFlags);
        } catch (IOException | RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    static NativeMemoryRegion register(NativeProtectionDomain domain, MemorySegment segment, int accessFlags)
        throws IOException {
        MemorySegment mr = IbvCalls.regMrIova2(domain.pd(), segment, segment.byteSize(), segment.address(),
            accessFlags);
        return new NativeMemoryRegion(domain, segment, null, mr, accessFlags);
    }

    @Override
    public long address() {
        return segment.address();
    }

    @Override
    public long length() {
        return segment.byteSize();
    }

    @Override
    public int localKey() {
        return localKey;
    }

    @Override
    public int remoteKey() {
        return remoteKey;
    }

    @Override
    public int accessFlags() {
        return accessFlags;
    }

    @Override
    public MemorySegment segment() {
        return segment;
    }

    @Override
    public ProtectionDomain protectionDomain() {
        return domain;
    }

    /**
     * Deregister, then free allocated memory. If the device refuses to deregister, the memory is kept (a NIC might
     * still reach it) and the failure is thrown.
     */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        try {
            IbvCalls.deregMr(mr);
        } catch (NativeCallException e) {
            throw new IllegalStateException("cannot deregister memory region lkey=0x" + Integer.toHexString(localKey)
                + ": " + e.getMessage(), e);
        }
        closed = true;
        if (arena != null) {
            arena.close();
        }
        domain.memoryRegionClosed(length());
    }

    @Override
    public String toString() {
        return "NativeMemoryRegion{address=0x" + Long.toHexString(segment.address()) + ", length=" + segment.byteSize()
            + ", lkey=0x" + Integer.toHexString(localKey) + ", rkey=0x" + Integer.toHexString(remoteKey)
            + ", access=" + AccessFlags.toString(accessFlags) + ", allocated=" + (arena != null)
            + ", closed=" + closed + '}';
    }
}
