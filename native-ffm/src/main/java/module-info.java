/**
 * The native RDMA bindings: libibverbs, librdmacm and libc through the FFM API. Only the availability facade and the
 * exception type are API; the bindings themselves are internal. Run with
 * {@code --enable-native-access=io.rdmachannel.ffm}.
 */
module io.rdmachannel.ffm {
    requires transitive io.rdmachannel.channel;
    requires org.slf4j;

    exports io.rdmachannel.ffm;

    provides io.rdmachannel.channel.spi.RdmaProvider with io.rdmachannel.ffm.NativeProvider;
}
