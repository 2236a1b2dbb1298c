package io.rdmachannel.channel.spi;

import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.VarHandle;
import java.util.Objects;

import io.rdmachannel.channel.internal.Futex;

/**
 * The words one platform thread waits on at once (a selector waiting for many connections): 32-bit words of shared
 * memory, each with the value it held when the thread decided to wait, plus a word of the set's own that
 * {@link #wake()} bumps. {@link #await} sleeps in the kernel ({@code futex_waitv}) until one of them is woken or
 * differs, so whoever produces the event (a thread of another process included) wakes the waiter directly.
 *
 * <p>Filled by {@link CompletionQueue#addWaiter} and waited on by one thread; only {@link #wake()} may be called from
 * other threads. Made once per waiting thread: filling it and waiting allocate nothing.
 */
public final class WaitSet {
    /** How many words one set holds, its own wake word included. */
    public static final int CAPACITY = Futex.WAITV_MAX;

    private static final VarHandle INT = JAVA_INT.varHandle();
    private static final int ENTRY = Futex.WAITV_ENTRY_BYTES;

    private final MemorySegment entries;
    private final MemorySegment wakeWord;
    private final MemorySegment timeout;
    private final MemorySegment[] words = new MemorySegment[CAPACITY];
    private final long[] offsets = new long[CAPACITY];
    private final int[] expected = new int[CAPACITY];
    private int size;

    /**
     * An empty set.
     *
     * @throws UnsupportedOperationException if {@link #isAvailable()} is false.
     */
    public WaitSet() {
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

    /**
     * Begin a new wait: the set holds its own wake word only, expecting its current value, so a {@link #wake()} from
     * now on ends the next {@link #await}.
     */
    public void clear() {
        // the last wait's words: let go of their memory
        for (int i = 0; i < size; i++) {
            words[i] = null;
        }
        size = 0;
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
        if (size == CAPACITY) {
            return false;
        }
        Futex.putWaitvEntry(entries, (long) size * ENTRY, segment.address() + offset, value);
        words[size] = segment;
        offsets[size] = offset;
        expected[size] = value;
        size++;
        return true;
    }

    /**
     * How many words the set holds, its own included.
     *
     * @return the size, at least 1.
     */
    public int size() {
        return size;
    }

    /**
     * How many more words fit.
     *
     * @return the free places.
     */
    public int remaining() {
        return CAPACITY - size;
    }

    /**
     * Drop the words added since the set had {@code newSize} words.
     *
     * @param newSize the size to go back to, at least 1 and at most {@link #size()}.
     */
    public void truncate(final int newSize) {
        if (newSize < 1 || newSize > size) {
            throw new IllegalArgumentException("cannot truncate a set of " + size + " to " + newSize);
        }
        for (int i = newSize; i < size; i++) {
            words[i] = null;
        }
        size = newSize;
    }

    /**
     * Sleep until a word of the set is woken or differs from its expected value, a {@link #wake()}, the deadline, or a
     * signal. Spurious returns are possible: the caller looks at what it waits for and waits again. Blocks the
     * carrier of a virtual thread: for platform threads.
     *
     * @param deadlineNanos an absolute {@link System#nanoTime()}, or 0 for none.
     */
    public void await(final long deadlineNanos) {
        Futex.awaitAny(entries, size, deadlineNanos, timeout);
    }

    /**
     * Whether a word among those at {@code from} (inclusive) to {@code to} (exclusive) no longer holds its expected
     * value (or its memory is gone): what the thread waited for there may have happened.
     *
     * @param from the first index, as {@link #size()} was before the words were added.
     * @param to the index after the last.
     * @return true if one changed.
     */
    public boolean changed(final int from, final int to) {
        Objects.checkFromToIndex(from, to, size);
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

    /**
     * End the current or next {@link #await} of this set's thread. Safe from any thread.
     */
    public void wake() {
        INT.getAndAdd(wakeWord, 0L, 1);
        Futex.wake(wakeWord);
    }
}
