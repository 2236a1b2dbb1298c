package io.rdmachannel.demo.jmh;

import io.rdmachannel.channel.RegisteredBuffers;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.stream.ReadinessObserver;
import io.rdmachannel.channel.stream.StreamConnection;
import io.rdmachannel.channel.stream.StreamConnector;
import io.rdmachannel.channel.stream.StreamListener;
import io.rdmachannel.channel.stream.StreamOptions;
import io.rdmachannel.channel.stream.StreamTransport;
import io.rdmachannel.channel.stream.StreamTransports;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
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
 * The stream engine on the shm provider, without the NIO face: a connected pair of stream connections of one
 * transport. One operation writes {@code size} bytes on one connection and reads them all on the other, on the
 * benchmark's thread (the engine polls completions in the caller's thread, so both ends make progress).
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {JmhSupport.ADD_EXPORTS, JmhSupport.ADD_EXPORTS_VALUE,
    JmhSupport.ENABLE_NATIVE_ACCESS})
public class StreamRingBenchmark {
    /** Bytes written and read per operation. */
    @Param({"64", "65536"})
    public int size;

    /** Whether the source is a {@link RegisteredBuffers} buffer, sent without the copy into the send ring. */
    @Param({"false", "true"})
    public boolean registered;

    private StreamTransport transport;
    private StreamListener listener;
    private StreamConnection client;
    private StreamConnection server;
    private ByteBuffer source;
    private ByteBuffer destination;

    /**
     * Open a transport, listen on the loopback address and connect one pair.
     *
     * @throws IOException if a step fails.
     */
    @Setup(Level.Trial)
    public void open() throws IOException {
        source = registered ? RegisteredBuffers.allocate(size) : ByteBuffer.allocateDirect(size);
        destination = ByteBuffer.allocateDirect(size);
        final ReadinessObserver ignored = () -> {
            // set-up polls; the data path never waits
        };
        transport = StreamTransports.open(RdmaProviders.byName("shm"));
        try {
            listener = transport.listen(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 8,
                new StreamOptions(), ignored);
            final StreamConnector connector = transport.connect(listener.localAddress(), null, new StreamOptions(),
                ignored);
            try {
                JmhSupport.await("the connection", () -> (client = finish(connector)) != null);
            } finally {
                connector.close();
            }
            JmhSupport.await("the accepted connection", () -> (server = accept(listener, ignored)) != null);
        } catch (final IOException | RuntimeException ex) {
            close();
            throw ex;
        }
    }

    private static StreamConnection finish(final StreamConnector connector) {
        try {
            return connector.finish();
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    private static StreamConnection accept(final StreamListener listener, final ReadinessObserver observer) {
        try {
            return listener.accept(observer);
        } catch (final IOException ex) {
            throw new UncheckedIOException(ex);
        }
    }

    /**
     * Close both connections, the listener and the transport.
     */
    @TearDown(Level.Trial)
    public void close() {
        if (client != null) {
            client.close();
            client = null;
        }
        if (server != null) {
            server.close();
            server = null;
        }
        if (listener != null) {
            listener.close();
            listener = null;
        }
        if (transport != null) {
            StreamTransports.close(transport);
            transport = null;
        }
        if (registered && source != null) {
            RegisteredBuffers.release(source);
            source = null;
        }
    }

    /**
     * Write {@code size} bytes on the client and read them all on the server.
     *
     * @return the bytes read.
     * @throws IOException if the stream fails.
     */
    @Benchmark
    public int writeAndRead() throws IOException {
        final ByteBuffer src = source.clear();
        final ByteBuffer dst = destination.clear();
        int idleRounds = 0;
        while (dst.hasRemaining()) {
            final int written = src.hasRemaining() ? client.write(src) : 0;
            final int read = server.read(dst);
            if (read < 0) {
                throw new IOException("end of stream after " + dst.position() + " bytes: " + server.describe());
            }
            if (read + written == 0) {
                idleRounds = JmhSupport.idle(idleRounds, client);
            }
        }
        return dst.position();
    }
}
