package io.rdmachannel.channel.stream;

import io.rdmachannel.channel.cm.ConnectionManager;

import java.io.IOException;

/**
 * {@link PeerMessageFuzzTest} in message mode, the engine and the peer on shm devices emulating iWARP: every message
 * the peer sends is a SEND whose 4 bytes the engine decodes (of any length here, and any word), DATA payloads are
 * plain RDMA WRITEs ahead of their message, and the engine's own messages are 4-byte SENDs the watchful peer checks.
 * Runs its corpus in every build; {@code ./rdmachannel fuzz} fuzzes it.
 */
class MessageModePeerMessageFuzzTest extends PeerMessageFuzzTest {

    @Override
    StreamTransport openTransport() throws IOException {
        return IwarpEmulation.transport();
    }

    @Override
    ConnectionManager openConnectionManager() throws IOException {
        return IwarpEmulation.connectionManager();
    }
}
