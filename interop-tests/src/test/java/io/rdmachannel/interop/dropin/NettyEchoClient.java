package io.rdmachannel.interop.dropin;

import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.netty.bootstrap.Bootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.EventLoopGroup;
import io.netty.channel.MultiThreadIoEventLoopGroup;
import io.netty.channel.nio.NioIoHandler;
import io.netty.channel.socket.SocketChannel;
import io.netty.channel.socket.nio.NioSocketChannel;

/**
 * An unmodified Netty 4.2 echo client on the NIO transport: several connections at once, each sending
 * {@code bytes} of the echo pattern and checking every byte that comes back. Prints {@code OK <bytes>}, or
 * {@code FAILED <exception>} and exits 1.
 *
 * <p>Arguments: {@code address port connections bytes [seconds]}: how long all echoes may take (default 60).
 */
public final class NettyEchoClient {
    private NettyEchoClient() {
    }

    public static void main(final String[] args) throws InterruptedException {
        final EventLoopGroup group = new MultiThreadIoEventLoopGroup(2, NioIoHandler.newFactory());
        try {
            final InetSocketAddress server = new InetSocketAddress(InetAddress.getByName(args[0]),
                Integer.parseInt(args[1]));
            final int connections = Integer.parseInt(args[2]);
            final int bytes = Integer.parseInt(args[3]);
            final long seconds = args.length > 4 ? Long.parseLong(args[4]) : 60;
            final CompletableFuture<?>[] done = new CompletableFuture<?>[connections];
            for (int i = 0; i < connections; i++) {
                final Checker checker = new Checker(bytes);
                done[i] = checker.done;
                final Channel channel = new Bootstrap().group(group).channel(NioSocketChannel.class)
                    .handler(new ChannelInitializer<SocketChannel>() {
                        @Override
                        protected void initChannel(final SocketChannel channel) {
                            channel.pipeline().addLast(checker);
                        }
                    })
                    .connect(server).sync().channel();
                final ByteBuffer payload = ByteBuffer.allocate(bytes);
                EchoPattern.fill(payload, 0);
                channel.writeAndFlush(Unpooled.wrappedBuffer(payload));
            }
            CompletableFuture.allOf(done).get(seconds, TimeUnit.SECONDS);
            System.out.println("OK " + (long) connections * bytes);
        } catch (final Exception ex) {
            System.out.println("FAILED " + ex);
            System.exit(1);
        } finally {
            group.shutdownGracefully().sync();
        }
    }

    /**
     * Checks the echo of one connection and closes it when all came back.
     */
    private static final class Checker extends ChannelInboundHandlerAdapter {
        private final long expected;
        private final CompletableFuture<Void> done = new CompletableFuture<>();
        private long received;

        Checker(final long expected) {
            this.expected = expected;
        }

        @Override
        public void channelRead(final ChannelHandlerContext context, final Object message) {
            final ByteBuf buffer = (ByteBuf) message;
            try {
                final ByteBuffer bytes = ByteBuffer.allocate(buffer.readableBytes());
                buffer.readBytes(bytes);
                final long wrong = EchoPattern.check(bytes.flip(), received);
                if (wrong >= 0) {
                    done.completeExceptionally(new IllegalStateException("the echo differs at byte " + wrong));
                }
                received += bytes.limit();
            } finally {
                buffer.release();
            }
            if (received == expected) {
                context.close();
                done.complete(null);
            }
        }

        @Override
        public void exceptionCaught(final ChannelHandlerContext context, final Throwable cause) {
            done.completeExceptionally(cause);
            context.close();
        }
    }
}
