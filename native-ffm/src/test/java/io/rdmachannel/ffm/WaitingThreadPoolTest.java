package io.rdmachannel.ffm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledOnOs;
import org.junit.jupiter.api.condition.OS;

/**
 * The waiters of direct waits (their eventfds) are reused from wait to wait and closed with their device, whatever
 * happens to the threads that used them: the number of open eventfds follows the threads waiting at once.
 */
@EnabledOnOs(OS.LINUX)
class WaitingThreadPoolTest {

    @Test
    void shouldReuseAWaiterGivenBackInsteadOfOpeningAnother() {
        WaitingThread.Pool pool = new WaitingThread.Pool();
        try {
            WaitingThread first = pool.take();
            WaitingThread second = pool.take();
            assertNotSame(first, second, "two waits at once need two eventfds");
            pool.give(first);
            pool.give(second);
            assertEquals(2, pool.idleCount());

            assertSame(second, pool.take());
            assertSame(first, pool.take());
            assertEquals(0, pool.idleCount());
            pool.give(first);
            pool.give(second);
        } finally {
            pool.close();
        }
    }

    @Test
    void shouldKeepTheDescriptorsFlatWhenManyThreadsWaitOneAfterAnother() throws Exception {
        WaitingThread.Pool pool = new WaitingThread.Pool();
        try {
            // warm: the first waiter opens its eventfd
            pool.give(pool.take());
            long before = openDescriptors();
            for (int i = 0; i < 200; i++) {
                Thread thread = Thread.ofPlatform().start(() -> pool.give(pool.take()));
                thread.join();
            }
            // no garbage collection needed: each finished thread gave its waiter back
            assertTrue(openDescriptors() <= before + 2, "descriptors grew from " + before + " to "
                + openDescriptors());
            assertEquals(1, pool.idleCount());
        } finally {
            pool.close();
        }
    }

    @Test
    void shouldCloseIdleWaitersAndThoseGivenBackAfterTheClose() {
        WaitingThread.Pool pool = new WaitingThread.Pool();
        WaitingThread idle = pool.take();
        WaitingThread busy = pool.take();
        pool.give(idle);

        pool.close();

        assertTrue(idle.isClosed());
        assertFalse(busy.isClosed(), "a waiter in use stays open until its wait ends");
        pool.give(busy);
        assertTrue(busy.isClosed());
        IllegalStateException refused = assertThrows(IllegalStateException.class, pool::take);
        assertEquals("the device's waiters are closed", refused.getMessage());
    }

    private static long openDescriptors() throws IOException {
        try (Stream<Path> descriptors = Files.list(Path.of("/proc/self/fd"))) {
            return descriptors.count();
        }
    }
}
