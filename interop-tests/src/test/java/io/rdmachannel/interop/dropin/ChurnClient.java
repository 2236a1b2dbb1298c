package io.rdmachannel.interop.dropin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;

import io.rdmachannel.nio.RdmaSocketChannel;
import io.rdmachannel.nio.RdmaSocketOptions;

/**
 * The client side of {@link ChurnTest}, an unmodified blocking NIO program (but for one check that a drop-in
 * connection did not fall back to TCP): {@code cycles} times it connects to an echo server, writes
 * {@link EchoPattern} bytes (64 B; every 50th cycle 256 KiB, which wraps the rings), reads them back, checks every
 * byte and closes. At each cycle in {@code pauses} (comma-separated) it prints
 * {@code PAUSED <cycle> <elapsed ms> <what it holds>} ({@link ProcessUsage}) and waits for a stdin line before it
 * goes on; at the end it prints {@code DONE <cycles> <elapsed ms>}; on any failure {@code FAILED ...} and exits 1.
 *
 * <p>Arguments: {@code address port cycles pauses}.
 */
public final class ChurnClient {
    private static final int LARGE = 256 * 1024;
    private static final int CHUNK = 16 * 1024;

    private ChurnClient() {
    }

    public static void main(final String[] args) throws IOException {
        final InetSocketAddress server = new InetSocketAddress(InetAddress.getByName(args[0]),
            Integer.parseInt(args[1]));
        final int cycles = Integer.parseInt(args[2]);
        final String pauses = "," + args[3] + ",";
        final BufferedReader stdin = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        final ByteBuffer out = ByteBuffer.allocateDirect(LARGE);
        final ByteBuffer in = ByteBuffer.allocateDirect(LARGE);
        final long start = System.nanoTime();
        int cycle = 0;
        try {
            for (; cycle < cycles; cycle++) {
                if (pauses.contains("," + cycle + ",")) {
                    System.out.println("PAUSED " + cycle + " " + (System.nanoTime() - start) / 1_000_000 + " "
                        + ProcessUsage.now());
                    // while paused: USAGE lines are answered with what it holds now; any other line resumes
                    String line;
                    while ((line = stdin.readLine()) != null && line.equals("USAGE")) {
                        System.out.println("USAGE " + ProcessUsage.now());
                    }
                    if (line == null) {
                        return;
                    }
                }
                echoOnce(server, out, in, cycle % 50 == 49 ? LARGE : 64);
            }
            System.out.println("DONE " + cycles + " " + (System.nanoTime() - start) / 1_000_000);
        } catch (final IOException | RuntimeException ex) {
            System.out.println("FAILED in cycle " + cycle + ": " + ex);
            ex.printStackTrace();
            System.exit(1);
        }
    }

    private static void echoOnce(final InetSocketAddress server, final ByteBuffer out, final ByteBuffer in,
        final int size) throws IOException {
        try (SocketChannel channel = SocketChannel.open(server)) {
            if (channel instanceof RdmaSocketChannel rdma && rdma.statistics().isEmpty()) {
                // the drop-in fell back to TCP: the churn would no longer measure RDMA connections
                throw new IOException("the connection to " + server + " fell back to TCP: "
                    + channel.getOption(RdmaSocketOptions.RDMA_PATH));
            }
            EchoPattern.fill(out.clear().limit(size), 0);
            in.clear();
            // a chunk at a time, each echoed in full before the next: neither side ever waits on a full ring
            while (out.position() < size) {
                out.limit(Math.min(size, out.position() + CHUNK));
                in.limit(out.limit());
                channel.write(out);
                while (in.hasRemaining()) {
                    if (channel.read(in) < 0) {
                        throw new IOException("end of stream after " + in.position() + " of " + size
                            + " echoed bytes");
                    }
                }
            }
            final long wrong = EchoPattern.check(in.flip(), 0);
            if (wrong >= 0) {
                throw new IOException("echoed byte " + wrong + " of " + size + " is wrong");
            }
        }
    }
}
