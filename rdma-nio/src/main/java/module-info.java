/**
 * The JDK NIO face of rdmachannel: {@code SocketChannel}, {@code ServerSocketChannel} and {@code Selector}
 * implementations over the RDMA byte-stream engine.
 */
module io.rdmachannel.nio {
    requires transitive io.rdmachannel.channel;
    requires org.slf4j;

    exports io.rdmachannel.nio;
}
