/**
 * JMH benchmarks of the data path, all on the embedded shm provider inside one JVM: the verbs SPI (post and poll),
 * the stream engine (ring write and read) and the NIO channels (write and read, blocking and non-blocking, heap and
 * direct buffers). Run them with {@code ./rdmachannel jmh}, which adds {@code -prof gc} so that each result also
 * reports {@code gc.alloc.rate.norm}, the bytes allocated per operation.
 */
package io.rdmachannel.demo.jmh;
