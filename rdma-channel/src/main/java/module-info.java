// "module": the qualified export names io.rdmachannel.nio, which is not on this module's compile path.
@SuppressWarnings("module")
module io.rdmachannel.channel {
    // Plain requires: no exported API type mentions an SLF4J type.
    requires org.slf4j;
    // Agrona is an automatic module (see -Xlint:-requires-automatic in the parent pom).
    requires org.agrona;
    // Flight Recorder events of the connection lifecycle.
    requires jdk.jfr;
    // The transports' MBeans.
    requires java.management;

    exports io.rdmachannel.channel;
    exports io.rdmachannel.channel.spi;
    exports io.rdmachannel.channel.cm;
    // The stream engine's seam, for the NIO face only.
    exports io.rdmachannel.channel.stream to io.rdmachannel.nio;
    // The platform's channels and the host's addresses, for the NIO face's drop-in.
    exports io.rdmachannel.channel.internal to io.rdmachannel.nio;

    uses io.rdmachannel.channel.spi.RdmaProvider;

    provides io.rdmachannel.channel.spi.RdmaProvider with io.rdmachannel.channel.shm.ShmProvider;
}
