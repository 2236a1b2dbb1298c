/**
 * Connection management: how two endpoints find each other, exchange private data and bring their queue pairs to
 * READY_TO_SEND. Implementations are interchangeable and chosen at run time ({@code rdma_cm}, {@code oob},
 * {@code shm}); each supports accept and reject with private data and a {@link
 * io.rdmachannel.channel.cm.ConnectionRequestFilter} run before any resource is committed.
 *
 * <p>The flow is the same for every implementation. The CM resolves the peer's address to a local device; the
 * endpoint then allocates its resources on that device ({@link io.rdmachannel.channel.cm.CmEndpoint#prepare});
 * the CM creates the queue pair; the endpoint posts its receives and returns the private data to send
 * ({@link io.rdmachannel.channel.cm.CmEndpoint#bind}); the CM exchanges request and reply, moves the queue pair to
 * READY_TO_SEND and reports {@link io.rdmachannel.channel.cm.CmEndpoint#established} or
 * {@link io.rdmachannel.channel.cm.CmEndpoint#failed}. All callbacks run on the CM's event thread.
 */
package io.rdmachannel.channel.cm;
