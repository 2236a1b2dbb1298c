package io.rdmachannel.channel;

/**
 * Parsing and printing of GIDs in IPv6 text form (RFC 4291 section 2.2 in, RFC 5952 out), without any name lookup.
 */
final class Gids {
    private static final int GROUPS = 8;

    private Gids() {
    }

    static byte[] parse(final String text, final String gidText) {
        final byte[] gid = new byte[IbSocketAddress.GID_LENGTH];
        if (gidText.isEmpty()) {
            throw IbSocketAddress.bad(text, "empty GID");
        }
        final int compression = gidText.indexOf("::");
        if (compression >= 0 && gidText.indexOf("::", compression + 1) >= 0) {
            throw IbSocketAddress.bad(text, "more than one :: in the GID");
        }
        final int[] groups = new int[GROUPS];
        int head;
        int tail = 0;
        final int[] tailGroups = new int[GROUPS];
        if (compression >= 0) {
            head = groups(text, gidText.substring(0, compression), groups, false);
            tail = groups(text, gidText.substring(compression + 2), tailGroups, true);
            if (head + tail > GROUPS - 1) {
                throw IbSocketAddress.bad(text, "too many groups in the GID");
            }
        } else {
            head = groups(text, gidText, groups, true);
            if (head != GROUPS) {
                throw IbSocketAddress.bad(text, "the GID needs 8 groups or a ::");
            }
        }
        System.arraycopy(tailGroups, 0, groups, GROUPS - tail, tail);
        for (int i = 0; i < GROUPS; i++) {
            gid[2 * i] = (byte) (groups[i] >>> 8);
            gid[2 * i + 1] = (byte) groups[i];
        }
        return gid;
    }

    private static int groups(final String text, final String part, final int[] groups, final boolean last) {
        if (part.isEmpty()) {
            return 0;
        }
        final String[] fields = part.split(":", -1);
        int count = 0;
        for (int i = 0; i < fields.length; i++) {
            final String field = fields[i];
            if (last && i == fields.length - 1 && field.indexOf('.') >= 0) {
                checkRoom(text, count + 2);
                final int ipv4 = ipv4(text, field);
                groups[count++] = ipv4 >>> 16;
                groups[count++] = ipv4 & 0xFFFF;
            } else {
                checkRoom(text, count + 1);
                groups[count++] = group(text, field);
            }
        }
        return count;
    }

    private static void checkRoom(final String text, final int count) {
        if (count > GROUPS) {
            throw IbSocketAddress.bad(text, "too many groups in the GID");
        }
    }

    private static int group(final String text, final String field) {
        if (field.isEmpty() || field.length() > 4) {
            throw IbSocketAddress.bad(text, "bad GID group \"" + field + "\"");
        }
        int value = 0;
        for (int i = 0; i < field.length(); i++) {
            final int digit = Character.digit(field.charAt(i), 16);
            if (digit < 0) {
                throw IbSocketAddress.bad(text, "bad GID group \"" + field + "\"");
            }
            value = value << 4 | digit;
        }
        return value;
    }

    private static int ipv4(final String text, final String field) {
        final String[] octets = field.split("\\.", -1);
        if (octets.length != 4) {
            throw IbSocketAddress.bad(text, "bad dotted IPv4 tail \"" + field + "\"");
        }
        int value = 0;
        for (final String octet : octets) {
            if (octet.isEmpty() || octet.length() > 3 || !octet.chars().allMatch(c -> c >= '0' && c <= '9')) {
                throw IbSocketAddress.bad(text, "bad dotted IPv4 tail \"" + field + "\"");
            }
            final int number = Integer.parseInt(octet);
            if (number > 255) {
                throw IbSocketAddress.bad(text, "bad dotted IPv4 tail \"" + field + "\"");
            }
            value = value << 8 | number;
        }
        return value;
    }

    static void format(final byte[] gid, final StringBuilder out) {
        final int[] groups = new int[GROUPS];
        for (int i = 0; i < GROUPS; i++) {
            groups[i] = (gid[2 * i] & 0xFF) << 8 | gid[2 * i + 1] & 0xFF;
        }
        int bestStart = -1;
        int bestLength = 1;
        for (int i = 0; i < GROUPS; i++) {
            int j = i;
            while (j < GROUPS && groups[j] == 0) {
                j++;
            }
            if (j - i > bestLength) {
                bestStart = i;
                bestLength = j - i;
            }
            i = Math.max(i, j);
        }
        for (int i = 0; i < GROUPS; i++) {
            if (i == bestStart) {
                out.append("::");
                i += bestLength - 1;
                continue;
            }
            if (i > 0 && i != bestStart + bestLength) {
                out.append(':');
            }
            out.append(Integer.toHexString(groups[i]));
        }
    }
}
