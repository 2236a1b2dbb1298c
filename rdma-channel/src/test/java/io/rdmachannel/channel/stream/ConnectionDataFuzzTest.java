package io.rdmachannel.channel.stream;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import org.agrona.concurrent.UnsafeBuffer;

/**
 * A peer's connection data as any bytes at all, at the rdma_cm offset and the AF_IB request's: the validator either
 * refuses them with a {@link ProtocolException} or returns values every later use may rely on (credits, entries and
 * ring length in range, remote ranges that do not wrap). Any other exception is a finding. Runs its corpus
 * ({@code src/test/resources/.../ConnectionDataFuzzTestInputs}) in every build; {@code ./rdmachannel fuzz} fuzzes it.
 */
class ConnectionDataFuzzTest {
    private static final ConnectionDataValidator DEFAULT = new ConnectionDataValidator();
    private static final ConnectionDataValidator STRICT = new ConnectionDataValidator().refuseUnknownFlags(true)
        .maxTargetSglEntries(4).maxDataBufferLength(1 << 16);

    @FuzzTest
    void shouldRefuseOrAcceptWithValuesInRange(final FuzzedDataProvider data) {
        final boolean afIb = data.consumeBoolean();
        final ConnectionDataValidator validator = data.consumeBoolean() ? DEFAULT : STRICT;
        final byte[] bytes = data.consumeRemainingAsBytes();
        final int offset = afIb ? ConnectionDataDescriptor.AF_IB_REQUEST_OFFSET
            : ConnectionDataDescriptor.PRIVATE_DATA_OFFSET;
        final PeerConnectionData peer;
        try {
            peer = validator.validate(new UnsafeBuffer(bytes), offset, bytes.length);
        } catch (final ProtocolException refused) {
            return;
        }
        assertTrue(peer.credits() > 0, peer::toString);
        assertTrue(peer.targetSglEntries() >= 1 && peer.targetSglEntries() <= validator.maxTargetSglEntries(),
            peer::toString);
        assertTrue(peer.dataBufferLength() >= 1 && peer.dataBufferLength() <= validator.maxDataBufferLength(),
            peer::toString);
        assertTrue(Long.compareUnsigned(peer.dataBufferAddress(), peer.dataBufferAddress() + peer.dataBufferLength())
            < 0, peer::toString);
        assertTrue(peer.iomapEntries() >= 0, peer::toString);
        if (validator == STRICT) {
            assertTrue(ConnectionDataDescriptor.unknownFlags(peer.flags()) == 0, peer::toString);
        }
    }
}
