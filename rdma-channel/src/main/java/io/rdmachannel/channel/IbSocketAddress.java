package io.rdmachannel.channel;

import java.io.InvalidObjectException;
import java.io.ObjectInputStream;
import java.io.Serial;
import java.io.Serializable;
import java.net.SocketAddress;
import java.util.Arrays;
import java.util.Locale;

/**
 * A native InfiniBand socket address (librdmacm's {@code AF_IB}, {@code struct sockaddr_ib}): a 16-byte GID, a 16-bit
 * partition key (P_Key) and a 64-bit service ID. Immutable and thread-safe.
 *
 * <p>For the stream port space ({@code RDMA_PS_TCP}) the RDMA CM builds the service ID from a port as
 * {@code (0x0106L << 16) | port}; {@link #of(byte[], int)} and {@link #port()} follow that convention.
 *
 * <h2>Textual form</h2>
 * <pre>
 *   ib:[GID]:PORT[?pkey=PKEY]
 *   ib:[GID]?sid=SID[&amp;pkey=PKEY]
 * </pre>
 * <ul>
 *   <li>{@code GID} is written like an IPv6 address (RFC 4291 text: eight groups of up to four hex digits, one
 *   {@code ::} for a run of zero groups, an optional dotted IPv4 tail); {@link #toString()} prints the RFC 5952
 *   canonical form (lower case, longest run of two or more zero groups compressed).</li>
 *   <li>{@code PORT} is a decimal port in [0, 65535]; it stands for the service ID {@code (0x0106 << 16) | PORT}.</li>
 *   <li>{@code SID} is a 64-bit service ID, hexadecimal with {@code 0x} or unsigned decimal; used when the service ID
 *   is not of the stream port-space form.</li>
 *   <li>{@code PKEY} is the partition key, hexadecimal with {@code 0x} or decimal, in [0, 0xFFFF]; omitted when it is
 *   the default full-membership key {@code 0xFFFF}.</li>
 * </ul>
 * Examples: {@code ib:[fe80::2:c903:a:b1c2]:7471}, {@code ib:[fe80::2:c903:a:b1c2]:7471?pkey=0x8001},
 * {@code ib:[fe80::1]?sid=0x1000000000000001}. {@code parse(a.toString()).equals(a)} holds for every address;
 * bad text makes {@link #parse(String)} throw {@link IllegalArgumentException} naming the problem.
 *
 * <p>Serialized through its textual form, which is validated again when read.
 */
public final class IbSocketAddress extends SocketAddress {
    /** The length of a GID in bytes. */
    public static final int GID_LENGTH = 16;
    /** The default partition key: the full-membership default partition. */
    public static final int DEFAULT_PKEY = 0xFFFF;
    /** The service ID of port 0 in the RDMA CM's stream port space ({@code RDMA_PS_TCP << 16}). */
    public static final long TCP_PORT_SPACE_BASE = 0x0106L << 16;
    /** The prefix of the textual form. */
    public static final String SCHEME = "ib:";

    @Serial
    private static final long serialVersionUID = 1L;

    private final transient byte[] gid;
    private final transient int pkey;
    private final transient long serviceId;

    private IbSocketAddress(final byte[] gid, final int pkey, final long serviceId) {
        this.gid = gid;
        this.pkey = pkey;
        this.serviceId = serviceId;
    }

    /**
     * An address in the stream port space with the default partition key.
     *
     * @param gid the 16-byte GID; copied.
     * @param port the port in [0, 65535].
     * @return the address.
     * @throws IllegalArgumentException if the GID is not 16 bytes or the port is out of range.
     */
    public static IbSocketAddress of(final byte[] gid, final int port) {
        return of(gid, DEFAULT_PKEY, serviceIdOf(port));
    }

    /**
     * An address with every field given.
     *
     * @param gid the 16-byte GID; copied.
     * @param pkey the partition key in [0, 0xFFFF].
     * @param serviceId the service ID.
     * @return the address.
     * @throws IllegalArgumentException if the GID is not 16 bytes or the partition key is out of range.
     */
    public static IbSocketAddress of(final byte[] gid, final int pkey, final long serviceId) {
        if (gid == null) {
            throw new NullPointerException("gid");
        }
        if (gid.length != GID_LENGTH) {
            throw new IllegalArgumentException("gid must be " + GID_LENGTH + " bytes: gid.length=" + gid.length);
        }
        checkPkey(pkey);
        return new IbSocketAddress(gid.clone(), pkey, serviceId);
    }

    /**
     * The service ID of a port in the stream port space: {@code (0x0106L << 16) | port}.
     *
     * @param port the port in [0, 65535].
     * @return the service ID.
     * @throws IllegalArgumentException if the port is out of range.
     */
    public static long serviceIdOf(final int port) {
        if (port < 0 || port > 0xFFFF) {
            throw new IllegalArgumentException("port must be in [0, 65535]: port=" + port);
        }
        return TCP_PORT_SPACE_BASE | port;
    }

    /**
     * Parse the textual form described in the class comment.
     *
     * @param text the text.
     * @return the address.
     * @throws IllegalArgumentException naming the problem if the text is not a valid address.
     */
    public static IbSocketAddress parse(final String text) {
        if (text == null) {
            throw new NullPointerException("text");
        }
        if (!text.regionMatches(true, 0, SCHEME, 0, SCHEME.length())) {
            throw bad(text, "must start with \"" + SCHEME + "\"");
        }
        if (text.length() <= SCHEME.length() || text.charAt(SCHEME.length()) != '[') {
            throw bad(text, "the GID must be enclosed in [ ]");
        }
        final int close = text.indexOf(']', SCHEME.length());
        if (close < 0) {
            throw bad(text, "missing ] after the GID");
        }
        final byte[] gid = Gids.parse(text, text.substring(SCHEME.length() + 1, close));
        final int query = text.indexOf('?', close);
        final String portPart = text.substring(close + 1, query < 0 ? text.length() : query);
        Long serviceId = null;
        if (!portPart.isEmpty()) {
            if (portPart.charAt(0) != ':' || portPart.length() == 1) {
                throw bad(text, "expected :PORT or ?sid= after the GID");
            }
            serviceId = TCP_PORT_SPACE_BASE | parseNumber(text, "port", portPart.substring(1), false, 0xFFFF);
        }
        int pkey = DEFAULT_PKEY;
        boolean pkeySeen = false;
        if (query >= 0) {
            for (final String parameter : text.substring(query + 1).split("&", -1)) {
                final int equals = parameter.indexOf('=');
                final String name = equals < 0 ? parameter : parameter.substring(0, equals).toLowerCase(Locale.ROOT);
                final String value = equals < 0 ? "" : parameter.substring(equals + 1);
                if ("pkey".equals(name) && !pkeySeen) {
                    pkey = (int) parseNumber(text, "pkey", value, true, 0xFFFF);
                    pkeySeen = true;
                } else if ("sid".equals(name) && serviceId == null) {
                    serviceId = parseNumber(text, "sid", value, true, -1L);
                } else if ("pkey".equals(name)) {
                    throw bad(text, "pkey given twice");
                } else if ("sid".equals(name)) {
                    throw bad(text, "sid given twice (a port stands for a sid)");
                } else {
                    throw bad(text, "unknown parameter \"" + name + "\" (expected pkey or sid)");
                }
            }
        }
        if (serviceId == null) {
            throw bad(text, "missing :PORT or ?sid=");
        }
        return new IbSocketAddress(gid, pkey, serviceId);
    }

    /**
     * The GID.
     *
     * @return a copy of the 16 bytes.
     */
    public byte[] gid() {
        return gid.clone();
    }

    /**
     * The partition key.
     *
     * @return the P_Key in [0, 0xFFFF].
     */
    public int pkey() {
        return pkey;
    }

    /**
     * The service ID.
     *
     * @return the 64-bit service ID.
     */
    public long serviceId() {
        return serviceId;
    }

    /**
     * Whether the service ID is of the stream port-space form {@code (0x0106L << 16) | port}.
     *
     * @return true if {@link #port()} is meaningful.
     */
    public boolean hasPort() {
        return (serviceId & ~0xFFFFL) == TCP_PORT_SPACE_BASE;
    }

    /**
     * The port of a stream port-space service ID.
     *
     * @return the port in [0, 65535], or -1 if {@link #hasPort()} is false.
     */
    public int port() {
        return hasPort() ? (int) (serviceId & 0xFFFF) : -1;
    }

    @Override
    public boolean equals(final Object other) {
        return other instanceof IbSocketAddress that
            && serviceId == that.serviceId && pkey == that.pkey && Arrays.equals(gid, that.gid);
    }

    @Override
    public int hashCode() {
        return (Arrays.hashCode(gid) * 31 + pkey) * 31 + Long.hashCode(serviceId);
    }

    /**
     * The textual form described in the class comment.
     *
     * @return e.g. {@code ib:[fe80::2:c903:a:b1c2]:7471}.
     */
    @Override
    public String toString() {
        final StringBuilder text = new StringBuilder(64).append(SCHEME).append('[');
        Gids.format(gid, text);
        text.append(']');
        char separator = '?';
        if (hasPort()) {
            text.append(':').append(port());
        } else {
            text.append("?sid=0x").append(Long.toHexString(serviceId));
            separator = '&';
        }
        if (pkey != DEFAULT_PKEY) {
            text.append(separator).append("pkey=0x").append(Integer.toHexString(pkey));
        }
        return text.toString();
    }

    private static long parseNumber(final String text, final String name, final String value, final boolean hex,
        final long max) {
        try {
            if (value.isEmpty() || value.charAt(0) == '+' || value.charAt(0) == '-') {
                throw new NumberFormatException();
            }
            final boolean isHex = hex && value.length() > 2 && value.charAt(0) == '0'
                && (value.charAt(1) == 'x' || value.charAt(1) == 'X');
            final long number = isHex ? Long.parseUnsignedLong(value.substring(2), 16) : Long.parseUnsignedLong(value);
            if (max >= 0 && (number < 0 || number > max)) {
                throw bad(text, name + " out of range [0, " + max + "]: " + name + "=" + value);
            }
            return number;
        } catch (final NumberFormatException ex) {
            throw bad(text, "bad " + name + " \"" + value + "\"");
        }
    }

    private static void checkPkey(final int pkey) {
        if (pkey < 0 || pkey > 0xFFFF) {
            throw new IllegalArgumentException("pkey must be in [0, 0xFFFF]: pkey=" + pkey);
        }
    }

    static IllegalArgumentException bad(final String text, final String problem) {
        return new IllegalArgumentException("invalid InfiniBand address \"" + text + "\": " + problem);
    }

    @Serial
    private Object writeReplace() {
        return new SerialForm(toString());
    }

    @Serial
    private void readObject(final ObjectInputStream in) throws InvalidObjectException {
        throw new InvalidObjectException("IbSocketAddress is serialized through its textual form");
    }

    /**
     * The serialized form: the textual form, parsed (and so validated) when read.
     */
    private record SerialForm(String text) implements Serializable {
        @Serial
        private Object readResolve() throws InvalidObjectException {
            try {
                return parse(text);
            } catch (final IllegalArgumentException | NullPointerException ex) {
                final InvalidObjectException failure = new InvalidObjectException(String.valueOf(ex.getMessage()));
                failure.initCause(ex);
                throw failure;
            }
        }
    }
}
