package io.rdmachannel.interop.dropin;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.ByteBuffer;

/**
 * An echo client over a plain {@link Socket}, which never goes through a {@code SelectorProvider}: it reaches a
 * server an NIO program bound under rdmachannel over TCP. Prints {@code OK <bytes>}, or {@code FAILED <exception>}
 * and exits 1.
 *
 * <p>Arguments: {@code address port size}.
 */
public final class PlainSocketEchoClient {
    private PlainSocketEchoClient() {
    }

    public static void main(final String[] args) {
        final int size = Integer.parseInt(args[2]);
        try (Socket socket = new Socket(InetAddress.getByName(args[0]), Integer.parseInt(args[1]))) {
            final ByteBuffer out = ByteBuffer.allocate(size);
            EchoPattern.fill(out, 0);
            final OutputStream output = socket.getOutputStream();
            final InputStream input = socket.getInputStream();
            final byte[] in = new byte[size];
            int done = 0;
            while (done < size) {
                final int chunk = Math.min(16 * 1024, size - done);
                output.write(out.array(), done, chunk);
                int got = 0;
                while (got < chunk) {
                    final int n = input.read(in, done + got, chunk - got);
                    if (n < 0) {
                        throw new IOException("end of stream after " + (done + got) + " of " + size + " bytes");
                    }
                    got += n;
                }
                done += chunk;
            }
            socket.shutdownOutput();
            if (input.read() != -1) {
                throw new IOException("the server sent more than the echo");
            }
            final long wrong = EchoPattern.check(ByteBuffer.wrap(in), 0);
            if (wrong >= 0) {
                throw new IOException("the echo differs at stream byte " + wrong);
            }
            System.out.println("OK " + size);
        } catch (final IOException | RuntimeException ex) {
            System.out.println("FAILED " + ex);
            System.exit(1);
        }
    }
}
