package io.rdmachannel.demo.bench;

import org.junit.jupiter.api.Test;

import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class PercentilesTest {
    @Test
    void shouldTakeTheNearestRank() {
        final long[] thousand = LongStream.rangeClosed(1, 1000).toArray();

        assertEquals(500, Percentiles.valueAt(thousand, Percentiles.P50));
        assertEquals(990, Percentiles.valueAt(thousand, Percentiles.P99));
        assertEquals(999, Percentiles.valueAt(thousand, Percentiles.P999));
        assertEquals(1000, Percentiles.valueAt(thousand, 1000));
        assertEquals(1, Percentiles.valueAt(thousand, 1));
    }

    @Test
    void shouldRoundTheRankUp() {
        final long[] ten = LongStream.rangeClosed(11, 20).toArray();

        assertEquals(15, Percentiles.valueAt(ten, Percentiles.P50));
        assertEquals(20, Percentiles.valueAt(ten, Percentiles.P99));
        assertEquals(20, Percentiles.valueAt(ten, Percentiles.P999));
        assertEquals(11, Percentiles.valueAt(ten, 1));
    }

    @Test
    void shouldTakeTheOnlyValueOfOne() {
        final long[] one = {42};

        assertEquals(42, Percentiles.valueAt(one, Percentiles.P50));
        assertEquals(42, Percentiles.valueAt(one, Percentiles.P999));
    }

    @Test
    void shouldFindTheTailOfALargeSample() {
        final long[] sample = LongStream.range(0, 20_000).map(i -> i * 10).toArray();

        assertEquals(99_990, Percentiles.valueAt(sample, Percentiles.P50));
        assertEquals(197_990, Percentiles.valueAt(sample, Percentiles.P99));
        assertEquals(199_790, Percentiles.valueAt(sample, Percentiles.P999));
    }

    @Test
    void shouldRejectAnEmptySampleOrABadShare() {
        assertEquals("no values: sorted.length=0", assertThrows(IllegalArgumentException.class,
            () -> Percentiles.valueAt(new long[0], Percentiles.P50)).getMessage());
        assertEquals("perMille=0 is not in 1..1000", assertThrows(IllegalArgumentException.class,
            () -> Percentiles.valueAt(new long[] {1}, 0)).getMessage());
        assertEquals("perMille=1001 is not in 1..1000", assertThrows(IllegalArgumentException.class,
            () -> Percentiles.valueAt(new long[] {1}, 1001)).getMessage());
    }
}
