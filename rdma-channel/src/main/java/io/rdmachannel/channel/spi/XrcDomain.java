package io.rdmachannel.channel.spi;

import java.io.IOException;
import java.nio.file.Path;

/**
 * An XRC domain ({@code ibv_xrcd}) as one process sees it: shared by the processes of one host that open it through
 * the same file ({@link RdmaDevice#openXrcDomain(Path, boolean)}), it holds the XRC target queue pairs and XRC shared
 * receive queues that remote XRC initiators reach.
 *
 * <p>A target queue pair belongs to the domain, not to the process that created it: every process that created or
 * opened it holds a reference, and it is destroyed when the last reference goes, by
 * {@link XrcTargetQueuePair#close()} or by the death of the process. The domain's shared state lives until the last
 * process closes its handle, while target queue pairs come and go. Events of a target queue pair reach every handle
 * of it ({@link XrcTargetQueuePair#pollEvents}).
 *
 * <p>Handles are thread-safe.
 */
public interface XrcDomain extends AutoCloseable {
    /**
     * The device this handle was opened through.
     *
     * @return the device.
     */
    RdmaDevice device();

    /**
     * The file that identifies the domain.
     *
     * @return the path it was opened with.
     */
    Path file();

    /**
     * Create an XRC shared receive queue ({@code ibv_create_srq_ex} with {@code IBV_SRQT_XRC}): receives posted to
     * it are consumed by messages that name its {@link XrcSharedReceiveQueue#number()}, whichever target queue pair
     * of the domain they arrive on, and complete on {@code completionQueue}. It counts as a shared receive queue of
     * {@code protectionDomain}, which must outlive it.
     *
     * @param protectionDomain the domain of the memory its receives scatter into; of the same device.
     * @param completionQueue where its receive completions go; of the same device.
     * @param maxWorkRequests the depth, at least 1.
     * @param maxSge scatter/gather entries per receive, at least 1.
     * @return the new queue, owned by the caller.
     * @throws IOException if the device refuses.
     * @throws IllegalArgumentException if a limit is out of the device's range, or the protection domain or the
     *     completion queue belongs to another device.
     * @throws IllegalStateException if this handle is closed or the domain's table of queues is full.
     */
    XrcSharedReceiveQueue createSharedReceiveQueue(ProtectionDomain protectionDomain, CompletionQueue completionQueue,
        int maxWorkRequests, int maxSge) throws IOException;

    /**
     * Create a target queue pair ({@code ibv_create_qp_ex} with {@code IBV_QPT_XRC_RECV}) in RESET, holding the
     * first reference to it. Other processes open it by its number.
     *
     * @return the caller's handle.
     * @throws IOException if the device refuses.
     * @throws IllegalStateException if this handle is closed or the domain's table of target queue pairs is full.
     */
    XrcTargetQueuePair createTargetQueuePair() throws IOException;

    /**
     * Open a target queue pair of the domain by number ({@code ibv_open_qp}), taking one more reference to it: the
     * queue pair lives at least until the handle returned is closed.
     *
     * @param number the target queue pair's number.
     * @return a new handle, owned by the caller; each call takes its own reference.
     * @throws IOException if the domain holds no target queue pair of that number (it may have been destroyed).
     * @throws IllegalStateException if this handle is closed.
     */
    XrcTargetQueuePair openTargetQueuePair(int number) throws IOException;

    /**
     * Close this process's handle. The domain's shared state stays while another process has it open.
     *
     * @throws IllegalStateException if target queue pairs or shared receive queues this handle created or opened
     *     are still open; the message names them.
     */
    @Override
    void close();
}
