/**
 * The verbs service-provider interface: the narrow seam between the stream engine and an RDMA implementation.
 *
 * <p>The types follow ibverbs semantics with Java names: a {@link io.rdmachannel.channel.spi.RdmaProvider} opens
 * {@link io.rdmachannel.channel.spi.RdmaDevice}s; a device allocates
 * {@link io.rdmachannel.channel.spi.ProtectionDomain}s, {@link io.rdmachannel.channel.spi.CompletionQueue}s and
 * {@link io.rdmachannel.channel.spi.ReadinessSource}s; a protection
 * domain owns {@link io.rdmachannel.channel.spi.MemoryRegion}s, {@link io.rdmachannel.channel.spi.QueuePair}s and
 * {@link io.rdmachannel.channel.spi.SharedReceiveQueue}s. Numeric codes (opcodes, statuses, flags, states) are the
 * ibverbs values, so a native provider passes them through unchanged.
 *
 * <p>Data-path rules: work requests ({@link io.rdmachannel.channel.spi.SendWorkRequest},
 * {@link io.rdmachannel.channel.spi.ReceiveWorkRequest}) and completions
 * ({@link io.rdmachannel.channel.spi.WorkCompletion}) are reusable flyweights created once and rewritten per
 * operation; posting and polling allocate nothing. Misuse (a post in the wrong state, beyond the queue depth, with
 * bad arguments, after close) throws {@link java.lang.IllegalStateException} or
 * {@link java.lang.IllegalArgumentException} and posts nothing; failures of the transport itself are reported as
 * completions with an error {@link io.rdmachannel.channel.spi.CompletionStatus}, as a real HCA reports them.
 */
package io.rdmachannel.channel.spi;
