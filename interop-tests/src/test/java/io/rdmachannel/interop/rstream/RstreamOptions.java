package io.rdmachannel.interop.rstream;

import java.util.List;

/**
 * The command line of {@link JavaRstream}, parsed like rstream's {@code getopt("s:b:f:B:i:I:C:S:p:k:T:")}: an
 * option's value is either the rest of its word ({@code -p7471}) or the next word ({@code -p 7471}).
 *
 * <p>Supported: {@code -s -b -p -B -i -I -C -S} (a number or {@code all}), {@code -f ip|ipv6|name} and
 * {@code -T s|a|b|n|v} (or their long words), each {@code -T} taking one letter and repeatable. Not supported:
 * {@code -f gid}, {@code -k}, {@code -T f} and {@code -T r}; they are usage errors.
 *
 * <p>Two settings exist only for tests and have no flag: a divisor for the default mode's counts (so the full
 * two-connection run stays short; both sides must use the same one) and a byte of the outgoing stream to corrupt.
 */
final class RstreamOptions {

    /** rstream's default port. */
    static final int DEFAULT_PORT = 7471;
    /** What rstream sets SO_SNDBUF and SO_RCVBUF to when {@code -B} is not given: 512 KiB. */
    static final int DEFAULT_BUFFER_SIZE = 1 << 19;
    /** rstream's default inline size of the latency connection. */
    static final int DEFAULT_INLINE_SIZE = 64;

    static final String USAGE = String.join(System.lineSeparator(), List.of(
        "usage: JavaRstream",
        "\t[-s server_address]",
        "\t[-b bind_address]",
        "\t[-f address_format]",
        "\t    name, ip, or ipv6",
        "\t[-B buffer_size]",
        "\t[-i inline_size]",
        "\t[-I iterations]",
        "\t[-C transfer_count]",
        "\t[-S transfer_size or all]",
        "\t[-p port_number]",
        "\t[-T test_option]",
        "\t    s|sockets - use standard tcp/ip sockets (the JDK's channels)",
        "\t    a|async - asynchronous operation (select before every call)",
        "\t    b|blocking - use blocking calls",
        "\t    n|nonblocking - use nonblocking calls",
        "\t    v|verify - verify data"));

    private String serverAddress;
    private String bindAddress;
    private int port = DEFAULT_PORT;
    private int bufferSize;
    private int inlineSize = DEFAULT_INLINE_SIZE;
    private int iterations = 1;
    private int transferCount = 1000;
    private int transferSize = 1000;
    private boolean custom;
    private boolean allSizes;
    private boolean sockets;
    private boolean async;
    private boolean blocking;
    private boolean verify;
    private int countDivisor = 1;
    private long corruptedSentByte = -1;

    private RstreamOptions() {
    }

    /**
     * Parses a command line.
     *
     * @param args the arguments.
     * @return the options.
     * @throws IllegalArgumentException on a usage error, with what was wrong.
     */
    static RstreamOptions parse(final String... args) {
        final RstreamOptions options = new RstreamOptions();
        for (int i = 0; i < args.length; i++) {
            final String arg = args[i];
            if (arg.length() < 2 || arg.charAt(0) != '-' || "svbfBiICSpT".indexOf(arg.charAt(1)) < 0) {
                throw new IllegalArgumentException("unknown argument: " + arg);
            }
            final String value;
            if (arg.length() > 2) {
                value = arg.substring(2);
            } else if (i + 1 < args.length) {
                value = args[++i];
            } else {
                throw new IllegalArgumentException("option requires an argument: " + arg);
            }
            options.apply(arg.charAt(1), value);
        }
        return options;
    }

    private void apply(final char option, final String value) {
        switch (option) {
            case 's' -> serverAddress = value;
            case 'b' -> bindAddress = value;
            case 'f' -> checkAddressFormat(value);
            case 'B' -> bufferSize = number(option, value);
            case 'i' -> inlineSize = number(option, value);
            case 'I' -> {
                custom = true;
                iterations = number(option, value);
            }
            case 'C' -> {
                custom = true;
                transferCount = number(option, value);
            }
            case 'S' -> {
                if (value.regionMatches(true, 0, "all", 0, 3)) {
                    allSizes = true;
                } else {
                    custom = true;
                    transferSize = number(option, value);
                }
            }
            case 'p' -> port = number(option, value);
            case 'T' -> applyTestOption(value);
            default -> throw new IllegalArgumentException("unknown option: -" + option);
        }
    }

    private void applyTestOption(final String value) {
        final String word = value.length() == 1 ? value : value.toLowerCase(java.util.Locale.ROOT);
        if (word.equals("s") || word.startsWith("socket")) {
            sockets = true;
        } else if (word.equals("a") || word.startsWith("async")) {
            async = true;
        } else if (word.equals("b") || word.startsWith("block")) {
            blocking = true;
        } else if (word.equals("n") || word.startsWith("nonblock")) {
            blocking = false;
        } else if (word.equals("v") || word.startsWith("verify")) {
            verify = true;
        } else {
            throw new IllegalArgumentException("unsupported test option: -T " + value);
        }
    }

    private static void checkAddressFormat(final String value) {
        final String format = value.toLowerCase(java.util.Locale.ROOT);
        if (!format.startsWith("ip") && !format.startsWith("name")) {
            throw new IllegalArgumentException("unsupported address format: -f " + value);
        }
    }

    private static int number(final char option, final String value) {
        final int number;
        try {
            number = Integer.parseInt(value.trim());
        } catch (final NumberFormatException e) {
            throw new IllegalArgumentException("not a number: -" + option + " " + value, e);
        }
        if (number < (option == 'i' || option == 'p' || option == 'B' ? 0 : 1)) {
            throw new IllegalArgumentException("out of range: -" + option + " " + value);
        }
        return number;
    }

    /**
     * Test hook: divide the default mode's transfer counts and iterations by {@code divisor} (at least 1 remains).
     *
     * @param divisor at least 1.
     * @return these options.
     */
    RstreamOptions countDivisor(final int divisor) {
        if (divisor < 1) {
            throw new IllegalArgumentException("count divisor must be at least 1: divisor=" + divisor);
        }
        countDivisor = divisor;
        return this;
    }

    /**
     * Test hook: corrupt one byte of everything this process sends (with {@code -T v} the peer's check fails).
     *
     * @param index the byte's 0-based index over the process's outgoing stream, sync messages included.
     * @return these options.
     */
    RstreamOptions corruptSentByte(final long index) {
        if (index < 0) {
            throw new IllegalArgumentException("corrupted byte index must be at least 0: index=" + index);
        }
        corruptedSentByte = index;
        return this;
    }

    /** @return the address to connect to, or null for a server. */
    String serverAddress() {
        return serverAddress;
    }

    boolean isClient() {
        return serverAddress != null;
    }

    /** @return the bind address, or null for none (a server then listens on the wildcard address). */
    String bindAddress() {
        return bindAddress;
    }

    int port() {
        return port;
    }

    /** @return the value of SO_SNDBUF and SO_RCVBUF as rstream sets them: {@code -B}, or 512 KiB. */
    int bufferSize() {
        return bufferSize != 0 ? bufferSize : DEFAULT_BUFFER_SIZE;
    }

    int inlineSize() {
        return inlineSize;
    }

    boolean isCustom() {
        return custom;
    }

    boolean allSizes() {
        return allSizes;
    }

    boolean useSockets() {
        return sockets;
    }

    boolean isAsync() {
        return async;
    }

    boolean isBlocking() {
        return blocking;
    }

    boolean verify() {
        return verify;
    }

    long corruptedSentByte() {
        return corruptedSentByte;
    }

    /** @return the single test of custom mode. */
    TestSpec customTest() {
        return new TestSpec("custom", transferSize, transferCount, iterations);
    }

    /** @return the default mode's tests of the first (latency) connection. */
    List<TestSpec> latencyTests() {
        return TestPlan.latencyTests(allSizes, countDivisor);
    }

    /** @return the default mode's tests of the second (bandwidth) connection. */
    List<TestSpec> bandwidthTests() {
        return TestPlan.bandwidthTests(allSizes, countDivisor);
    }
}
