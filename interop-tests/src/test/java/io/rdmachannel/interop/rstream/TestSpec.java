package io.rdmachannel.interop.rstream;

/**
 * One rstream test: per iteration the client sends {@code count} messages of {@code size} bytes and the server
 * sends as many back.
 *
 * @param name       the name printed in the first column, e.g. {@code 64_lat}, {@code 1m_bw} or {@code custom}.
 * @param size       the transfer size in bytes.
 * @param count      the transfers per iteration and direction.
 * @param iterations the iterations.
 */
record TestSpec(String name, int size, int count, int iterations) {

    TestSpec {
        if (size < 1 || count < 1 || iterations < 1) {
            throw new IllegalArgumentException("size, count and iterations must be at least 1: size=" + size
                + ", count=" + count + ", iterations=" + iterations);
        }
    }

    /**
     * @return the bytes of the timed loop in both directions, as rstream prints them in the total column.
     */
    long totalBytes() {
        return (long) iterations * count * size * 2;
    }
}
