package io.rdmachannel.interop.dropin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Semaphore;
import java.util.zip.CRC32;

/**
 * The far end of {@code ContractAcrossProcessesTest}: an unmodified NIO program (blocking channels, a virtual thread
 * per connection) that plays one role per connection, chosen by the connection's first byte:
 * <ul>
 *   <li>{@code E} echo every byte; at end of stream shut the output down and close;</li>
 *   <li>{@code W n} write {@code n} bytes of {@link #pattern} and close (no shutdown first);</li>
 *   <li>{@code H n} write {@code n} bytes, shut the output down, then read to end of stream and report it;</li>
 *   <li>{@code S} read nothing until a stdin line {@code DRAIN} (one per such connection), then read to end of
 *   stream and report it;</li>
 * </ul>
 * {@code n} is a 4-byte big-endian count. A report is a line {@code RECEIVED <bytes> <crc32>}. Prints
 * {@code LISTENING <port> <channel>} first and {@code ACCEPTED <channel>} per connection; exits when stdin ends.
 *
 * <p>Arguments: {@code address}.
 */
public final class ContractPeer {
    /** One permit per {@code DRAIN} line: each lets one stalled connection read. */
    private static final Semaphore DRAIN = new Semaphore(0);

    private ContractPeer() {
    }

    public static void main(final String[] args) throws IOException {
        final ServerSocketChannel server = ServerSocketChannel.open();
        server.bind(new InetSocketAddress(InetAddress.getByName(args[0]), 0));
        System.out.println("LISTENING " + ((InetSocketAddress) server.getLocalAddress()).getPort() + " " + server);
        Thread.ofPlatform().daemon().start(ContractPeer::readCommands);
        while (true) {
            final SocketChannel accepted = server.accept();
            System.out.println("ACCEPTED " + accepted);
            Thread.ofVirtual().start(() -> serve(accepted));
        }
    }

    /** Byte {@code i} of what the roles write: the same on both sides of the test. */
    public static byte pattern(final long i) {
        return (byte) (i * 31 + (i >>> 8));
    }

    private static void readCommands() {
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = lines.readLine()) != null) {
                if ("DRAIN".equals(line)) {
                    DRAIN.release();
                }
            }
        } catch (final IOException ignore) {
            // the parent is gone
        }
        System.exit(0);
    }

    private static void serve(final SocketChannel channel) {
        try (channel) {
            final ByteBuffer role = read(channel, 1);
            switch (role.get()) {
                case 'E' -> echo(channel);
                case 'W' -> writePattern(channel, read(channel, 4).getInt());
                case 'H' -> {
                    writePattern(channel, read(channel, 4).getInt());
                    channel.shutdownOutput();
                    report(channel);
                }
                case 'S' -> {
                    DRAIN.acquire();
                    report(channel);
                }
                default -> System.out.println("FAILED unknown role");
            }
        } catch (final IOException | RuntimeException ex) {
            System.out.println("FAILED " + ex);
        } catch (final InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
    }

    private static ByteBuffer read(final SocketChannel channel, final int count) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(count);
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new IOException("end of stream before the role's " + count + " bytes");
            }
        }
        return buffer.flip();
    }

    private static void echo(final SocketChannel channel) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocateDirect(64 * 1024);
        while (channel.read(buffer.clear()) >= 0) {
            buffer.flip();
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        }
        channel.shutdownOutput();
    }

    private static void writePattern(final SocketChannel channel, final int count) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
        long written = 0;
        while (written < count) {
            buffer.clear();
            final int chunk = (int) Math.min(buffer.capacity(), count - written);
            for (int i = 0; i < chunk; i++) {
                buffer.put(pattern(written + i));
            }
            buffer.flip();
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
            written += chunk;
        }
    }

    private static void report(final SocketChannel channel) throws IOException {
        final ByteBuffer buffer = ByteBuffer.allocate(64 * 1024);
        final CRC32 crc = new CRC32();
        long total = 0;
        int read;
        while ((read = channel.read(buffer.clear())) >= 0) {
            crc.update(buffer.flip());
            total += read;
        }
        System.out.println("RECEIVED " + total + " " + crc.getValue());
    }
}
