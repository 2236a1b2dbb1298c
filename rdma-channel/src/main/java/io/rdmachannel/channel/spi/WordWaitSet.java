package io.rdmachannel.channel.spi;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import io.rdmachannel.channel.internal.Futex;

/**
 * A wait set of shared-memory words (the shm provider's completion queues): 32-bit words, each with the value it held
 * when the thread decided to wait, plus a word of the set's own that {@link #wake()} bumps. {@link #await} sleeps in
 * the kernel ({@code futex_waitv}) until one of them is woken or differs, so whoever produces the event (a thread of
 * another process included) wakes the waiter directly.
 */
public final class WordWaitSet extends WaitSet {
    private static final VarHandle INT = JAVA_INT.varHandle();
    private static final int ENTRY = Futex.WAITV_ENTRY_BYTES;

    private final MemorySegment entries;
    private final MemorySegment wakeWord;
    private final MemorySegment timeout;
    private final MemorySegment[] words = new MemorySegment[CAPACITY];
    private final long[] offsets = new long[CAPACITY];
    private final int[] expected = new int[CAPACITY];

    /**
     * An empty set.
     *
     * @throws UnsupportedOperationException if {@link #isAvailable()} is false.
     */
    public WordWaitSet() {
        if (!isAvailable()) {
            throw new UnsupportedOperationException("a thread cannot wait on several words here: "
                + unavailabilityReason());
        }
        // automatic: wake() may run on another thread after the owner let go of the set, so it is never freed under it
        final Arena arena = Arena.ofAuto();
        entries = arena.allocate((long) CAPACITY * ENTRY, Long.BYTES);
        wakeWord = arena.allocate(JAVA_INT);
        timeout = arena.allocate(2 * Long.BYTES, Long.BYTES);
        clear();
    }

    /**
     * Whether sets can be used in this JVM: futexes through native access, and a kernel with {@code futex_waitv}.
     *
     * @return false when a thread can wait on one word at a time only.
     */
    public static boolean isAvailable() {
        return Futex.isWaitvAvailable();
    }

    /**
     * Why sets cannot be used.
     *
     * @return the reason, or {@code null} when they can.
     */
    public static String unavailabilityReason() {
        if (!Futex.isAvailable()) {
            return Futex.unavailabilityReason();
        }
        return isAvailable() ? null : "the kernel has no futex_waitv (Linux 5.16 or later)";
    }

    @Override
    public void clear() {
        // the last wait's words: let go of their memory
        drop(0, size());
        resize(0);
        add(wakeWord, 0, (int) INT.getVolatile(wakeWord, 0L));
    }

    /**
     * Add a word the thread waits on.
     *
     * @param segment the shared memory holding the word.
     * @param offset the word's offset in it, 4-byte aligned.
     * @param value the value the word held when the caller decided to wait: a word that differs ends the wait.
     * @return false if the set is full (nothing was added).
     */
    public boolean add(final MemorySegment segment, final long offset, final int value) {
        Objects.checkFromIndexSize(offset, Integer.BYTES, segment.byteSize());
        final int size = size();
        if (size == CAPACITY) {
            return false;
        }
        Futex.putWaitvEntry(entries, (long) size * ENTRY, segment.address() + offset, value);
        words[size] = segment;
        offsets[size] = offset;
        expected[size] = value;
        resize(size + 1);
        return true;
    }

    @Override
    protected void drop(final int from, final int to) {
        for (int i = from; i < to; i++) {
            words[i] = null;
        }
    }

    @Override
    public void await(final long deadlineNanos) {
        Futex.awaitAny(entries, size(), deadlineNanos, timeout);
    }

    @Override
    public boolean changed(final int from, final int to) {
        Objects.checkFromToIndex(from, to, size());
        for (int i = from; i < to; i++) {
            try {
                if ((int) INT.getVolatile(words[i], offsets[i]) != expected[i]) {
                    return true;
                }
            } catch (final IllegalStateException closed) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void wake() {
        INT.getAndAdd(wakeWord, 0L, 1);
        Futex.wake(wakeWord);
    }
}
