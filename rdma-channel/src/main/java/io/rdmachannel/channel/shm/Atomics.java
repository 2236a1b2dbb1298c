package io.rdmachannel.channel.shm;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Ordered and atomic access to shared memory. Every process of the host maps the same pages, so these accesses
 * order between processes as they do between threads. Byte order is the host's: shared memory never leaves it.
 */
final class Atomics {
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG.withOrder(ByteOrder.nativeOrder());
    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT.withOrder(ByteOrder.nativeOrder());

    private static final VarHandle LONG_HANDLE = LONG.varHandle();
    private static final VarHandle INT_HANDLE = INT.varHandle();

    private Atomics() {
    }

    static long getLongAcquire(final MemorySegment segment, final long offset) {
        return (long) LONG_HANDLE.getAcquire(segment, offset);
    }

    static long getLongVolatile(final MemorySegment segment, final long offset) {
        return (long) LONG_HANDLE.getVolatile(segment, offset);
    }

    static void setLongRelease(final MemorySegment segment, final long offset, final long value) {
        LONG_HANDLE.setRelease(segment, offset, value);
    }

    static void setLongVolatile(final MemorySegment segment, final long offset, final long value) {
        LONG_HANDLE.setVolatile(segment, offset, value);
    }

    static boolean compareAndSetLong(final MemorySegment segment, final long offset, final long expected,
        final long value) {
        return LONG_HANDLE.compareAndSet(segment, offset, expected, value);
    }

    static long getAndBitwiseOrLong(final MemorySegment segment, final long offset, final long bits) {
        return (long) LONG_HANDLE.getAndBitwiseOr(segment, offset, bits);
    }

    static long getAndAddLong(final MemorySegment segment, final long offset, final long delta) {
        return (long) LONG_HANDLE.getAndAdd(segment, offset, delta);
    }

    static int getIntAcquire(final MemorySegment segment, final long offset) {
        return (int) INT_HANDLE.getAcquire(segment, offset);
    }

    static int getIntVolatile(final MemorySegment segment, final long offset) {
        return (int) INT_HANDLE.getVolatile(segment, offset);
    }

    static void setIntRelease(final MemorySegment segment, final long offset, final int value) {
        INT_HANDLE.setRelease(segment, offset, value);
    }

    static void setIntVolatile(final MemorySegment segment, final long offset, final int value) {
        INT_HANDLE.setVolatile(segment, offset, value);
    }

    static boolean compareAndSetInt(final MemorySegment segment, final long offset, final int expected,
        final int value) {
        return INT_HANDLE.compareAndSet(segment, offset, expected, value);
    }

    static int getAndBitwiseOrInt(final MemorySegment segment, final long offset, final int bits) {
        return (int) INT_HANDLE.getAndBitwiseOr(segment, offset, bits);
    }

    static int getAndBitwiseAndInt(final MemorySegment segment, final long offset, final int bits) {
        return (int) INT_HANDLE.getAndBitwiseAnd(segment, offset, bits);
    }

    static int getAndAddInt(final MemorySegment segment, final long offset, final int delta) {
        return (int) INT_HANDLE.getAndAdd(segment, offset, delta);
    }

    static int getAndSetInt(final MemorySegment segment, final long offset, final int value) {
        return (int) INT_HANDLE.getAndSet(segment, offset, value);
    }
}
