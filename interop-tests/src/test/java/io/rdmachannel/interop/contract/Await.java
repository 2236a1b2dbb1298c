package io.rdmachannel.interop.contract;

import java.time.Duration;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Waiting for conditions instead of sleeping: every wait names what it waits for and fails with that name.
 */
final class Await {

    static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(20);

    private static final long MAX_BACKOFF_NANOS = Duration.ofMillis(2).toNanos();
    /** The methods that wait in a system call made through FFM: class name, a dot, method name. */
    private static final Set<String> BLOCKING_DOWNCALLS = Set.of(
        "io.rdmachannel.channel.internal.Futex.call", "io.rdmachannel.channel.internal.Futex.awaitAny",
        "io.rdmachannel.ffm.internal.LibC.poll");

    private Await() {
    }

    /**
     * Waits until {@code condition} holds.
     *
     * @param timeout     how long to wait at most.
     * @param condition   the condition, polled with a short back-off.
     * @param description what is awaited, for the failure message.
     * @throws AssertionError if the condition does not hold in time or the thread is interrupted.
     */
    static void awaitCondition(final Duration timeout, final BooleanSupplier condition,
        final Supplier<String> description) {
        final long deadline = System.nanoTime() + timeout.toNanos();
        long backoff = 1_000;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("timed out after " + timeout + " awaiting " + description.get());
            }
            if (Thread.currentThread().isInterrupted()) {
                throw new AssertionError("interrupted awaiting " + description.get());
            }
            LockSupport.parkNanos(backoff);
            backoff = Math.min(backoff * 2, MAX_BACKOFF_NANOS);
        }
    }

    /**
     * Waits until {@code thread} is blocked inside {@code methodName} of {@code channel}'s class or one of its
     * superclasses: the method is on its stack and the thread is parked, waiting, or in a native call.
     *
     * @param thread     the thread.
     * @param channel    the channel or selector whose implementation class the method belongs to.
     * @param methodName the channel method, for example {@code read}.
     */
    static void awaitBlockedIn(final Thread thread, final Object channel, final String methodName) {
        final Set<String> classNames = new HashSet<>();
        for (Class<?> type = channel.getClass(); type != null; type = type.getSuperclass()) {
            classNames.add(type.getName());
        }
        awaitCondition(DEFAULT_TIMEOUT, () -> isBlockedIn(thread, classNames, methodName),
            () -> thread.getName() + " blocked in " + channel.getClass().getName() + "." + methodName + ", state="
                + thread.getState() + " at " + topFrames(thread, 12));
    }

    /**
     * A short rendering of a thread's innermost frames for failure messages.
     *
     * @param thread the thread.
     * @param depth  how many frames at most.
     * @return the frames, innermost first.
     */
    static String topFrames(final Thread thread, final int depth) {
        return Arrays.stream(thread.getStackTrace()).limit(depth).map(StackTraceElement::toString)
            .collect(Collectors.joining(" <- ", "[", "]"));
    }

    private static boolean isBlockedIn(final Thread thread, final Set<String> classNames, final String methodName) {
        final StackTraceElement[] frames = thread.getStackTrace();
        final boolean inMethod = Arrays.stream(frames)
            .anyMatch(frame -> classNames.contains(frame.getClassName()) && frame.getMethodName().equals(methodName));
        if (!inMethod) {
            return false;
        }
        final Thread.State state = thread.getState();
        return state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING
            || state == Thread.State.BLOCKED || frames[0].isNativeMethod() || isBlockingDowncall(frames[0]);
    }

    /**
     * A thread waiting in a system call made through FFM is RUNNABLE and its innermost visible frame is the Java
     * method that made the downcall (the stub's frames are hidden): the futexes of the shm provider (one word, or a
     * selector's set of words), the poll(2) of the native provider's direct waits.
     */
    private static boolean isBlockingDowncall(final StackTraceElement frame) {
        return BLOCKING_DOWNCALLS.contains(frame.getClassName() + "." + frame.getMethodName());
    }
}
