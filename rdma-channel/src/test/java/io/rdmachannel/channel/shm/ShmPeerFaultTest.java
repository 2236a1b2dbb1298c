package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.WorkRequestOpcode;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A peer process that truncates its own queue pair's block under our mapping (the JDK reports the SIGBUS of our next
 * access as an {@code InternalError}): whichever of our calls reads the block next, posting, polling or moving our
 * queue pair, must not throw; the peer is gone for us, our queue pair fails, and its outstanding work is flushed.
 */
@Timeout(20)
class ShmPeerFaultTest {

    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldFlushOurReceivesWithoutThrowingAfterThePeerTruncatedItsBlock() throws Exception {
        final ShmFixture.Pair pair = fixture.pair();
        pair.a.postReceive(7, 0, 64);
        final Truncated truncated = Truncated.blockOf(pair.b);
        try {
            // our own move to ERROR, then a poll: the poll asks whether the peer is gone, reading its block
            pair.a.qp.modify(QueuePairState.ERROR, new QueuePairAttributes());
            final List<ShmFixture.Completion> flushed = pair.a.await(1);
            assertEquals(7, flushed.getFirst().id());
            assertEquals(CompletionStatus.WORK_REQUEST_FLUSHED, flushed.getFirst().status());
        } finally {
            truncated.close();
        }
    }

    @Test
    void shouldFailASendWithoutThrowingAfterThePeerTruncatedItsBlock() throws Exception {
        final ShmFixture.Pair pair = fixture.pair();
        pair.a.postReceive(8, 0, 64);
        final Truncated truncated = Truncated.blockOf(pair.b);
        try {
            pair.a.postSend(WorkRequestOpcode.SEND, 9, SendFlags.SIGNALED, 64, 16);
            final List<ShmFixture.Completion> completions = pair.a.await(2);
            final ShmFixture.Completion send = completions.stream().filter(c -> c.id() == 9).findFirst().orElseThrow();
            final ShmFixture.Completion receive = completions.stream().filter(c -> c.id() == 8).findFirst()
                .orElseThrow();
            assertTrue(send.status() != CompletionStatus.SUCCESS, completions::toString);
            assertEquals(CompletionStatus.WORK_REQUEST_FLUSHED, receive.status());
            assertEquals(QueuePairState.ERROR, pair.a.qp.state());
        } finally {
            truncated.close();
        }
    }

    /** A queue pair's block file cut to nothing; closing gives it back its length and content. */
    private record Truncated(Path file, byte[] content) {

        static Truncated blockOf(final ShmFixture.Side side) throws IOException {
            final Path file = ((ShmDevice) side.device).folder()
                .resolve(QueuePairBlockDescriptor.fileName(side.qp.number())).toRealPath();
            final Truncated truncated = new Truncated(file, Files.readAllBytes(file));
            setLength(file, 0);
            return truncated;
        }

        void close() throws IOException {
            setLength(file, content.length);
            Files.write(file, content, StandardOpenOption.WRITE);
        }

        private static void setLength(final Path file, final long length) throws IOException {
            try (RandomAccessFile access = new RandomAccessFile(file.toFile(), "rw")) {
                access.setLength(length);
            }
        }
    }
}
