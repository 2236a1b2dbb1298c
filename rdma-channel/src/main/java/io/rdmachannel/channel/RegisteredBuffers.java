package io.rdmachannel.channel;

import io.rdmachannel.channel.internal.BufferRegistry;

import java.nio.ByteBuffer;

/**
 * Direct buffers the RDMA channels write from without copying.
 *
 * <p>A write normally copies the bytes into the connection's registered send ring and the adapter sends them from
 * there. A buffer from {@link #allocate(int)} (or any slice or duplicate of it) is registered with a device the
 * first time a connection on it writes from the buffer, and from then on the adapter sends straight out of it: one
 * copy less per byte. Such a write returns only when the adapter has finished reading the bytes (the sends
 * completed), so the buffer may be reused at once, as after any write. On the wire nothing changes.
 *
 * <p>Registration pins the memory on real hardware and costs a system call, so allocate these buffers once and reuse
 * them (a pool). {@link #release(ByteBuffer)} deregisters and frees one; no write from it may be in progress then,
 * and neither the buffer nor any view of it may be touched afterwards. Buffers not released are freed when the JVM
 * exits. Reads are unaffected: they copy out of the receive ring into any buffer.
 */
public final class RegisteredBuffers {
    private RegisteredBuffers() {
    }

    /**
     * Allocate a zeroed, page-aligned direct buffer that the RDMA channels write from without copying.
     *
     * @param capacity the capacity in bytes, at least 1.
     * @return the buffer: big-endian like every new ByteBuffer, position 0, limit {@code capacity}.
     * @throws IllegalArgumentException if {@code capacity} is below 1.
     */
    public static ByteBuffer allocate(final int capacity) {
        return BufferRegistry.allocate(capacity);
    }

    /**
     * Deregister and free a buffer from {@link #allocate(int)}: every connection's registration of it is closed, then
     * its memory is freed.
     *
     * @param buffer the buffer, or a view of it (the whole allocation it lies in is released).
     * @throws IllegalArgumentException if the buffer is not a live buffer of {@link #allocate(int)}.
     */
    public static void release(final ByteBuffer buffer) {
        BufferRegistry.release(buffer);
    }

    /**
     * Whether writes from the bytes between a buffer's position and limit go without the copy.
     *
     * @param buffer any buffer.
     * @return true if those bytes lie in a live buffer of {@link #allocate(int)}.
     */
    public static boolean isRegistered(final ByteBuffer buffer) {
        return BufferRegistry.isRegistered(buffer);
    }
}
