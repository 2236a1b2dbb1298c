package io.rdmachannel.channel.stream;

import static io.rdmachannel.channel.stream.IomapEntryDescriptor.ADDRESS_OFFSET;
import static io.rdmachannel.channel.stream.IomapEntryDescriptor.KEY_OFFSET;
import static io.rdmachannel.channel.stream.IomapEntryDescriptor.LENGTH_OFFSET;
import static io.rdmachannel.channel.stream.IomapEntryDescriptor.MAPPING_OFFSET_OFFSET;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;

/**
 * Flyweight over a 24-byte rsockets iomap entry ({@link IomapEntryDescriptor}) in a byte order given when wrapping:
 * the order of the side that owns the iomap table ({@link ConnectionDataDescriptor#byteOrder(int)}).
 */
public final class IomapEntryFlyweight {
    private MutableDirectBuffer buffer;
    private int offset;
    private ByteOrder byteOrder;

    /**
     * Wrap an entry.
     *
     * @param buffer    holding at least {@link IomapEntryDescriptor#LENGTH} bytes from the offset.
     * @param offset    where the entry starts.
     * @param byteOrder the byte order of the iomap table's owner.
     * @return this.
     */
    public IomapEntryFlyweight wrap(final MutableDirectBuffer buffer, final int offset, final ByteOrder byteOrder) {
        buffer.boundsCheck(offset, IomapEntryDescriptor.LENGTH);
        this.buffer = buffer;
        this.offset = offset;
        this.byteOrder = byteOrder;
        return this;
    }

    /**
     * The byte order the entry is read and written in.
     *
     * @return the order given to {@link #wrap(MutableDirectBuffer, int, ByteOrder)}.
     */
    public ByteOrder byteOrder() {
        return byteOrder;
    }

    /**
     * Set the whole entry.
     *
     * @param mappingOffset where the mapping starts in the riowrite offset space.
     * @param address       the mapped region's address.
     * @param key           its rkey.
     * @param length        its length in bytes, a u32.
     * @return this.
     */
    public IomapEntryFlyweight set(final long mappingOffset, final long address, final int key, final long length) {
        buffer.putLong(offset + MAPPING_OFFSET_OFFSET, mappingOffset, byteOrder);
        buffer.putLong(offset + ADDRESS_OFFSET, address, byteOrder);
        buffer.putInt(offset + KEY_OFFSET, key, byteOrder);
        buffer.putInt(offset + LENGTH_OFFSET, (int) length, byteOrder);
        return this;
    }

    /**
     * The mapping offset.
     *
     * @return the offset as an unsigned bit pattern.
     */
    public long mappingOffset() {
        return mappingOffset(buffer, offset, byteOrder);
    }

    /**
     * The mapped region's address.
     *
     * @return the address as an unsigned bit pattern.
     */
    public long address() {
        return buffer.getLong(offset + ADDRESS_OFFSET, byteOrder);
    }

    /**
     * The mapped region's rkey.
     *
     * @return the key bit pattern.
     */
    public int key() {
        return buffer.getInt(offset + KEY_OFFSET, byteOrder);
    }

    /**
     * The mapped region's length.
     *
     * @return bytes, in [0, 2^32).
     */
    public long length() {
        return Integer.toUnsignedLong(buffer.getInt(offset + LENGTH_OFFSET, byteOrder));
    }

    /**
     * The mapping offset of an entry.
     *
     * @param buffer    holding the entry.
     * @param offset    where it starts.
     * @param byteOrder the byte order of the iomap table's owner.
     * @return the offset as an unsigned bit pattern.
     */
    public static long mappingOffset(final DirectBuffer buffer, final int offset, final ByteOrder byteOrder) {
        return buffer.getLong(offset + MAPPING_OFFSET_OFFSET, byteOrder);
    }

    @Override
    public String toString() {
        return "IomapEntry{mappingOffset=0x" + Long.toHexString(mappingOffset())
            + ", address=0x" + Long.toHexString(address())
            + ", key=0x" + Integer.toHexString(key())
            + ", length=" + length()
            + ", byteOrder=" + byteOrder
            + '}';
    }
}
