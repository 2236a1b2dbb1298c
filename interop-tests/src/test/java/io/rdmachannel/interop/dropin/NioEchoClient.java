package io.rdmachannel.interop.dropin;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * An unmodified NIO echo client: {@code SocketChannel.open(address)} (blocking), then messages of the given sizes
 * written and read back with their content checked, then a half-close and the server's end of stream. Prints
 * {@code PATH <channel>} once connected, {@code OK <bytes>} at the end, or {@code FAILED <exception>} and exits 1.
 *
 * <p>Arguments: {@code address port size...}.
 */
public final class NioEchoClient {
    private static final int CHUNK = 16 * 1024;

    private NioEchoClient() {
    }

    public static void main(final String[] args) {
        try {
            final InetSocketAddress server = new InetSocketAddress(InetAddress.getByName(args[0]),
                Integer.parseInt(args[1]));
            long total = 0;
            try (SocketChannel channel = SocketChannel.open(server)) {
                System.out.println("PATH " + channel);
                for (int i = 2; i < args.length; i++) {
                    total += echo(channel, Integer.parseInt(args[i]), total);
                }
                channel.shutdownOutput();
                if (channel.read(ByteBuffer.allocate(1)) != -1) {
                    throw new IOException("the server sent more than the echo");
                }
            }
            System.out.println("OK " + total);
        } catch (final IOException | RuntimeException ex) {
            System.out.println("FAILED " + ex);
            System.exit(1);
        }
    }

    /**
     * Echo one message in chunks of at most {@link #CHUNK} bytes, each read back before the next is written: a
     * single-threaded blocking client must not write more than the two sides buffer.
     */
    private static int echo(final SocketChannel channel, final int size, final long position) throws IOException {
        final ByteBuffer out = ByteBuffer.allocateDirect(size);
        EchoPattern.fill(out, position);
        final ByteBuffer in = ByteBuffer.allocate(size);
        while (out.hasRemaining()) {
            final int chunk = Math.min(CHUNK, out.remaining());
            channel.write(out.slice(out.position(), chunk));
            out.position(out.position() + chunk);
            in.limit(in.position() + chunk);
            while (in.hasRemaining()) {
                if (channel.read(in) < 0) {
                    throw new IOException("end of stream after " + in.position() + " of " + size + " bytes echoed");
                }
            }
        }
        final long wrong = EchoPattern.check(in.flip(), position);
        if (wrong >= 0) {
            throw new IOException("the echo differs at stream byte " + wrong);
        }
        return size;
    }
}
