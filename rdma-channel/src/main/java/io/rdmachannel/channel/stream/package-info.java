/**
 * The wire format of the rsockets stream protocol (librdmacm {@code rsocket.c}, rdma-core v44): the connection data
 * carried in the RDMA CM private data, the 32-bit immediate messages, the credit sequence arithmetic, the SGE and
 * iomap entries written into a peer's target SGL, and the stream settings with their rsockets defaults.
 *
 * <p>Layouts are descriptors (offsets, lengths, validators) with flyweights over Agrona buffers; every access names
 * its byte order. The connection data is always big-endian; SGE and iomap entries are in the byte order of the peer
 * that reads them ({@link io.rdmachannel.channel.stream.ConnectionDataDescriptor#byteOrder(int)}). Values received
 * from a peer are checked before use and refused with a {@link io.rdmachannel.channel.stream.ProtocolException}.
 *
 * <p>This package holds no connection logic and allocates nothing on its hot paths.
 */
package io.rdmachannel.channel.stream;
