package io.rdmachannel.channel.internal;

/**
 * Prefix matching of addresses (IPv4, IPv6, GIDs) as byte arrays, for the rules that name networks: the host policy's
 * allow and deny lists and the drop-in's destination rules.
 */
public final class AddressPrefixes {

    private AddressPrefixes() {
    }

    /**
     * Whether the first {@code bits} bits of {@code address} are those of {@code prefix}.
     *
     * @param address the address, as many bytes as {@code prefix}.
     * @param prefix  the network.
     * @param bits    the prefix length, from 0 to 8 times the length.
     * @return true if the address is in the network; false if the lengths differ.
     */
    public static boolean matches(final byte[] address, final byte[] prefix, final int bits) {
        if (address.length != prefix.length) {
            return false;
        }
        final int whole = bits / 8;
        for (int i = 0; i < whole; i++) {
            if (address[i] != prefix[i]) {
                return false;
            }
        }
        final int rest = bits % 8;
        if (rest == 0) {
            return true;
        }
        final int mask = 0xFF00 >> rest & 0xFF;
        return (address[whole] & mask) == (prefix[whole] & mask);
    }
}
