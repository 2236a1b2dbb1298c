package io.rdmachannel.demo.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class JitQuietTest {
    private final AtomicLong clock = new AtomicLong(1_000);
    private final List<Long> compileTimes = new ArrayList<>();
    private int readings;

    /** The compilation time of each reading in turn (the last one repeats); each sleep advances the clock. */
    private long await(final long limitMillis, final Long... times) {
        compileTimes.addAll(List.of(times));
        return JitQuiet.await(() -> compileTimes.get(Math.min(readings++, compileTimes.size() - 1)), clock::get,
            clock::addAndGet, limitMillis);
    }

    @Test
    void shouldEndAfterTwoReadingsInARowWithoutCompiling() {
        assertEquals(2 * JitQuiet.READING_MILLIS, await(10_000, 700L, 700L, 700L));
        assertEquals(3, readings);
    }

    @Test
    void shouldKeepWaitingWhileTheCompilersWork() {
        // 200 ms of compiling in the first interval, 5 (1%) and 0 in the next two: quiet after three readings;
        // 6 ms would not have been quiet
        assertEquals(3 * JitQuiet.READING_MILLIS, await(10_000, 100L, 300L, 305L, 305L));
    }

    @Test
    void shouldStartOverWhenCompilingResumes() {
        // one quiet reading, one busy (50 ms in 500): the count starts over, and two more quiet ones end it
        assertEquals(4 * JitQuiet.READING_MILLIS, await(10_000, 0L, 0L, 50L, 50L, 50L));
    }

    @Test
    void shouldGiveUpAtTheLimit() {
        final Long[] busy = new Long[40];
        for (int i = 0; i < busy.length; i++) {
            busy[i] = i * 100L;
        }
        assertEquals(-1, await(2_000, busy));
        assertEquals(2_000 / JitQuiet.READING_MILLIS + 1, readings);
    }
}
