package io.rdmachannel.channel.stream;

import org.agrona.DirectBuffer;

/**
 * Checks a peer's connection data before anything of it is used, and decodes it into a {@link PeerConnectionData}.
 *
 * <p>The rules, each refused with a {@link ProtocolException} naming the value:
 * <ul>
 *     <li>the private data holds 40 bytes at the connection data offset;</li>
 *     <li>version is 1 (a C passive side rejects anything else, a C active side fails with ENOTSUP);</li>
 *     <li>credits are not 0: a peer with no receive credits could never be sent anything;</li>
 *     <li>with {@link ConnectionDataDescriptor#FLAG_SHARED_CREDITS}, the credit window is in [credits,
 *     {@value ConnectionDataDescriptor#MAX_CREDIT_WINDOW}];</li>
 *     <li>the target SGL has 1 to {@link #maxTargetSglEntries()} entries (default
 *     {@value #MAX_TARGET_SGL_ENTRIES_DEFAULT}; C peers advertise 2). We cycle SGE writes over that many slots, so
 *     the cap bounds what a peer can make us track;</li>
 *     <li>the data buffer holds 1 to {@link #maxDataBufferLength()} bytes (default 1 GiB; C peers advertise half
 *     their receive ring). No alignment is required: C sizes its ring from a configuration file and halves it;</li>
 *     <li>neither the target SGL with its iomap table ({@code entries * 16 + iomapEntries * 24} bytes) nor the data
 *     buffer wraps the address space: the exclusive end address must fit in 64 bits.</li>
 * </ul>
 *
 * The iomap scale byte always decodes; it is read only when {@link ConnectionDataDescriptor#FLAG_IOMAP} is set, as
 * C does, and counts 0 otherwise. The reserved bytes are ignored unless that flag says they hold the
 * credit window. Flag bits beyond NET and IOMAP are accepted and
 * ignored unless {@link #refuseUnknownFlags(boolean)} is set; our own reserved extension bits are never refused.
 *
 * <p>Not thread-safe while being configured; {@link #validate(DirectBuffer, int, int)} itself keeps no state.
 */
public final class ConnectionDataValidator {
    /** Default cap on a peer's target SGL entries. */
    public static final int MAX_TARGET_SGL_ENTRIES_DEFAULT = 256;
    /** Largest cap on a peer's target SGL entries that can be configured. */
    public static final int MAX_TARGET_SGL_ENTRIES_LIMIT = 0xFFFF;
    /** Default cap on a peer's first receive region: 1 GiB. */
    public static final int MAX_DATA_BUFFER_LENGTH_DEFAULT = 1 << 30;

    private int maxTargetSglEntries = MAX_TARGET_SGL_ENTRIES_DEFAULT;
    private int maxDataBufferLength = MAX_DATA_BUFFER_LENGTH_DEFAULT;
    private boolean refuseUnknownFlags;

    /**
     * Set the cap on a peer's target SGL entries.
     *
     * @param entries in [1, {@link #MAX_TARGET_SGL_ENTRIES_LIMIT}].
     * @return this.
     * @throws IllegalArgumentException if out of range.
     */
    public ConnectionDataValidator maxTargetSglEntries(final int entries) {
        if (entries < 1 || entries > MAX_TARGET_SGL_ENTRIES_LIMIT) {
            throw new IllegalArgumentException("maxTargetSglEntries must be in [1, " + MAX_TARGET_SGL_ENTRIES_LIMIT
                + "]: maxTargetSglEntries=" + entries);
        }
        this.maxTargetSglEntries = entries;
        return this;
    }

    /**
     * The cap on a peer's target SGL entries.
     *
     * @return entries.
     */
    public int maxTargetSglEntries() {
        return maxTargetSglEntries;
    }

    /**
     * Set the cap on a peer's first receive region.
     *
     * @param length bytes, at least 1.
     * @return this.
     * @throws IllegalArgumentException if out of range.
     */
    public ConnectionDataValidator maxDataBufferLength(final int length) {
        if (length < 1) {
            throw new IllegalArgumentException("maxDataBufferLength must be at least 1: maxDataBufferLength=" + length);
        }
        this.maxDataBufferLength = length;
        return this;
    }

    /**
     * The cap on a peer's first receive region.
     *
     * @return bytes.
     */
    public int maxDataBufferLength() {
        return maxDataBufferLength;
    }

    /**
     * Whether flag bits nobody defined make the connection data invalid (default false: ignored, as C does).
     *
     * @param refuse true to refuse them.
     * @return this.
     */
    public ConnectionDataValidator refuseUnknownFlags(final boolean refuse) {
        this.refuseUnknownFlags = refuse;
        return this;
    }

    /**
     * Whether flag bits nobody defined are refused.
     *
     * @return true if they are.
     */
    public boolean refuseUnknownFlags() {
        return refuseUnknownFlags;
    }

    /**
     * Check and decode a peer's connection data.
     *
     * @param privateData       the received private data, from index 0.
     * @param offset            where the connection data starts: {@link ConnectionDataDescriptor#PRIVATE_DATA_OFFSET},
     *                          or {@link ConnectionDataDescriptor#AF_IB_REQUEST_OFFSET} in an AF_IB request.
     * @param privateDataLength bytes of private data received (may exceed what the peer sent: padding).
     * @return the decoded values.
     * @throws ProtocolException naming the first value that breaks a rule.
     */
    public PeerConnectionData validate(final DirectBuffer privateData, final int offset, final int privateDataLength)
        throws ProtocolException {
        ConnectionDataDescriptor.checkPrivateDataLength(privateDataLength, offset);

        final int version = ConnectionDataFlyweight.version(privateData, offset);
        if (version != ConnectionDataDescriptor.VERSION) {
            throw new ProtocolException("unsupported connection data version: version=" + version);
        }
        final int flags = ConnectionDataFlyweight.flags(privateData, offset);
        if (refuseUnknownFlags && ConnectionDataDescriptor.unknownFlags(flags) != 0) {
            throw new ProtocolException("unknown connection data flags: flags=0x" + Integer.toHexString(flags));
        }
        final int credits = ConnectionDataFlyweight.credits(privateData, offset);
        if (credits == 0) {
            throw new ProtocolException("peer advertised no receive credits: credits=0");
        }
        final int creditWindow;
        if ((flags & ConnectionDataDescriptor.FLAG_SHARED_CREDITS) != 0) {
            creditWindow = ConnectionDataFlyweight.creditWindow(privateData, offset);
            if (creditWindow < credits || creditWindow > ConnectionDataDescriptor.MAX_CREDIT_WINDOW) {
                throw new ProtocolException("credit window must be in [credits, "
                    + ConnectionDataDescriptor.MAX_CREDIT_WINDOW + "]: creditWindow=" + creditWindow + ", credits="
                    + credits);
            }
        } else {
            creditWindow = credits;
        }

        final long entries = ConnectionDataFlyweight.targetSglEntries(privateData, offset);
        if (entries < 1 || entries > maxTargetSglEntries) {
            throw new ProtocolException("target SGL entries must be in [1, " + maxTargetSglEntries
                + "]: targetSglEntries=" + entries);
        }
        final int iomapEntries = (flags & ConnectionDataDescriptor.FLAG_IOMAP) != 0
            ? ConnectionDataDescriptor.scaleToValue(ConnectionDataFlyweight.iomapScale(privateData, offset)) : 0;
        final long targetSglAddress = ConnectionDataFlyweight.targetSglAddress(privateData, offset);
        final long targetSglBytes = entries * SgeDescriptor.LENGTH + (long) iomapEntries * IomapEntryDescriptor.LENGTH;
        checkNoWrap("targetSglAddress", targetSglAddress, "targetSglBytes", targetSglBytes);

        final long length = ConnectionDataFlyweight.dataBufferLength(privateData, offset);
        if (length < 1 || length > maxDataBufferLength) {
            throw new ProtocolException("data buffer length must be in [1, " + maxDataBufferLength
                + "]: dataBufferLength=" + length);
        }
        final long dataBufferAddress = ConnectionDataFlyweight.dataBufferAddress(privateData, offset);
        checkNoWrap("dataBufferAddress", dataBufferAddress, "dataBufferLength", length);

        return new PeerConnectionData(
            flags,
            credits,
            iomapEntries,
            targetSglAddress,
            ConnectionDataFlyweight.targetSglKey(privateData, offset),
            (int) entries,
            dataBufferAddress,
            ConnectionDataFlyweight.dataBufferKey(privateData, offset),
            (int) length,
            creditWindow);
    }

    /**
     * Check that a remote range of a positive length does not wrap: its exclusive end must fit in 64 bits.
     */
    static void checkNoWrap(final String addressName, final long address, final String lengthName, final long length)
        throws ProtocolException {
        if (Long.compareUnsigned(address + length, address) <= 0) {
            throw new ProtocolException("remote range wraps the 64-bit address space: " + addressName + "=0x"
                + Long.toHexString(address) + ", " + lengthName + "=" + length);
        }
    }
}
