/**
 * A Java twin of rdma-core 44's {@code rstream} over the RDMA channels ({@link JavaRstream}), so that interop tests
 * can run the C tool against it in both directions: the same options, the same tests, the same 16-byte sync, the
 * same {@code -T v} byte pattern and the same output lines.
 */
package io.rdmachannel.interop.rstream;
