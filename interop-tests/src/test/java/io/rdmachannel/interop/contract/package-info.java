/**
 * The contract suite: every socket behaviour of {@code java.nio.channels.SocketChannel},
 * {@code ServerSocketChannel} and {@code Selector} that a drop-in RDMA provider must honour, written once and run
 * against each {@link io.rdmachannel.interop.contract.ContractTransport} in each
 * {@link io.rdmachannel.interop.contract.IoMode} (blocking on platform threads, non-blocking with a selector, blocking
 * on virtual threads). The JDK's own TCP channels are the oracle.
 * <p>
 * A new transport is added in one place, {@code ContractTransports.ALL}; its IPv6 loopback twin goes in
 * {@code ContractTransports.IPV6}, which runs only the tests where the address family matters. Each test prints its
 * {@code ConnectionState} (steps per thread, bytes and CRC32C per side, seed) when it fails. The heavy cases' sizes
 * and the seed are system properties listed in {@code ContractConfiguration}, for example
 * {@code mvn -pl interop-tests -am verify -Drdmachannel.contract.transfer.bytes=268435456
 * -Drdmachannel.contract.seed=42}.
 */
package io.rdmachannel.interop.contract;
