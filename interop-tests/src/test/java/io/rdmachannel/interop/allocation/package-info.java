/**
 * Allocation tests of the RDMA channels on the shm provider: the write and read paths of a connected pair allocate
 * nothing per operation, counted with the current thread's allocated-bytes counter (not timed).
 */
package io.rdmachannel.interop.allocation;
