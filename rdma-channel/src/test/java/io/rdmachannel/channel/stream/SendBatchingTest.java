package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A writer reaps its send completions in batches, as rsockets does: a write polls the send completion queue only once
 * the free send slots ran below half (or it runs short), not once or twice per message. Its slots, as the connection
 * describes them, show it: they go down by one per small write until the half, then come back in one poll. No write
 * stalls on completions it did not reap, and every byte arrives in order.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SendBatchingTest {
    private static final Pattern SEND_SLOTS = Pattern.compile("sendSlots=(\\d+)");
    private static final Pattern SEND_COMPLETIONS = Pattern.compile("sendCompletions=(\\d+)");
    private static final int MESSAGE = 64;

    @RegisterExtension
    final StreamPairFixture pair = new StreamPairFixture();

    @Test
    void shouldReapSendCompletionsOnlyOnceHalfTheSlotsAreUsed() throws IOException {
        pair.connect(new StreamOptions().sendQueueSize(40));
        final int slots = sendSlots();
        final int half = slots / 2;
        assertTrue(half >= 4, pair::describe);
        int written = 0;
        for (int i = 0; i < half; i++) {
            write(written++);
            assertEquals(slots - i - 1, sendSlots(), () -> "no poll before the half: " + pair.describe());
        }
        // at the half exactly: still no poll; below it, the next write reaps all and takes one slot
        write(written++);
        assertEquals(slots - half - 1, sendSlots(), pair::describe);
        write(written++);
        assertEquals(slots - 1, sendSlots(), () -> "reaped in one poll: " + pair.describe());

        // many more than the slots, one write each: none returns short
        for (int i = 0; i < 5 * slots; i++) {
            write(written++);
        }
        assertReceived(written);
    }

    /**
     * Outside message mode, DATA messages that leave the slots above the half are posted unsignalled: the one that
     * crosses it is signalled, and its one completion, polled by the next write, brings back every slot.
     */
    @Test
    void shouldSignalOnlyTheMessageThatCrossesTheHalf() throws IOException {
        pair.connect(new StreamOptions().sendQueueSize(40));
        final int slots = sendSlots();
        final int half = slots / 2;
        int written = 0;
        for (int i = 0; i <= half + 1; i++) {
            write(written++);
        }
        assertEquals(slots - 1, sendSlots(), () -> "every slot back but the last write's: " + pair.describe());
        // the signalled message's completion, and that of the first grant of credits this side sent at establishment
        assertEquals(2, sendCompletions(), () -> "one completion for " + (half + 1) + " messages: " + pair.describe());
        for (int i = 0; i < 10 * slots; i++) {
            write(written++);
        }
        final int messages = written;
        assertTrue(sendCompletions() <= messages / (half - 1) + 2,
            () -> "about one completion per half of the slots, for " + messages + " messages: " + pair.describe());
        assertReceived(written);
    }

    /** Read {@code written} messages on the server and check each. */
    private void assertReceived(final int written) throws IOException {
        final ByteBuffer received = ByteBuffer.allocate(written * MESSAGE);
        while (received.hasRemaining()) {
            assertTrue(BlockingStream.read(pair.server, received, pair.serverWaker) >= 0, pair::describe);
        }
        for (int i = 0; i < written; i++) {
            final byte[] expected = message(i).array();
            final byte[] actual = new byte[MESSAGE];
            received.get(i * MESSAGE, actual);
            assertArrayEquals(expected, actual, "message " + i);
        }
    }

    private void write(final int index) throws IOException {
        final ByteBuffer message = message(index);
        assertEquals(MESSAGE, pair.client.write(message), () -> "write " + index + ": " + pair.describe());
    }

    private static ByteBuffer message(final int index) {
        final ByteBuffer message = ByteBuffer.allocate(MESSAGE);
        for (int i = 0; i < MESSAGE; i++) {
            message.put(i, (byte) (index * 31 + i));
        }
        return message;
    }

    private int sendSlots() {
        return described(SEND_SLOTS);
    }

    private int sendCompletions() {
        return described(SEND_COMPLETIONS);
    }

    private int described(final Pattern pattern) {
        final Matcher matcher = pattern.matcher(pair.client.describe());
        assertTrue(matcher.find(), pair.client::describe);
        return Integer.parseInt(matcher.group(1));
    }
}
