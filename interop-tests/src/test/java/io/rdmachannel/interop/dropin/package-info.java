/**
 * The drop-in tier: unmodified programs (plain JDK NIO, {@code java.net.Socket}, Netty's NIO transport) run in child
 * JVMs with rdmachannel installed as the JVM-wide {@code SelectorProvider}, talking to each other and to programs
 * without it. The programs import nothing of rdmachannel; what path a connection took they learn only from the
 * channel's {@code toString()}, as any program could.
 */
package io.rdmachannel.interop.dropin;
