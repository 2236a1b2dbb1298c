package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The memory one connection registers on its device: the send memory (send ring, inline stage, control slots) with
 * its local-only registration, the receive ring and the target SGL the peer writes, and in message mode the message
 * buffers. Allocated together, released together in reverse order, and reused together through the device context's
 * {@link ConnectionMemoryPool}.
 */
final class ConnectionMemory implements AutoCloseable {
    private static final int PAGE = 4096;

    /**
     * The sizes a connection needs; memory is reused only by a connection of the same shape.
     *
     * @param sendBytes    the send memory: ring, inline stage and control slots.
     * @param receiveBytes the receive ring.
     * @param targetBytes  the target SGL.
     * @param messageBytes the message buffers, 0 unless in message mode.
     */
    record Shape(long sendBytes, long receiveBytes, long targetBytes, long messageBytes) {
    }

    final Shape shape;
    final Arena sendArena;
    final MemorySegment sendMemory;
    final MemoryRegion sendRegion;
    final MemoryRegion receiveRegion;
    final MemoryRegion targetRegion;
    final MemoryRegion messageRegion;

    private ConnectionMemory(final Shape shape, final Arena sendArena, final MemorySegment sendMemory,
        final MemoryRegion sendRegion, final MemoryRegion receiveRegion, final MemoryRegion targetRegion,
        final MemoryRegion messageRegion) {
        this.shape = shape;
        this.sendArena = sendArena;
        this.sendMemory = sendMemory;
        this.sendRegion = sendRegion;
        this.receiveRegion = receiveRegion;
        this.targetRegion = targetRegion;
        this.messageRegion = messageRegion;
    }

    /**
     * Allocate and register a connection's memory on {@code domain}; on failure release what was made and rethrow.
     */
    static ConnectionMemory allocate(final ProtectionDomain domain, final Shape shape) throws IOException {
        final Arena sendArena = Arena.ofShared();
        MemoryRegion sendRegion = null;
        MemoryRegion receiveRegion = null;
        MemoryRegion targetRegion = null;
        try {
            final MemorySegment sendMemory = sendArena.allocate(shape.sendBytes(), PAGE);
            sendRegion = domain.register(sendMemory, 0);
            receiveRegion = domain.allocate(shape.receiveBytes(), AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            targetRegion = domain.allocate(shape.targetBytes(), AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
            final MemoryRegion messageRegion = shape.messageBytes() > 0
                ? domain.allocate(shape.messageBytes(), AccessFlags.LOCAL_WRITE) : null;
            return new ConnectionMemory(shape, sendArena, sendMemory, sendRegion, receiveRegion, targetRegion,
                messageRegion);
        } catch (final IOException | RuntimeException ex) {
            final RuntimeException failure = closeAll(targetRegion, receiveRegion, sendRegion, sendArena);
            if (failure != null) {
                ex.addSuppressed(failure);
            }
            throw ex;
        }
    }

    /**
     * Zero what a peer wrote, so that nothing the last peer wrote can reach the next connection: the receive ring (a
     * peer may write anywhere in it, and a hostile next peer could announce bytes it did not write), the target SGL
     * and the message buffers. The send memory is left as it is (zeroing it was half of the cost, a measurable part of
     * a short connection's): only this process writes it, every request sends bytes written for it just before, and
     * its registration allows no remote access.
     */
    void clear() {
        receiveRegion.segment().fill((byte) 0);
        targetRegion.segment().fill((byte) 0);
        if (messageRegion != null) {
            messageRegion.segment().fill((byte) 0);
        }
    }

    /**
     * Deregister and free, in reverse order of creation; every step runs, the first failure is rethrown with the
     * others suppressed.
     */
    @Override
    public void close() {
        close(false);
    }

    /**
     * As {@link #close()}, without waiting for peer accesses under way ({@link MemoryRegion#abandon()}): for memory
     * a peer that died in an access may still be inside of.
     */
    void abandon() {
        close(true);
    }

    private void close(final boolean abandon) {
        final RuntimeException failure = closeAll(closing(messageRegion, abandon), closing(targetRegion, abandon),
            closing(receiveRegion, abandon), closing(sendRegion, abandon), sendArena);
        if (failure != null) {
            throw failure;
        }
    }

    private static AutoCloseable closing(final MemoryRegion region, final boolean abandon) {
        return region == null || !abandon ? region : region::abandon;
    }

    private static RuntimeException closeAll(final AutoCloseable... resources) {
        RuntimeException failure = null;
        for (final AutoCloseable resource : resources) {
            failure = Closing.close(resource, failure);
        }
        return failure;
    }

    @Override
    public String toString() {
        return "ConnectionMemory" + shape;
    }
}
