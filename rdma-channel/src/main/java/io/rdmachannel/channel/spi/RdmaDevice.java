package io.rdmachannel.channel.spi;

import java.io.IOException;
import java.nio.file.Path;

/**
 * An opened RDMA device (an {@code ibv_context}). Closing it closes nothing it created: every object has one owner
 * and is closed by it, in reverse order of creation.
 */
public interface RdmaDevice extends AutoCloseable {
    /**
     * The device name, e.g. {@code mlx5_0}, {@code rxe0} or {@code shm0}.
     *
     * @return the name.
     */
    String name();

    /**
     * The provider that opened this device.
     *
     * @return the provider.
     */
    RdmaProvider provider();

    /**
     * Limits and capabilities of the device.
     *
     * @return the attributes, read once when the device was opened.
     */
    DeviceAttributes attributes();

    /**
     * A GID of a port: the address a peer needs to reach queue pairs of this device.
     *
     * @param portNumber the port, from 1.
     * @param index the GID table index, from 0.
     * @return a new 16-byte array.
     * @throws IOException if the GID cannot be read.
     */
    byte[] queryGid(int portNumber, int index) throws IOException;

    /**
     * Allocate a protection domain.
     *
     * @return a new protection domain owned by the caller.
     * @throws IOException if the device refuses.
     */
    ProtectionDomain allocateProtectionDomain() throws IOException;

    /**
     * Create a readiness source: a waitable set that armed completion queues signal.
     *
     * @return a new readiness source owned by the caller.
     * @throws IOException if the device refuses.
     */
    ReadinessSource createReadinessSource() throws IOException;

    /**
     * Create a completion queue.
     *
     * @param entries the minimum number of completions it can hold; at least 1.
     * @param readinessSource the source to signal when the queue is armed and a completion arrives, or {@code null}
     *     for a queue that is only polled.
     * @param token the value handed to {@link ReadinessSource.ReadyHandler#onReady(long)} for this queue.
     * @return a new completion queue owned by the caller.
     * @throws IOException if the device refuses.
     * @throws IllegalArgumentException if {@code entries} is out of the device's range.
     */
    CompletionQueue createCompletionQueue(int entries, ReadinessSource readinessSource, long token) throws IOException;

    /**
     * Open an XRC domain shared by the processes of this host ({@code ibv_open_xrcd}): every process that opens it
     * through the same file (the same inode, whatever the path) gets the same domain.
     *
     * @param file the file that identifies the domain.
     * @param create whether to create the file if it does not exist and the domain if none is associated with the
     *     file yet ({@code O_CREAT}); if false, both must exist.
     * @return a new handle of the domain, owned by the caller.
     * @throws IOException if the file does not exist ({@link java.nio.file.NoSuchFileException}) or no domain is
     *     associated with it while {@code create} is false, or the domain's shared state cannot be reached.
     * @throws UnsupportedOperationException if the device has no XRC domains; this default always throws it.
     */
    default XrcDomain openXrcDomain(final Path file, final boolean create) throws IOException {
        throw new UnsupportedOperationException("device " + name() + " of provider " + provider().name()
            + " has no XRC domains");
    }

    /**
     * The objects created through this device (and its protection domains) that are still open.
     *
     * @return the counts by kind.
     */
    DeviceResources resources();

    /**
     * What the device reported outside completions since it was opened: port changes and error events.
     *
     * @return the counts; {@link DeviceEvents#NONE} for a device that reports no events.
     */
    default DeviceEvents events() {
        return DeviceEvents.NONE;
    }

    /**
     * Close the device. Objects created from it must be closed first.
     *
     * @throws IllegalStateException if objects created from it are still open.
     */
    @Override
    void close();
}
