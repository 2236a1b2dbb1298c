module io.rdmachannel.nio {
    requires io.rdmachannel.channel;
}
