package io.rdmachannel.interop.contract;

import java.nio.channels.SocketChannel;

/**
 * One side of a data test: a connected channel with what it sends and what it expects to receive.
 *
 * @param name     the side's name in thread names and state dumps.
 * @param channel  the connected channel.
 * @param sender   what it sends then shuts down output after, or null to send nothing (output is left open).
 * @param receiver what it reads until end of stream, or null to read nothing.
 */
record Endpoint(String name, SocketChannel channel, PatternSender sender, PatternReceiver receiver) {

    /**
     * Registers the side's counters with a test's state.
     *
     * @param state the test's state.
     * @return this endpoint.
     */
    Endpoint watchedBy(final ConnectionState state) {
        state.watch(name + ".channel", () -> channel);
        if (sender != null) {
            state.watch(name + ".sender", () -> sender);
        }
        if (receiver != null) {
            state.watch(name + ".receiver", () -> receiver);
        }
        return this;
    }
}
