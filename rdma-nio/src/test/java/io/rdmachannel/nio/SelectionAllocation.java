package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.WritableByteChannel;
import java.util.function.Consumer;

/**
 * Checks that a steady selection loop (a peer writes one byte, the selection reports the key, the action reads it)
 * allocates nothing on the selecting thread once warm: the per-thread allocation counter is read around each
 * selection only, so the writing side's allocations do not count.
 */
final class SelectionAllocation {
    private static final int WARM_UP = 20_000;
    private static final int MEASURED = 20_000;

    private SelectionAllocation() {
    }

    /**
     * @param selector the selector, with the reading channel registered for OP_READ.
     * @param writer the channel whose peer is registered.
     */
    static void assertNoAllocation(final Selector selector, final WritableByteChannel writer) throws IOException {
        final ByteBuffer out = ByteBuffer.allocateDirect(1);
        final ByteBuffer in = ByteBuffer.allocateDirect(1);
        final Consumer<SelectionKey> action = key -> {
            try {
                in.clear();
                ((ReadableByteChannel) key.channel()).read(in);
            } catch (final IOException ex) {
                throw new UncheckedIOException(ex);
            }
        };
        final com.sun.management.ThreadMXBean threads =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long allocated = 0;
        for (int i = 0; i < WARM_UP + MEASURED; i++) {
            out.clear();
            assertEquals(1, writer.write(out));
            final long before = threads.getCurrentThreadAllocatedBytes();
            final int selected = selector.select(action, 10_000);
            final long after = threads.getCurrentThreadAllocatedBytes();
            assertEquals(1, selected);
            if (i >= WARM_UP) {
                allocated += after - before;
            }
        }
        // a few stray bytes (a lazily grown array, a JIT deoptimisation) are tolerated; one per selection is not
        assertTrue(allocated < MEASURED, "selections allocated " + allocated + " bytes over " + MEASURED);
    }
}
