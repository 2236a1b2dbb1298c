package io.rdmachannel.ffm.internal;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class EpollWaitSetTest {
    @Test
    void shouldTimeOutWithNothingReady() throws Exception {
        try (EpollWaitSet set = new EpollWaitSet(4)) {
            assertEquals(0, set.await(0));
        }
    }

    @Test
    void shouldWakeUpAWaitingThread() throws Exception {
        try (EpollWaitSet set = new EpollWaitSet(4)) {
            CompletableFuture<Integer> waiter = new CompletableFuture<>();
            Thread thread = Thread.ofPlatform().start(() -> {
                try {
                    waiter.complete(set.await(-1));
                } catch (Throwable t) {
                    waiter.completeExceptionally(t);
                }
            });
            set.wakeup();
            assertEquals(1, waiter.get(10, TimeUnit.SECONDS));
            thread.join();
            assertEquals(EpollWaitSet.WAKEUP_TOKEN, set.token(0));
            assertEquals(0, set.await(0), "the wake-up is drained");
        }
    }

    @Test
    void shouldReportReadyDescriptorWithItsToken() throws Exception {
        int fd = LibC.eventfd(0, LibC.EFD_NONBLOCK | LibC.EFD_CLOEXEC);
        try (EpollWaitSet set = new EpollWaitSet(4); Arena arena = Arena.ofConfined()) {
            MemorySegment value = arena.allocate(JAVA_LONG);
            assertEquals(ErrorPolicy.WOULD_BLOCK, LibC.read(fd, value, Long.BYTES), "EAGAIN is a return value");

            set.add(fd, LibC.EPOLLIN, 42L);
            value.set(JAVA_LONG, 0, 7L);
            assertEquals(Long.BYTES, LibC.write(fd, value, Long.BYTES));

            assertEquals(1, set.await(1000));
            assertEquals(42L, set.token(0));
            assertTrue((set.readyEvents(0) & LibC.EPOLLIN) != 0);
            assertEquals(Long.BYTES, LibC.read(fd, value, Long.BYTES));
            assertEquals(7L, value.get(JAVA_LONG, 0));
            set.remove(fd);
        } finally {
            LibC.close(fd);
        }
    }

    @Test
    void shouldSetNonBlocking() throws Exception {
        int fd = LibC.eventfd(0, LibC.EFD_CLOEXEC);
        try {
            assertEquals(0, LibC.fcntl(fd, LibC.F_GETFL, 0) & LibC.O_NONBLOCK);
            LibC.setNonBlocking(fd);
            assertEquals(LibC.O_NONBLOCK, LibC.fcntl(fd, LibC.F_GETFL, 0) & LibC.O_NONBLOCK);
        } finally {
            LibC.close(fd);
        }
    }
}
