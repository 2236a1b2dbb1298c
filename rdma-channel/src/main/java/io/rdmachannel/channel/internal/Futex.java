package io.rdmachannel.channel.internal;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
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
    /** {@code futex_waitv(2)}, Linux 5.16 and later, the same number on every architecture. */
    private static final long SYS_FUTEX_WAITV = 449;
    /** {@code struct futex_waitv}: {@code u64 val, u64 uaddr, u32 flags, u32 reserved}. */
    public static final int WAITV_ENTRY_BYTES = 24;
    /** {@code FUTEX_WAITV_MAX}: the most words one {@code futex_waitv} waits on. */
    public static final int WAITV_MAX = 128;
    /** {@code FUTEX2_SIZE_U32}, without {@code FUTEX2_PRIVATE}: the waker may be another process. */
    private static final int FUTEX2_SIZE_U32 = 2;
    private static final long CLOCK_MONOTONIC = 1;
    private static final int EAGAIN = 11;
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
     * Whether one thread can wait on several words at once ({@link #awaitAny}): futexes are available and the kernel
     * has {@code futex_waitv} (Linux 5.16).
     *
     * @return false when a thread can wait on one word only.
     */
    public static boolean isWaitvAvailable() {
        return CALLS.waitv;
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

    /**
     * Wait until one of the words stops holding its expected value, or a {@link #wake} of one of them, the deadline, or
     * a signal: {@code futex_waitv(2)} over {@code count} entries of {@code waiters}, each a
     * {@code struct futex_waitv} ({@value #WAITV_ENTRY_BYTES} bytes: expected value, address, {@code FUTEX2_SIZE_U32}).
     * Spurious returns are possible: the caller re-checks its conditions. Blocks the carrier of a virtual thread.
     *
     * @param waiters the entries, in memory that stays valid during the call.
     * @param count how many entries, 1 to {@link #WAITV_MAX}.
     * @param deadlineNanos an absolute {@link System#nanoTime()} (which is {@code CLOCK_MONOTONIC} on Linux), or 0 for
     *     none.
     * @param timeout a 16-byte {@code struct timespec} to fill in, of the calling thread.
     * @return the index of the entry that was woken, or -1 (a word differed, the deadline, a signal).
     */
    public static int awaitAny(final MemorySegment waiters, final int count, final long deadlineNanos,
        final MemorySegment timeout) {
        Objects.checkFromIndexSize(0, (long) count * WAITV_ENTRY_BYTES, waiters.byteSize());
        if (count < 1 || count > WAITV_MAX) {
            throw new IllegalArgumentException("futex_waitv takes 1 to " + WAITV_MAX + " words, not " + count);
        }
        long timeoutAddress = 0;
        if (deadlineNanos != 0) {
            timeout.set(JAVA_LONG, 0, Long.divideUnsigned(deadlineNanos, NANOS_PER_SECOND));
            timeout.set(JAVA_LONG, Long.BYTES, Long.remainderUnsigned(deadlineNanos, NANOS_PER_SECOND));
            timeoutAddress = timeout.address();
        }
        try {
            return (int) (long) CALLS.syscall.invokeExact(SYS_FUTEX_WAITV, waiters.address(), (long) count, 0L,
                timeoutAddress, CLOCK_MONOTONIC, 0L);
        } catch (final Throwable ex) {
            throw new IllegalStateException("futex_waitv failed", ex);
        }
    }

    /**
     * Write one {@code struct futex_waitv} for {@link #awaitAny}: wait while the 32-bit word at {@code address} holds
     * {@code value}, shared between processes.
     *
     * @param entries the entries.
     * @param offset the entry's offset, a multiple of {@value #WAITV_ENTRY_BYTES}.
     * @param address the word's address.
     * @param value the value the word held when the caller decided to wait.
     */
    public static void putWaitvEntry(final MemorySegment entries, final long offset, final long address,
        final int value) {
        entries.set(JAVA_LONG, offset, Integer.toUnsignedLong(value));
        entries.set(JAVA_LONG, offset + Long.BYTES, address);
        entries.set(JAVA_INT, offset + 2 * Long.BYTES, FUTEX2_SIZE_U32);
        entries.set(JAVA_INT, offset + 2 * Long.BYTES + Integer.BYTES, 0);
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
    private record Calls(MethodHandle syscall, long number, String reason, boolean waitv) {
        Calls(final MethodHandle syscall, final long number, final String reason) {
            this(syscall, number, reason, false);
        }

        static Calls load() {
            final Calls calls = loadSyscall();
            return calls.syscall == null ? calls
                : new Calls(calls.syscall, calls.number, null, probeWaitv());
        }

        private static Calls loadSyscall() {
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

        /**
         * Whether the kernel has {@code futex_waitv}: one entry whose word differs from its expected value must fail
         * at once with {@code EAGAIN} (an old kernel says {@code ENOSYS}).
         */
        private static boolean probeWaitv() {
            try (Arena arena = Arena.ofConfined()) {
                final Linker linker = Linker.nativeLinker();
                final StructLayout state = Linker.Option.captureStateLayout();
                final MethodHandle handle = linker.downcallHandle(linker.defaultLookup().find("syscall")
                    .orElseThrow(), FunctionDescriptor.of(JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG, JAVA_LONG,
                    JAVA_LONG, JAVA_LONG, JAVA_LONG), Linker.Option.captureCallState("errno"),
                    Linker.Option.firstVariadicArg(1));
                final MemorySegment errno = arena.allocate(state);
                final MemorySegment word = arena.allocate(JAVA_INT);
                word.set(JAVA_INT, 0, 1);
                final MemorySegment entry = arena.allocate(WAITV_ENTRY_BYTES, Long.BYTES);
                putWaitvEntry(entry, 0, word.address(), 0);
                final long result = (long) handle.invokeExact(errno, SYS_FUTEX_WAITV, entry.address(), 1L, 0L, 0L,
                    CLOCK_MONOTONIC, 0L);
                final int code = (int) state.varHandle(MemoryLayout.PathElement.groupElement("errno"))
                    .get(errno, 0L);
                return result == -1 && code == EAGAIN;
            } catch (final Throwable ex) {
                return false;
            }
        }
    }
}
