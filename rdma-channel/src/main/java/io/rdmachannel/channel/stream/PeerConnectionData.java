package io.rdmachannel.channel.stream;

import java.nio.ByteOrder;

/**
 * A peer's connection data after {@link ConnectionDataValidator} accepted it: every value is within the limits,
 * and neither advertised range wraps the 64-bit address space.
 *
 * @param flags             the peer's flags byte, unknown bits included.
 * @param credits           the peer's receive queue depth: our initial send credit limit, in [1, 0xFFFF].
 * @param iomapEntries      decoded iomap entries the peer accepts; 0 if it did not set
 *                          {@link ConnectionDataDescriptor#FLAG_IOMAP}.
 * @param targetSglAddress  address of the peer's target SGL, where we write SGEs announcing our ring.
 * @param targetSglKey      rkey of the peer's target SGL and iomap table.
 * @param targetSglEntries  entries in the peer's target SGL, at least 1.
 * @param dataBufferAddress address of the peer's first receive region: our slot 0.
 * @param dataBufferKey     rkey of the peer's receive ring.
 * @param dataBufferLength  bytes in the peer's first receive region, at least 1.
 * @param creditWindow      the most credits the peer may grant at once: {@code credits}, or the window it declared
 *                          with {@link ConnectionDataDescriptor#FLAG_SHARED_CREDITS}.
 */
public record PeerConnectionData(
    int flags,
    int credits,
    int iomapEntries,
    long targetSglAddress,
    int targetSglKey,
    int targetSglEntries,
    long dataBufferAddress,
    int dataBufferKey,
    int dataBufferLength,
    int creditWindow) {

    /**
     * The peer's byte order: SGE and iomap entries written into its target SGL must use it.
     *
     * @return big-endian if the peer set {@link ConnectionDataDescriptor#FLAG_NET}.
     */
    public ByteOrder byteOrder() {
        return ConnectionDataDescriptor.byteOrder(flags);
    }

    /**
     * Whether the peer has an iomap table after its target SGL.
     *
     * @return true if it set {@link ConnectionDataDescriptor#FLAG_IOMAP}.
     */
    public boolean hasIomap() {
        return (flags & ConnectionDataDescriptor.FLAG_IOMAP) != 0;
    }

    /**
     * Where the peer's iomap table starts, right after its target SGL entries.
     *
     * @return the address.
     */
    public long iomapTableAddress() {
        return IomapEntryDescriptor.tableAddress(targetSglAddress, targetSglEntries);
    }

    /**
     * The reserved extension bits the peer set ({@link ConnectionDataDescriptor#EXTENSION_FLAGS_MASK}).
     *
     * @return the bits, 0 for a plain rsockets peer.
     */
    public int extensionFlags() {
        return flags & ConnectionDataDescriptor.EXTENSION_FLAGS_MASK;
    }

    /**
     * The flag bits nobody has defined that the peer set; they are ignored.
     *
     * @return the bits, 0 if none.
     */
    public int unknownFlags() {
        return ConnectionDataDescriptor.unknownFlags(flags);
    }
}
