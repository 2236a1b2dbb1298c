package io.rdmachannel.channel.spi;

import io.rdmachannel.channel.cm.ConnectionManager;

import java.io.IOException;
import java.util.List;

/**
 * An implementation of the verbs: real hardware through libibverbs ({@code native}) or the embedded shared-memory
 * transport ({@code shm}). Found with {@link java.util.ServiceLoader}; see {@link RdmaProviders}.
 *
 * <p>A provider class must load without its native libraries: availability is computed once and reported by
 * {@link #isAvailable()} and {@link #unavailabilityCause()} instead of failing at class initialisation.
 */
public interface RdmaProvider {
    /**
     * The stable name used to select this provider, e.g. {@code shm} or {@code native}.
     *
     * @return the provider name.
     */
    String name();

    /**
     * Whether this provider can open devices on this machine.
     *
     * @return true if {@link #openDevice(String)} can succeed.
     */
    boolean isAvailable();

    /**
     * Why the provider is unavailable.
     *
     * @return the cause, or {@code null} when the provider is available.
     */
    Throwable unavailabilityCause();

    /**
     * Throw if the provider is not available.
     *
     * @throws IllegalStateException naming the provider, with the {@link #unavailabilityCause()} as cause.
     */
    default void ensureAvailability() {
        if (!isAvailable()) {
            throw new IllegalStateException("RDMA provider '" + name() + "' is not available: "
                + unavailabilityCause().getMessage(), unavailabilityCause());
        }
    }

    /**
     * The names of the devices this provider can open.
     *
     * @return device names, first the default device.
     * @throws IOException if the devices cannot be listed.
     */
    List<String> deviceNames() throws IOException;

    /**
     * Open a device. The caller owns the returned device and must close it.
     *
     * @param name a name from {@link #deviceNames()}, or {@code null} for the default device.
     * @return the opened device.
     * @throws IOException if the device cannot be opened.
     * @throws IllegalArgumentException if no device has that name.
     */
    RdmaDevice openDevice(String name) throws IOException;

    /**
     * The connection managers this provider offers.
     *
     * @return their names, the default first.
     */
    List<String> connectionManagerNames();

    /**
     * Open a connection manager. It opens the devices it needs and closes them when it is closed.
     *
     * @param name a name from {@link #connectionManagerNames()}, or {@code null} for the default.
     * @return the connection manager, owned by the caller.
     * @throws IOException if it cannot start.
     * @throws IllegalArgumentException if the provider has no connection manager of that name.
     */
    ConnectionManager openConnectionManager(String name) throws IOException;
}
