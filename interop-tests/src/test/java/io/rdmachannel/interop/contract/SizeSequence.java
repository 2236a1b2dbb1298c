package io.rdmachannel.interop.contract;

import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * The sizes of successive reads or writes.
 */
interface SizeSequence {

    /**
     * The next size.
     *
     * @return the size, or -1 when the sequence is exhausted.
     */
    int next();

    /**
     * Fixed sizes, one after the other (0 means a zero-length operation).
     *
     * @param sizes the sizes.
     * @return the sequence.
     */
    static SizeSequence of(final int... sizes) {
        final int[] copy = sizes.clone();
        return new SizeSequence() {
            private int index;

            @Override
            public int next() {
                return index < copy.length ? copy[index++] : -1;
            }

            @Override
            public String toString() {
                return "sizes" + Arrays.toString(copy) + "@" + index;
            }
        };
    }

    /**
     * Uniformly random sizes in {@code [min, max]} that add up to exactly {@code total}.
     *
     * @param seed  the seed.
     * @param min   the smallest size.
     * @param max   the largest size.
     * @param total the sum of all sizes.
     * @return the sequence.
     */
    static SizeSequence random(final long seed, final int min, final int max, final long total) {
        final SplittableRandom random = new SplittableRandom(seed);
        return new SizeSequence() {
            private long left = total;

            @Override
            public int next() {
                if (left == 0) {
                    return -1;
                }
                final int size = (int) Math.min(left, random.nextInt(min, max + 1));
                left -= size;
                return size;
            }

            @Override
            public String toString() {
                return "random(seed=" + seed + ", " + min + ".." + max + ", left=" + left + ")";
            }
        };
    }

    /**
     * Uniformly random sizes in {@code [min, max]}, never exhausted.
     *
     * @param seed the seed.
     * @param min  the smallest size.
     * @param max  the largest size.
     * @return the sequence.
     */
    static SizeSequence random(final long seed, final int min, final int max) {
        return random(seed, min, max, Long.MAX_VALUE);
    }
}
