/**
 * The byte-stream engine: the rsockets protocol over the verbs SPI, and the seam the NIO face uses
 * ({@link io.rdmachannel.channel.stream.StreamTransport}, {@link io.rdmachannel.channel.stream.StreamConnection},
 * {@link io.rdmachannel.channel.stream.StreamListener}, {@link io.rdmachannel.channel.stream.StreamConnector}).
 * Exported to the NIO module only.
 */
package io.rdmachannel.channel.stream;
