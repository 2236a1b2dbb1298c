package io.rdmachannel.interop.dropin;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;

import io.netty.bootstrap.ServerBootstrap;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioServerSocketChannel;

/**
 * An unmodified Netty 4.2 echo server on the NIO transport ({@link NioIoHandler} with the JVM's default
 * {@code SelectorProvider}). Prints {@code LISTENING <port>}; stops when its stdin ends.
 *
 * <p>Arguments: {@code address}.
 */
public final class NettyEchoServer {
    private NettyEchoServer() {
    }

    public static void main(final String[] args) throws IOException, InterruptedException {
        final EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        try {
            final Channel server = new ServerBootstrap().group(group).channel(NioServerSocketChannel.class)
                .childHandler(new ChannelInitializer<SocketChannel>() {
                    @Override
                    protected void initChannel(final SocketChannel channel) {
                        channel.pipeline().addLast(new Echo());
                    }
                })
                .bind(new InetSocketAddress(InetAddress.getByName(args[0]), 0)).sync().channel();
            System.out.println("LISTENING " + ((InetSocketAddress) server.localAddress()).getPort());
            while (System.in.read() >= 0) {
                // the parent's lines mean nothing; its end means stop
            }
            server.close().sync();
        } finally {
            group.shutdownGracefully().sync();
        }
    }

    private static final class Echo extends ChannelInboundHandlerAdapter {
        @Override
        public void channelRead(final ChannelHandlerContext context, final Object message) {
            context.write(message);
        }

        @Override
        public void channelReadComplete(final ChannelHandlerContext context) {
            context.flush();
        }

        @Override
        public void exceptionCaught(final ChannelHandlerContext context, final Throwable cause) {
            System.out.println("CONNECTION FAILED " + cause);
            context.close();
        }
    }
}
