package io.rdmachannel.channel.stream;

import static io.rdmachannel.channel.stream.SgeDescriptor.ADDRESS_OFFSET;
import static io.rdmachannel.channel.stream.SgeDescriptor.KEY_OFFSET;
import static io.rdmachannel.channel.stream.SgeDescriptor.LENGTH_OFFSET;

import org.agrona.DirectBuffer;
import org.agrona.MutableDirectBuffer;

import java.nio.ByteOrder;

/**
 * Flyweight over a 16-byte rsockets SGE ({@link SgeDescriptor}) in a byte order given when wrapping: the order of
 * the side that owns the target SGL ({@link ConnectionDataDescriptor#byteOrder(int)}). To publish a region of our
 * ring, encode in the peer's order and RDMA-write the 16 bytes to the peer's target SGL; to read what the peer wrote
 * into ours, wrap in our own order.
 */
public final class SgeFlyweight {
    private MutableDirectBuffer buffer;
    private int offset;
    private ByteOrder byteOrder;

    /**
     * Wrap an entry.
     *
     * @param buffer    holding at least {@link SgeDescriptor#LENGTH} bytes from the offset.
     * @param offset    where the entry starts.
     * @param byteOrder the byte order of the target SGL's owner.
     * @return this.
     */
    public SgeFlyweight wrap(final MutableDirectBuffer buffer, final int offset, final ByteOrder byteOrder) {
        buffer.boundsCheck(offset, SgeDescriptor.LENGTH);
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
     * @param address the region's address.
     * @param key     its rkey.
     * @param length  its length in bytes, a u32.
     * @return this.
     */
    public SgeFlyweight set(final long address, final int key, final long length) {
        return address(address).key(key).length(length);
    }

    /**
     * Set the address.
     *
     * @param address the region's address.
     * @return this.
     */
    public SgeFlyweight address(final long address) {
        buffer.putLong(offset + ADDRESS_OFFSET, address, byteOrder);
        return this;
    }

    /**
     * The address.
     *
     * @return the address as an unsigned bit pattern.
     */
    public long address() {
        return address(buffer, offset, byteOrder);
    }

    /**
     * Set the rkey.
     *
     * @param key the key bit pattern.
     * @return this.
     */
    public SgeFlyweight key(final int key) {
        buffer.putInt(offset + KEY_OFFSET, key, byteOrder);
        return this;
    }

    /**
     * The rkey.
     *
     * @return the key bit pattern.
     */
    public int key() {
        return key(buffer, offset, byteOrder);
    }

    /**
     * Set the length.
     *
     * @param length bytes, a u32.
     * @return this.
     */
    public SgeFlyweight length(final long length) {
        buffer.putInt(offset + LENGTH_OFFSET, (int) length, byteOrder);
        return this;
    }

    /**
     * The length.
     *
     * @return bytes, in [0, 2^32).
     */
    public long length() {
        return length(buffer, offset, byteOrder);
    }

    /**
     * The address of an entry.
     *
     * @param buffer    holding the entry.
     * @param offset    where it starts.
     * @param byteOrder the byte order of the target SGL's owner.
     * @return the address as an unsigned bit pattern.
     */
    public static long address(final DirectBuffer buffer, final int offset, final ByteOrder byteOrder) {
        return buffer.getLong(offset + ADDRESS_OFFSET, byteOrder);
    }

    /**
     * The rkey of an entry.
     *
     * @param buffer    holding the entry.
     * @param offset    where it starts.
     * @param byteOrder the byte order of the target SGL's owner.
     * @return the key bit pattern.
     */
    public static int key(final DirectBuffer buffer, final int offset, final ByteOrder byteOrder) {
        return buffer.getInt(offset + KEY_OFFSET, byteOrder);
    }

    /**
     * The length of an entry.
     *
     * @param buffer    holding the entry.
     * @param offset    where it starts.
     * @param byteOrder the byte order of the target SGL's owner.
     * @return bytes, in [0, 2^32).
     */
    public static long length(final DirectBuffer buffer, final int offset, final ByteOrder byteOrder) {
        return Integer.toUnsignedLong(buffer.getInt(offset + LENGTH_OFFSET, byteOrder));
    }

    @Override
    public String toString() {
        return "Sge{address=0x" + Long.toHexString(address())
            + ", key=0x" + Integer.toHexString(key())
            + ", length=" + length()
            + ", byteOrder=" + byteOrder
            + '}';
    }
}
