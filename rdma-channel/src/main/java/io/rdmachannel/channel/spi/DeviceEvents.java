package io.rdmachannel.channel.spi;

/**
 * What a device reported on its own, outside any completion ({@code ibv_get_async_event} on the native provider):
 * port changes and errors of its queue pairs, completion queues and shared receive queues, counted since the device
 * was opened. A provider without such events (shm) reports {@link #NONE}.
 *
 * <p>A port that goes down does not fail the connections on it: their queue pairs keep retrying, and resume if the
 * port comes back within the retry time; otherwise their sends fail then (and keepalive finds idle ones). An error
 * event of a queue pair, of the completion queue or shared receive queue it uses, or of the whole device fails the
 * connections concerned at once ({@link #queuePairsFailed}).
 *
 * @param portState                the state of port 1 as of the last port event or the device's opening:
 *                                 {@code ACTIVE}, {@code DOWN}, ..., {@code -} for a device without ports.
 * @param portDown                 port error events ({@code IBV_EVENT_PORT_ERR}): the link went down.
 * @param portUp                   port active events ({@code IBV_EVENT_PORT_ACTIVE}): the link came back.
 * @param queuePairErrors          queue pair error events ({@code QP_FATAL}, {@code QP_REQ_ERR},
 *                                 {@code QP_ACCESS_ERR}).
 * @param completionQueueErrors    completion queue error events ({@code CQ_ERR}, such as an overrun).
 * @param sharedReceiveQueueErrors shared receive queue error events ({@code SRQ_ERR}).
 * @param deviceFatal              fatal device events ({@code DEVICE_FATAL}): every object of the device is lost.
 * @param other                    every other event (communication established, path migration, LID, P_Key, GID
 *                                 or SM changes, last WQE reached, ...).
 * @param queuePairsFailed         queue pairs these events moved to the error state, failing their connections.
 */
public record DeviceEvents(String portState, long portDown, long portUp, long queuePairErrors,
    long completionQueueErrors, long sharedReceiveQueueErrors, long deviceFatal, long other, long queuePairsFailed) {
    /** A device that reports no events. */
    public static final DeviceEvents NONE = new DeviceEvents("-", 0, 0, 0, 0, 0, 0, 0, 0);

    /**
     * The error events: queue pair, completion queue, shared receive queue and fatal device events.
     *
     * @return their sum.
     */
    public long errors() {
        return queuePairErrors + completionQueueErrors + sharedReceiveQueueErrors + deviceFatal;
    }
}
