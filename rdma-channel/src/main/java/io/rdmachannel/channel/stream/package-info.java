/**
 * The byte-stream engine: the rsockets stream protocol (librdmacm {@code rsocket.c}, rdma-core v44) over the verbs
 * SPI, and the seam the NIO face uses ({@link io.rdmachannel.channel.stream.StreamTransport},
 * {@link io.rdmachannel.channel.stream.StreamConnection}, {@link io.rdmachannel.channel.stream.StreamListener},
 * {@link io.rdmachannel.channel.stream.StreamConnector}). Exported to the NIO module only.
 *
 * <p>The wire format: the connection data carried in the connection manager's private data, the 32-bit immediate
 * messages, the credit sequence arithmetic, and the SGE and iomap entries written into a peer's target SGL. Layouts
 * are descriptors (offsets, lengths, validators) with flyweights over Agrona buffers; every access names its byte
 * order. The connection data is always big-endian; SGE and iomap entries are in the byte order of the peer that
 * reads them ({@link io.rdmachannel.channel.stream.ConnectionDataDescriptor#byteOrder(int)}). Values received from
 * a peer are checked before use and refused with a {@link io.rdmachannel.channel.stream.ProtocolException}.
 */
package io.rdmachannel.channel.stream;
