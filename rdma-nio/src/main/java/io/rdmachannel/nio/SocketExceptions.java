package io.rdmachannel.nio;

import java.io.IOException;
import java.net.SocketException;
import java.nio.channels.AlreadyBoundException;
import java.nio.channels.AlreadyConnectedException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NotYetBoundException;
import java.nio.channels.NotYetConnectedException;
import java.nio.channels.UnresolvedAddressException;
import java.nio.channels.UnsupportedAddressTypeException;

/**
 * The adaptors' translation of channel exceptions into the socket API's (the JDK's Net.translateToSocketException).
 */
final class SocketExceptions {
    private SocketExceptions() {
    }

    /**
     * Rethrow as the socket API would: IOExceptions as they are, the channel runtime exceptions as SocketExceptions.
     */
    static IOException translate(final Exception failure) throws IOException {
        if (failure instanceof IOException io) {
            throw io;
        }
        throw toSocketException(failure);
    }

    /**
     * Rethrow as a SocketException (or as the runtime exception it is, if it has no socket meaning).
     */
    static SocketException toSocketException(final Exception failure) throws SocketException {
        if (failure instanceof SocketException socket) {
            throw socket;
        }
        final String message;
        if (failure instanceof ClosedChannelException) {
            message = "Socket is closed";
        } else if (failure instanceof NotYetConnectedException) {
            message = "Socket is not connected";
        } else if (failure instanceof AlreadyBoundException) {
            message = "Already bound";
        } else if (failure instanceof AlreadyConnectedException) {
            message = "Already connected";
        } else if (failure instanceof NotYetBoundException) {
            message = "Socket is not bound yet";
        } else if (failure instanceof UnsupportedAddressTypeException) {
            message = "Unsupported address type";
        } else if (failure instanceof UnresolvedAddressException) {
            message = "Unresolved address";
        } else if (failure instanceof IOException) {
            message = failure.getMessage();
        } else if (failure instanceof RuntimeException runtime) {
            throw runtime;
        } else {
            throw new IllegalStateException("Untranslated exception", failure);
        }
        final SocketException translated = new SocketException(message);
        translated.initCause(failure);
        throw translated;
    }
}
