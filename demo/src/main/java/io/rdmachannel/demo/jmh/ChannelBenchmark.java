package io.rdmachannel.demo.jmh;

import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;
import io.rdmachannel.nio.RdmaSelectorProvider;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The NIO channels on the shm provider: a connected pair of {@code RdmaSocketChannel}s (a client and the channel its
 * listener accepted, on the loopback address). One operation writes {@code size} bytes on the client and reads them
 * all on the accepted channel, on the benchmark's thread: blocking channels write everything and then read until
 * done; non-blocking ones alternate write and read attempts.
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JmhSupport.ADD_EXPORTS, JmhSupport.ADD_EXPORTS_VALUE,
    JmhSupport.ENABLE_NATIVE_ACCESS})
public class ChannelBenchmark {
    /** Bytes written and read per operation. */
    @Param({"64", "65536"})
    public int size;

    /** Blocking channels, or non-blocking ones. */
    @Param({"true", "false"})
    public boolean blocking;

    /** Direct byte buffers, or heap ones. */
    @Param({"true", "false"})
    public boolean direct;

    private StreamTransport transport;
    private ServerSocketChannel listener;
    private SocketChannel client;
    private SocketChannel server;
    private ByteBuffer source;
    private ByteBuffer destination;

    /**
     * Listen on the loopback address, connect a client and accept it; then set the blocking mode.
     *
     * @throws IOException if a step fails.
     */
    @Setup(Level.Trial)
    public void open() throws IOException {
        source = direct ? ByteBuffer.allocateDirect(size) : ByteBuffer.allocate(size);
        destination = direct ? ByteBuffer.allocateDirect(size) : ByteBuffer.allocate(size);
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        try {
            final RdmaSelectorProvider provider = new RdmaSelectorProvider(transport);
            listener = provider.openServerSocketChannel()
                .bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            client = provider.openSocketChannel();
            client.connect(listener.getLocalAddress());
            server = listener.accept();
            client.configureBlocking(blocking);
            server.configureBlocking(blocking);
        } catch (final IOException | RuntimeException ex) {
            close();
            throw ex;
        }
    }

    /**
     * Close the channels, the listener and the transport.
     *
     * @throws IOException if a close fails.
     */
    @TearDown(Level.Trial)
    public void close() throws IOException {
        try {
            if (client != null) {
                client.close();
            }
            if (server != null) {
                server.close();
            }
            if (listener != null) {
                listener.close();
            }
        } finally {
            client = null;
            server = null;
            listener = null;
            if (transport != null) {
                StreamTransports.close(transport);
                transport = null;
            }
        }
    }

    /**
     * Write {@code size} bytes on the client and read them all on the accepted channel.
     *
     * @return the bytes read.
     * @throws IOException if the channels fail.
     */
    @Benchmark
    public int writeAndRead() throws IOException {
        final ByteBuffer src = source.clear();
        final ByteBuffer dst = destination.clear();
        if (blocking) {
            client.write(src);
            while (dst.hasRemaining()) {
                checkOpen(server.read(dst), dst);
            }
            return dst.position();
        }
        int idleRounds = 0;
        while (dst.hasRemaining()) {
            final int written = src.hasRemaining() ? client.write(src) : 0;
            if (checkOpen(server.read(dst), dst) + written == 0) {
                idleRounds = JmhSupport.idle(idleRounds, client);
            }
        }
        return dst.position();
    }

    private int checkOpen(final int read, final ByteBuffer dst) throws EOFException {
        if (read < 0) {
            throw new EOFException("end of stream after " + dst.position() + " bytes: " + server);
        }
        return read;
    }
}
