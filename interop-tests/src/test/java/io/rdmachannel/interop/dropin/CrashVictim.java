package io.rdmachannel.interop.dropin;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * A program killed with SIGKILL by {@link PeerCrashTest}, an unmodified NIO program (rdmachannel is its JVM-wide
 * provider). It opens {@link #HELD} connections that stream {@link EchoPattern} bytes, prints {@code RUNNING}, then
 * keeps busy until it dies, by phase:
 * <ul>
 *   <li>{@code transfer}: the held connections keep streaming;</li>
 *   <li>{@code connecting}: new connections are opened one after the other (the oldest closed past 16 open);</li>
 *   <li>{@code closing}: connections are opened, sent a few bytes and closed, one after the other.</li>
 * </ul>
 * Arguments: {@code address port phase}.
 */
public final class CrashVictim {
    /** Connections opened before {@code RUNNING}, streaming in every phase. */
    static final int HELD = 3;

    private CrashVictim() {
    }

    public static void main(final String[] args) throws IOException {
        final InetSocketAddress server = new InetSocketAddress(InetAddress.getByName(args[0]),
            Integer.parseInt(args[1]));
        final String phase = args[2];
        for (int i = 0; i < HELD; i++) {
            final SocketChannel channel = SocketChannel.open(server);
            Thread.ofPlatform().daemon().name("stream-" + i).start(() -> stream(channel, phase.equals("transfer")));
        }
        System.out.println("RUNNING");
        System.out.flush();
        final Deque<SocketChannel> open = new ArrayDeque<>();
        while (true) {
            switch (phase) {
                case "connecting" -> {
                    open.add(SocketChannel.open(server));
                    if (open.size() > 16) {
                        open.poll().close();
                    }
                }
                case "closing" -> {
                    try (SocketChannel channel = SocketChannel.open(server)) {
                        final ByteBuffer bytes = ByteBuffer.allocate(100);
                        EchoPattern.fill(bytes, 0);
                        channel.write(bytes);
                    }
                }
                default -> Thread.onSpinWait();
            }
        }
    }

    /**
     * Write the pattern: without end when {@code forever}, else one 64 KiB burst, then stay connected.
     */
    private static void stream(final SocketChannel channel, final boolean forever) {
        final ByteBuffer out = ByteBuffer.allocateDirect(64 * 1024);
        long position = 0;
        try {
            do {
                EchoPattern.fill(out.clear(), position);
                while (out.hasRemaining()) {
                    position += channel.write(out);
                }
            } while (forever);
            Thread.sleep(Long.MAX_VALUE);
        } catch (final IOException | InterruptedException ex) {
            System.out.println("FAILED " + ex);
        }
    }
}
