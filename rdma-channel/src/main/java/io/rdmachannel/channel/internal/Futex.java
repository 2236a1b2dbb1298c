package io.rdmachannel.channel.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.util.Locale;
import java.util.Objects;

/**
 * Linux futexes on shared memory, through libc's {@code syscall(2)}: a thread waits on a 32-bit word of a shared
 * file mapping, and a thread of any process that maps the same file wakes it. The shm provider uses them so that a
 * peer's completion wakes a blocked reader directly, one wake-up, instead of through the device's agent thread.
 *
 * <p>This is the one use of the FFM linker outside {@code native-ffm}: the shm provider is otherwise pure Java, and
 * a futex needs nothing but libc. Without native access for this module ({@code --enable-native-access}), on
 * another OS or architecture, or with {@value #DISABLE_PROP_NAME}{@code =false}, {@link #isAvailable()} is false
 * and the provider keeps its pure-Java wake-up path. The futexes are shared ones (no {@code FUTEX_PRIVATE_FLAG}),
 * since the waker may be another process.
 */
public final class Futex {
    /** System property: {@code false} keeps the shm provider off futexes (the pure-Java wake-up path). */
    public static final String DISABLE_PROP_NAME = "rdmachannel.shm.futex";

    private static final int FUTEX_WAIT = 0;
    private static final int FUTEX_WAKE = 1;
    private static final long NANOS_PER_SECOND = 1_000_000_000L;
    private static final Calls CALLS = Calls.load();
    /** A 16-byte {@code struct timespec} per waiting thread, made once: waiting allocates nothing. */
    private static final ThreadLocal<MemorySegment> TIMEOUT = ThreadLocal.withInitial(
        () -> Arena.ofAuto().allocate(2 * Long.BYTES, Long.BYTES));

    private Futex() {
    }

    /**
     * Whether futexes can be used in this JVM.
     *
     * @return false when the pure-Java path must be used.
     */
    public static boolean isAvailable() {
        return CALLS.syscall != null;
    }

    /**
     * Why futexes cannot be used, for diagnostics.
     *
     * @return the reason, or {@code null} when they can.
     */
    public static String unavailabilityReason() {
        return CALLS.reason;
    }

    /**
     * Wait while the word still holds {@code expected}: until a {@link #wake}, the timeout, or a signal. Spurious
     * returns are possible: the caller re-checks its condition. Blocks the carrier of a virtual thread: call it from
     * platform threads only.
     *
     * @param word the shared memory holding the 32-bit word, 4-byte aligned.
     * @param expected the value the word held when the caller decided to wait.
     * @param timeoutNanos the longest wait, or a negative value for none.
     */
    public static void await(final MemorySegment word, final int expected, final long timeoutNanos) {
        final MemorySegment timeout;
        if (timeoutNanos < 0) {
            timeout = MemorySegment.NULL;
        } else {
            timeout = TIMEOUT.get();
            timeout.set(JAVA_LONG, 0, timeoutNanos / NANOS_PER_SECOND);
            timeout.set(JAVA_LONG, Long.BYTES, timeoutNanos % NANOS_PER_SECOND);
        }
        call(word.address(), FUTEX_WAIT, expected, timeout);
    }

    /**
     * Wake every thread waiting on the word, in any process.
     *
     * @param word the shared memory holding the word.
     */
    public static void wake(final MemorySegment word) {
        wake(word, 0);
    }

    /**
     * Wake every thread waiting on the word at {@code offset} of {@code segment}, in any process; allocates nothing
     * (no slice).
     *
     * @param segment the shared memory holding the word.
     * @param offset the word's offset, 4-byte aligned, inside the segment.
     */
    public static void wake(final MemorySegment segment, final long offset) {
        Objects.checkFromIndexSize(offset, Integer.BYTES, segment.byteSize());
        call(segment.address() + offset, FUTEX_WAKE, Integer.MAX_VALUE, MemorySegment.NULL);
    }

    private static void call(final long word, final int operation, final int value,
        final MemorySegment timeout) {
        try {
            // -1 with EAGAIN (the word changed), EINTR or ETIMEDOUT: the caller re-checks its condition either way
            final long ignored = (long) CALLS.syscall.invokeExact(CALLS.number, word, (long) operation,
                (long) value, timeout.address(), 0L, 0L);
        } catch (final Throwable ex) {
            throw new IllegalStateException("futex(" + (operation == FUTEX_WAIT ? "FUTEX_WAIT" : "FUTEX_WAKE")
                + ") failed", ex);
        }
    }

    /**
     * The downcall, or why there is none.
     */
    private record Calls(MethodHandle syscall, long number, String reason) {
        static Calls load() {
            if ("false".equalsIgnoreCase(System.getProperty(DISABLE_PROP_NAME, "true"))) {
                return new Calls(null, 0, DISABLE_PROP_NAME + "=false");
            }
            if (!System.getProperty("os.name", "").toLowerCase(Locale.ROOT).contains("linux")) {
                return new Calls(null, 0, "not Linux");
            }
            final long number = switch (System.getProperty("os.arch", "")) {
                case "amd64", "x86_64" -> 202;
                case "aarch64" -> 98;
                default -> -1;
            };
            if (number < 0) {
                return new Calls(null, 0, "no futex system call number known for " + System.getProperty("os.arch"));
            }
            if (!Futex.class.getModule().isNativeAccessEnabled()) {
                return new Calls(null, 0, "native access is not enabled for " + Futex.class.getModule());
            }
            try {
                final Linker linker = Linker.nativeLinker();
                // long syscall(long number, ...): every variadic argument passed as a long, as syscall(2) reads them
                final MethodHandle handle = linker.downcallHandle(linker.defaultLookup().find("syscall")
                    .orElseThrow(), FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
                    JAVA_LONG, JAVA_LONG, JAVA_LONG), Linker.Option.firstVariadicArg(1));
                return new Calls(handle, number, null);
            } catch (final RuntimeException ex) {
                return new Calls(null, 0, "cannot link syscall(2): " + ex);
            }
        }
    }
}
