package io.rdmachannel.channel.shm;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.api.AfterAll;

/**
 * {@link ShmPeerMemoryFuzzTest} with the queues' shared files in play as well: the hostile process B may take its
 * queue pair's receives from a shared receive queue (whose file it then writes and resizes instead of its block's
 * receive queue), write any word of its completion queue's arming file (which our requests disarm and wake) and of
 * ours (which its mapping of our queue pair reaches), and resize its arming file, while our process A executes
 * requests against it and waits on its own completion queue. The same rules hold: bounded completions, no exception
 * from posting, polling or waiting, waits that end by their timeout, and none of our memory written. Its own target,
 * so that the inputs kept for {@link ShmPeerMemoryFuzzTest} keep decoding as they did. Runs its corpus in every
 * build; {@code ./rdmachannel fuzz} fuzzes it.
 */
class ShmPeerQueueFuzzTest {

    @AfterAll
    static void close() {
        ShmPeerMemoryFuzzTest.close();
    }

    @FuzzTest
    void shouldTouchOnlyThePeersMemoryWhateverThePeerWritesInItsQueues(final FuzzedDataProvider data)
        throws Exception {
        ShmPeerMemoryFuzzTest.fuzz(data, true);
    }
}
