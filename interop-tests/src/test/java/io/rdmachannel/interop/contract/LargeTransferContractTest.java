package io.rdmachannel.interop.contract;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Timeout;

/**
 * Bulk transfer with random write and read sizes (also written from a registered buffer that is overwritten as
 * soon as each write returns) (seeded; the seed is in the state dump), every byte checked
 * against the pattern and CRC32C compared on both sides. The size per case is
 * {@value ContractConfiguration#TRANSFER_BYTES_PROP_NAME} (default 1 GiB).
 */
@ContractTest
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class LargeTransferContractTest {

    private static final int MAX_WRITE = Pattern.MAX_CHUNK;
    private static final int MAX_READ = 256 * 1024;
    private static final Duration TRANSFER_TIMEOUT = Duration.ofSeconds(150);

    @AcrossModes
    void shouldTransferOneWayIntact(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        transferOneWay(transport, mode, state, ContractConfiguration.transferBytes(), false);
    }

    @AcrossModes
    void shouldTransferFromARegisteredBufferIntact(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        transferOneWay(transport, mode, state, ContractConfiguration.transferBytes() / 4, true);
    }

    private static void transferOneWay(final ContractTransport transport, final IoMode mode,
        final ConnectionState state, final long total, final boolean registered) throws Exception {
        final long seed = ContractConfiguration.seed();
        state.put("seed", seed);
        state.put("total", total);
        state.put("registered", registered);
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final PatternSender sender = new PatternSender(SizeSequence.random(seed, 1, MAX_WRITE, total));
        if (registered) {
            sender.fromRegisteredBuffer();
        }
        try {
            final PatternReceiver receiver = new PatternReceiver(SizeSequence.random(seed + 1, 1, MAX_READ), MAX_READ,
                true);
            final Endpoint client = new Endpoint("client", pair.client(), sender, null).watchedBy(state);
            final Endpoint server = new Endpoint("server", pair.server(), null, receiver).watchedBy(state);

            TransferDriver.run(transport, mode, List.of(client, server), TRANSFER_TIMEOUT, state);

            assertEquals(total, sender.position(), "bytes sent");
            assertEquals(total, receiver.position(), "bytes received");
            assertEquals(sender.checksum(), receiver.checksum(), "CRC32C sent vs received");
        } finally {
            sender.release();
        }
    }

    @AcrossModes
    void shouldTransferBothWaysConcurrentlyIntact(final ContractTransport transport, final IoMode mode,
        final ConnectionState state) throws Exception {
        final long seed = ContractConfiguration.seed();
        final long perDirection = ContractConfiguration.transferBytes() / 2;
        state.put("seed", seed);
        state.put("perDirection", perDirection);
        final ConnectedPair pair = ConnectedPair.open(transport, state);
        final PatternSender clientSender = new PatternSender(SizeSequence.random(seed, 1, MAX_WRITE, perDirection));
        final PatternSender serverSender = new PatternSender(
            SizeSequence.random(seed + 1, 1, MAX_WRITE, perDirection));
        final PatternReceiver clientReceiver = new PatternReceiver(SizeSequence.random(seed + 2, 1, MAX_READ),
            MAX_READ, false);
        final PatternReceiver serverReceiver = new PatternReceiver(SizeSequence.random(seed + 3, 1, MAX_READ),
            MAX_READ, true);
        final Endpoint client = new Endpoint("client", pair.client(), clientSender, clientReceiver).watchedBy(state);
        final Endpoint server = new Endpoint("server", pair.server(), serverSender, serverReceiver).watchedBy(state);

        TransferDriver.run(transport, mode, List.of(client, server), TRANSFER_TIMEOUT, state);

        assertEquals(perDirection, serverReceiver.position(), "bytes client to server");
        assertEquals(perDirection, clientReceiver.position(), "bytes server to client");
        assertEquals(clientSender.checksum(), serverReceiver.checksum(), "CRC32C client to server");
        assertEquals(serverSender.checksum(), clientReceiver.checksum(), "CRC32C server to client");
    }
}
