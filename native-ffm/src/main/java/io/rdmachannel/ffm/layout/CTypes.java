package io.rdmachannel.ffm.layout;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

import io.rdmachannel.ffm.internal.Platform;
import java.lang.foreign.AddressLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.SequenceLayout;
import java.lang.foreign.ValueLayout;

/**
 * Named member layouts for the C types the structs use (x86-64 LP64). Unsigned C types map to the Java type of the
 * same width; readers mask as needed.
 */
final class CTypes {
    private CTypes() {
    }

    static AddressLayout pointer(String name) {
        return ADDRESS.withName(name);
    }

    static ValueLayout.OfLong u64(String name) {
        return JAVA_LONG.withName(name);
    }

    static ValueLayout.OfInt u32(String name) {
        return JAVA_INT.withName(name);
    }

    static ValueLayout.OfShort u16(String name) {
        return JAVA_SHORT.withName(name);
    }

    static ValueLayout.OfByte u8(String name) {
        return JAVA_BYTE.withName(name);
    }

    static SequenceLayout chars(String name, long length) {
        return MemoryLayout.sequenceLayout(length, JAVA_BYTE).withName(name);
    }

    /** An opaque member of {@code size} bytes aligned to 8, e.g. {@code struct sockaddr_storage}. */
    static SequenceLayout opaque8(String name, long size) {
        return MemoryLayout.sequenceLayout(size / Long.BYTES, JAVA_LONG).withName(name);
    }

    static SequenceLayout mutex(String name) {
        return opaque8(name, Platform.PTHREAD_MUTEX_SIZE);
    }

    static SequenceLayout cond(String name) {
        return opaque8(name, Platform.PTHREAD_COND_SIZE);
    }
}
