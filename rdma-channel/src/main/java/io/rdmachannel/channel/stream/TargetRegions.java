package io.rdmachannel.channel.stream;

import java.nio.ByteOrder;

import org.agrona.concurrent.UnsafeBuffer;

/**
 * The regions of the peer's receive ring we may write into, as the sender sees them: a local copy of our target SGL
 * (which the peer RDMA-writes, one entry per SGE update), filled in order and never crossed (section 2.2). Entry 0
 * starts as the peer's first region from its connection data. Guarded by the send lock.
 *
 * <p>An entry is taken over from the target SGL memory once its local copy ran out; its memory length is then
 * zeroed, so the next SGE written there is recognised. Every value is checked first: a region no peer could have
 * advertised fails the connection, and we never write outside what the peer advertised.
 *
 * <p>With one entry ({@code rdmachannel.stream.targetSglEntries=1} on our side), every SGE arrives in the entry in
 * use, and the peer writes the next one as soon as it consumed the region before: the next SGE must be taken over
 * before the last byte of the current region goes out, or the one after could overwrite it unseen. So the last
 * byte waits until the next SGE was seen.
 */
final class TargetRegions {
    private final long[] address;
    private final int[] key;
    private final int[] length;
    private final long maxLength;
    private UnsafeBuffer sgl;
    private int current;
    /** An entry's memory holds a new SGE while its local copy is still in use (with one entry, in practice). */
    private boolean waiting;

    TargetRegions(final int entries, final long maxLength) {
        this.address = new long[entries];
        this.key = new int[entries];
        this.length = new int[entries];
        this.maxLength = maxLength;
    }

    /**
     * The peer is known: entry 0 is its first region, the rest comes through {@code targetSgl}.
     */
    void start(final UnsafeBuffer targetSgl, final PeerConnectionData peer) {
        this.sgl = targetSgl;
        address[0] = peer.dataBufferAddress();
        key[0] = peer.dataBufferKey();
        length[0] = peer.dataBufferLength();
    }

    /**
     * Bytes a message may carry into the current region: what is left of it, but the last byte only once the next
     * region is known, with one entry.
     */
    int remaining() {
        final int left = length[current];
        return length.length == 1 && !waiting && left > 0 ? left - 1 : left;
    }

    long address() {
        return address[current];
    }

    int key() {
        return key[current];
    }

    /**
     * Account {@code bytes} written at the start of the current region; move to the next entry when it runs out.
     * Called before the write is posted: an SGE that arrived while the entry was in use is taken over before the
     * last bytes of the entry's region go out, so before the peer may reuse the entry for its next SGE.
     *
     * @throws ProtocolException if that SGE is impossible.
     */
    void consume(final int bytes) throws ProtocolException {
        final int entry = current;
        address[entry] += bytes;
        length[entry] -= bytes;
        if (length[entry] == 0) {
            current = (entry + 1) % length.length;
            if (waiting) {
                adopt();
            }
        }
    }

    /**
     * Take over SGEs the peer wrote into our target SGL. Called once an SGL message was received: its data was
     * placed before its completion, so an entry read here is complete.
     *
     * @throws ProtocolException if an SGE is impossible: negative or over the limit, or wrapping 2^64.
     */
    void adopt() throws ProtocolException {
        waiting = false;
        for (int i = 0; i < length.length; i++) {
            final int offset = SgeDescriptor.entryOffset(i);
            final int written = sgl.getInt(offset + SgeDescriptor.LENGTH_OFFSET, ByteOrder.nativeOrder());
            if (written == 0) {
                continue;
            }
            if (length[i] != 0) {
                waiting = true;
                continue;
            }
            final long start = sgl.getLong(offset + SgeDescriptor.ADDRESS_OFFSET, ByteOrder.nativeOrder());
            if (written < 0 || written > maxLength || Long.compareUnsigned(start + written, start) <= 0) {
                throw new ProtocolException("the peer advertised an impossible target region: address=0x"
                    + Long.toHexString(start) + ", length=" + Integer.toUnsignedString(written));
            }
            address[i] = start;
            key[i] = sgl.getInt(offset + SgeDescriptor.KEY_OFFSET, ByteOrder.nativeOrder());
            length[i] = written;
            sgl.putInt(offset + SgeDescriptor.LENGTH_OFFSET, 0, ByteOrder.nativeOrder());
        }
    }

    /**
     * The current entry and every entry's remaining length, for {@link RsocketConnection#describe()}.
     */
    void describe(final StringBuilder out) {
        out.append("targetSge=").append(current).append(", targetLength=");
        for (int i = 0; i < length.length; i++) {
            if (i > 0) {
                out.append('/');
            }
            out.append(length[i]);
        }
    }
}
