module io.rdmachannel.ffm {
    requires io.rdmachannel.channel;
}
