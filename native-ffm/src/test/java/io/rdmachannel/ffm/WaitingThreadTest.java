package io.rdmachannel.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.ffm.internal.EventFd;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * A direct waiter's eventfd: a wake-up of an earlier wait is forgotten, one sent during a wait is seen, one that
 * races the start of a wait is seen rather than lost, and a wait that nobody woke costs no read of the eventfd.
 * The "channel" here is an eventfd nobody signals (a completion channel needs a device).
 */
@EnabledOnOs(OS.LINUX)
class WaitingThreadTest {
    private final WaitingThread.Pool pool = new WaitingThread.Pool();
    private WaitingThread waiter;
    private EventFd channel;

    @BeforeEach
    void open() throws NativeCallException {
        waiter = pool.take();
        channel = new EventFd();
    }

    @AfterEach
    void close() throws NativeCallException {
        channel.close();
        pool.give(waiter);
        pool.close();
    }

    @Test
    void shouldForgetAWakeUpOfAnEarlierWait() throws NativeCallException {
        waiter.wake();

        waiter.reset();

        assertEquals(0, waiter.await(channel.fd(), 20), "the earlier wait's wake-up was seen again");
    }

    @Test
    void shouldSeeAWakeUpSentAfterTheResetAndForgetItOnceDrained() throws NativeCallException {
        waiter.reset();
        waiter.wake();

        assertEquals(2, waiter.await(channel.fd(), 10_000));
        waiter.drain();
        assertEquals(0, waiter.await(channel.fd(), 20));
    }

    @Test
    void shouldSeeTheChannelReadable() throws NativeCallException {
        waiter.reset();
        channel.signal();

        assertEquals(1, waiter.await(channel.fd(), 10_000));
    }

    @Test
    void shouldNotReadTheEventfdToResetAWaiterNobodyWoke() throws IOException, NativeCallException {
        waiter.wake();
        waiter.reset();
        final long before = readSystemCalls();

        for (int i = 0; i < 1000; i++) {
            waiter.reset();
        }

        // every reset read the eventfd before (1000 reads); other threads of this JVM read a little meanwhile
        final long reads = readSystemCalls() - before;
        assertTrue(reads < 200, () -> reads + " read system calls for 1000 resets of a waiter nobody woke");
    }

    /** This process's read system calls so far ({@code syscr} of {@code /proc/self/io}). */
    private static long readSystemCalls() throws IOException {
        for (final String line : Files.readAllLines(Path.of("/proc/self/io"))) {
            if (line.startsWith("syscr:")) {
                return Long.parseLong(line.substring("syscr:".length()).trim());
            }
        }
        throw new IOException("/proc/self/io has no syscr");
    }
}
