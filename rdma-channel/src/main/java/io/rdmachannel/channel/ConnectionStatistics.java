package io.rdmachannel.channel;

/**
 * What one RDMA stream connection has done since it was established: a snapshot, taken without disturbing the
 * connection's data path (its counters are plain fields its reader and writer keep as they go).
 *
 * @param bytesSent         stream bytes posted to the peer.
 * @param messagesSent      DATA messages posted (one RDMA write with immediate data each, or one send in message
 *                          mode).
 * @param zeroCopyBytes     of {@code bytesSent}, bytes the adapter read straight from the caller's registered buffer.
 * @param directBytes       of {@code bytesSent}, bytes sent straight from the caller's direct buffer on a device that
 *                          reads local memory with the CPU (shm).
 * @param bytesReceived     stream bytes the peer wrote into our receive ring.
 * @param messagesReceived  DATA messages received.
 * @param creditStalls      writes that ended with bytes left because the peer had granted no more: no send credit,
 *                          no target region, or its first message not yet arrived.
 * @param bufferStalls      writes that ended with bytes left for want of our own send resources: send queue slots or
 *                          send-ring space still held by sends in flight.
 * @param spinsCaught       busy-polls before a wait that found the connection ready, so no wait followed.
 * @param directWaits       waits of platform threads on the connection's completion queues themselves (each ends
 *                          with one wake-up, a timeout or a close): blocked readers and writers, and selectors that
 *                          waited with the channel registered.
 * @param keepAlivesSent    keepalive probes posted.
 * @param completionErrors  work completions with an error status (RNR or transport retries exceeded, remote access
 *                          errors, ...), not counting flushes: a queue pair that fails or whose peer is gone
 *                          flushes every posted request, which says nothing more.
 * @param readinessArms     times the connection was armed to report its next event to its readiness observer (the
 *                          channel's relay): by a thread about to park there (virtual threads; platform threads where
 *                          the device offers no direct wait) or by a selector about to wait with the channel
 *                          registered. Unlike the other counters, these two are shared by the waiting threads
 *                          and selectors: one atomic increment per arming and per wake-up, each next to a wait
 *                          that costs far more.
 * @param readinessWakeups  events reported to an armed observer: each wakes the threads parked on the channel's
 *                          relay, or its selector (at most one per arming).
 */
public record ConnectionStatistics(long bytesSent, long messagesSent, long zeroCopyBytes, long directBytes,
    long bytesReceived, long messagesReceived, long creditStalls, long bufferStalls, long spinsCaught,
    long directWaits, long keepAlivesSent, long completionErrors, long readinessArms, long readinessWakeups) {
}
