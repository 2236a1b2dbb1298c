package io.rdmachannel.nio;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.SocketAddress;
import java.net.SocketException;
import java.net.SocketImpl;

/**
 * The impl the socket adaptors give their superclass so that it never creates a platform TCP socket; the adaptors
 * override every public method, so nothing here is reached in normal use.
 */
final class DummySocketImpl extends SocketImpl {

    private static SocketException unsupported() {
        return new SocketException("Not supported by an RDMA socket adaptor");
    }

    @Override
    protected void create(final boolean stream) throws IOException {
        throw unsupported();
    }

    @Override
    protected void connect(final String host, final int port) throws IOException {
        throw unsupported();
    }

    @Override
    protected void connect(final InetAddress address, final int port) throws IOException {
        throw unsupported();
    }

    @Override
    protected void connect(final SocketAddress address, final int timeout) throws IOException {
        throw unsupported();
    }

    @Override
    protected void bind(final InetAddress host, final int port) throws IOException {
        throw unsupported();
    }

    @Override
    protected void listen(final int backlog) throws IOException {
        throw unsupported();
    }

    @Override
    protected void accept(final SocketImpl s) throws IOException {
        throw unsupported();
    }

    @Override
    protected InputStream getInputStream() throws IOException {
        throw unsupported();
    }

    @Override
    protected OutputStream getOutputStream() throws IOException {
        throw unsupported();
    }

    @Override
    protected int available() throws IOException {
        throw unsupported();
    }

    @Override
    protected void close() throws IOException {
        // nothing was opened
    }

    @Override
    protected void sendUrgentData(final int data) throws IOException {
        throw unsupported();
    }

    @Override
    public void setOption(final int optID, final Object value) throws SocketException {
        throw unsupported();
    }

    @Override
    public Object getOption(final int optID) throws SocketException {
        throw unsupported();
    }
}
