package io.rdmachannel.channel.stream;

import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.BYTE_ORDER;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.CREDITS_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.DATA_BUFFER_ADDRESS_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.DATA_BUFFER_KEY_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.DATA_BUFFER_LENGTH_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.FLAGS_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.IOMAP_SCALE_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.RESERVED_LENGTH;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.RESERVED_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.TARGET_SGL_ADDRESS_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.TARGET_SGL_ENTRIES_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.TARGET_SGL_KEY_OFFSET;
import static io.rdmachannel.channel.stream.ConnectionDataDescriptor.VERSION_OFFSET;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

/**
 * Flyweight over the 40-byte rsockets connection data ({@link ConnectionDataDescriptor}); every field big-endian.
 *
 * <p>Getters return the raw field: u8 and u16 fields as a non-negative {@code int}, u32 lengths as a non-negative
 * {@code long}, rkeys as the {@code int} bit pattern. Nothing is checked here; values from a peer go through
 * {@link ConnectionDataValidator}. The static accessors read a buffer without a flyweight.
 */
public final class ConnectionDataFlyweight {
    private MutableDirectBuffer buffer;
    private int offset;

    /**
     * Wrap the connection data at an offset: {@link ConnectionDataDescriptor#PRIVATE_DATA_OFFSET}, or
     * {@link ConnectionDataDescriptor#AF_IB_REQUEST_OFFSET} for an AF_IB connect request.
     *
     * @param buffer holding at least {@link ConnectionDataDescriptor#LENGTH} bytes from the offset.
     * @param offset where the connection data starts.
     * @return this.
     */
    public ConnectionDataFlyweight wrap(final MutableDirectBuffer buffer, final int offset) {
        buffer.boundsCheck(offset, ConnectionDataDescriptor.LENGTH);
        this.buffer = buffer;
        this.offset = offset;
        return this;
    }

    /**
     * The wrapped buffer.
     *
     * @return the buffer.
     */
    public MutableDirectBuffer buffer() {
        return buffer;
    }

    /**
     * The offset of the connection data in the wrapped buffer.
     *
     * @return the offset.
     */
    public int offset() {
        return offset;
    }

    /**
     * Write the fixed header of our own connection data: version 1, the flags, the credits, zeroed reserved bytes.
     *
     * @param flags   our flags, normally {@link ConnectionDataDescriptor#localFlags(java.nio.ByteOrder)}.
     * @param credits our receive queue depth.
     * @return this.
     */
    public ConnectionDataFlyweight header(final int flags, final int credits) {
        version(ConnectionDataDescriptor.VERSION).flags(flags).credits(credits);
        buffer.setMemory(offset + RESERVED_OFFSET, RESERVED_LENGTH, (byte) 0);
        return this;
    }

    /**
     * Declare a credit window beyond the initial credits: sets {@link ConnectionDataDescriptor#FLAG_SHARED_CREDITS}
     * and the window. Call after {@link #header}.
     *
     * @param window the most credits ever outstanding, in [credits,
     *               {@link ConnectionDataDescriptor#MAX_CREDIT_WINDOW}].
     * @return this.
     */
    public ConnectionDataFlyweight creditWindow(final int window) {
        flags(flags() | ConnectionDataDescriptor.FLAG_SHARED_CREDITS);
        buffer.putShort(offset + ConnectionDataDescriptor.CREDIT_WINDOW_OFFSET, (short) window, BYTE_ORDER);
        return this;
    }

    /**
     * The declared credit window: the u16 at {@link ConnectionDataDescriptor#CREDIT_WINDOW_OFFSET}, meaningful only
     * with {@link ConnectionDataDescriptor#FLAG_SHARED_CREDITS}.
     *
     * @param buffer the connection data.
     * @param offset where it starts.
     * @return the window.
     */
    public static int creditWindow(final DirectBuffer buffer, final int offset) {
        return buffer.getShort(offset + ConnectionDataDescriptor.CREDIT_WINDOW_OFFSET, BYTE_ORDER) & 0xFFFF;
    }

    /**
     * Set the version byte.
     *
     * @param version the version.
     * @return this.
     */
    public ConnectionDataFlyweight version(final int version) {
        buffer.putByte(offset + VERSION_OFFSET, (byte) version);
        return this;
    }

    /**
     * The version byte.
     *
     * @return in [0, 255].
     */
    public int version() {
        return version(buffer, offset);
    }

    /**
     * Set the flags byte.
     *
     * @param flags the flags.
     * @return this.
     */
    public ConnectionDataFlyweight flags(final int flags) {
        buffer.putByte(offset + FLAGS_OFFSET, (byte) flags);
        return this;
    }

    /**
     * The flags byte.
     *
     * @return in [0, 255].
     */
    public int flags() {
        return flags(buffer, offset);
    }

    /**
     * Set the credits (the receive queue depth).
     *
     * @param credits a u16.
     * @return this.
     */
    public ConnectionDataFlyweight credits(final int credits) {
        buffer.putShort(offset + CREDITS_OFFSET, (short) credits, BYTE_ORDER);
        return this;
    }

    /**
     * The credits.
     *
     * @return in [0, 0xFFFF].
     */
    public int credits() {
        return credits(buffer, offset);
    }

    /**
     * Set the iomap size as an entry count, encoded with {@link ConnectionDataDescriptor#valueToScale(int)}.
     *
     * @param entries entries we accept, in [0, {@link ConnectionDataDescriptor#MAX_IOMAP_VALUE}].
     * @return this.
     */
    public ConnectionDataFlyweight iomapEntries(final int entries) {
        return iomapScale(ConnectionDataDescriptor.valueToScale(entries));
    }

    /**
     * Set the raw iomap scale byte.
     *
     * @param scale the byte.
     * @return this.
     */
    public ConnectionDataFlyweight iomapScale(final int scale) {
        buffer.putByte(offset + IOMAP_SCALE_OFFSET, (byte) scale);
        return this;
    }

    /**
     * The raw iomap scale byte.
     *
     * @return in [0, 255].
     */
    public int iomapScale() {
        return iomapScale(buffer, offset);
    }

    /**
     * The iomap size decoded with {@link ConnectionDataDescriptor#scaleToValue(int)}, regardless of the flags.
     *
     * @return entries.
     */
    public int iomapEntries() {
        return ConnectionDataDescriptor.scaleToValue(iomapScale());
    }

    /**
     * Set the target SGL descriptor.
     *
     * @param address the address of the target SGL.
     * @param key     its rkey.
     * @param entries the number of entries (not bytes), a u32.
     * @return this.
     */
    public ConnectionDataFlyweight targetSgl(final long address, final int key, final long entries) {
        buffer.putLong(offset + TARGET_SGL_ADDRESS_OFFSET, address, BYTE_ORDER);
        buffer.putInt(offset + TARGET_SGL_KEY_OFFSET, key, BYTE_ORDER);
        buffer.putInt(offset + TARGET_SGL_ENTRIES_OFFSET, (int) entries, BYTE_ORDER);
        return this;
    }

    /**
     * The target SGL address.
     *
     * @return the address as an unsigned bit pattern.
     */
    public long targetSglAddress() {
        return targetSglAddress(buffer, offset);
    }

    /**
     * The target SGL rkey.
     *
     * @return the key bit pattern.
     */
    public int targetSglKey() {
        return targetSglKey(buffer, offset);
    }

    /**
     * The number of target SGL entries.
     *
     * @return in [0, 2^32).
     */
    public long targetSglEntries() {
        return targetSglEntries(buffer, offset);
    }

    /**
     * Set the data buffer descriptor: the first region of the receive ring the peer may write into.
     *
     * @param address the region's address.
     * @param key     its rkey.
     * @param length  its length in bytes, a u32.
     * @return this.
     */
    public ConnectionDataFlyweight dataBuffer(final long address, final int key, final long length) {
        buffer.putLong(offset + DATA_BUFFER_ADDRESS_OFFSET, address, BYTE_ORDER);
        buffer.putInt(offset + DATA_BUFFER_KEY_OFFSET, key, BYTE_ORDER);
        buffer.putInt(offset + DATA_BUFFER_LENGTH_OFFSET, (int) length, BYTE_ORDER);
        return this;
    }

    /**
     * The data buffer address.
     *
     * @return the address as an unsigned bit pattern.
     */
    public long dataBufferAddress() {
        return dataBufferAddress(buffer, offset);
    }

    /**
     * The data buffer rkey.
     *
     * @return the key bit pattern.
     */
    public int dataBufferKey() {
        return dataBufferKey(buffer, offset);
    }

    /**
     * The data buffer length.
     *
     * @return bytes, in [0, 2^32).
     */
    public long dataBufferLength() {
        return dataBufferLength(buffer, offset);
    }

    /**
     * The version byte.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return in [0, 255].
     */
    public static int version(final DirectBuffer buffer, final int offset) {
        return buffer.getByte(offset + VERSION_OFFSET) & 0xFF;
    }

    /**
     * The flags byte.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return in [0, 255].
     */
    public static int flags(final DirectBuffer buffer, final int offset) {
        return buffer.getByte(offset + FLAGS_OFFSET) & 0xFF;
    }

    /**
     * The credits.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return in [0, 0xFFFF].
     */
    public static int credits(final DirectBuffer buffer, final int offset) {
        return buffer.getShort(offset + CREDITS_OFFSET, BYTE_ORDER) & 0xFFFF;
    }

    /**
     * The raw iomap scale byte.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return in [0, 255].
     */
    public static int iomapScale(final DirectBuffer buffer, final int offset) {
        return buffer.getByte(offset + IOMAP_SCALE_OFFSET) & 0xFF;
    }

    /**
     * The target SGL address.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return the address as an unsigned bit pattern.
     */
    public static long targetSglAddress(final DirectBuffer buffer, final int offset) {
        return buffer.getLong(offset + TARGET_SGL_ADDRESS_OFFSET, BYTE_ORDER);
    }

    /**
     * The target SGL rkey.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return the key bit pattern.
     */
    public static int targetSglKey(final DirectBuffer buffer, final int offset) {
        return buffer.getInt(offset + TARGET_SGL_KEY_OFFSET, BYTE_ORDER);
    }

    /**
     * The number of target SGL entries.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return in [0, 2^32).
     */
    public static long targetSglEntries(final DirectBuffer buffer, final int offset) {
        return Integer.toUnsignedLong(buffer.getInt(offset + TARGET_SGL_ENTRIES_OFFSET, BYTE_ORDER));
    }

    /**
     * The data buffer address.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return the address as an unsigned bit pattern.
     */
    public static long dataBufferAddress(final DirectBuffer buffer, final int offset) {
        return buffer.getLong(offset + DATA_BUFFER_ADDRESS_OFFSET, BYTE_ORDER);
    }

    /**
     * The data buffer rkey.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return the key bit pattern.
     */
    public static int dataBufferKey(final DirectBuffer buffer, final int offset) {
        return buffer.getInt(offset + DATA_BUFFER_KEY_OFFSET, BYTE_ORDER);
    }

    /**
     * The data buffer length.
     *
     * @param buffer holding connection data.
     * @param offset where it starts.
     * @return bytes, in [0, 2^32).
     */
    public static long dataBufferLength(final DirectBuffer buffer, final int offset) {
        return Integer.toUnsignedLong(buffer.getInt(offset + DATA_BUFFER_LENGTH_OFFSET, BYTE_ORDER));
    }

    @Override
    public String toString() {
        return "ConnectionData{version=" + version()
            + ", flags=0x" + Integer.toHexString(flags())
            + ", credits=" + credits()
            + ", iomapScale=0x" + Integer.toHexString(iomapScale())
            + ", targetSgl={address=0x" + Long.toHexString(targetSglAddress())
            + ", key=0x" + Integer.toHexString(targetSglKey())
            + ", entries=" + targetSglEntries()
            + "}, dataBuffer={address=0x" + Long.toHexString(dataBufferAddress())
            + ", key=0x" + Integer.toHexString(dataBufferKey())
            + ", length=" + dataBufferLength()
            + "}}";
    }
}
