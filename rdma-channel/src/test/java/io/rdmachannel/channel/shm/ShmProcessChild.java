package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * The second JVM of the two-process tests: one {@link ShmProcessPeer} driven by commands on stdin, one reply line
 * each on stdout ({@code ok ...}, or {@code error ...} with the stack trace on stderr).
 *
 * <pre>
 *  start            -&gt; gid=&lt;hex&gt; qpn=&lt;n&gt; addr=&lt;hex&gt; rkey=&lt;hex&gt; len=&lt;n&gt;
 *  &lt;parent's line&gt;  -&gt; ready                 (the queue pair is READY_TO_SEND)
 *  fill SEED LEN    -&gt; ok crc=&lt;hex&gt;          (pattern SEED into the local prefix)
 *  crc LEN          -&gt; ok crc=&lt;hex&gt;
 *  write|writeimm|read|send LEN -&gt; ok crc=&lt;hex&gt; (the operation on the prefix, then the local checksum)
 *  recv|recvimm LEN -&gt; ok crc=&lt;hex&gt;          (take the receives of a peer's send or writeimm)
 *  stream SLOTS     -&gt; streaming             (RDMA WRITE WITH IMM until killed or failed)
 *  closeqp          -&gt; ok                    (destroy the queue pair only)
 *  exit             -&gt; bye                   (close everything and exit 0)
 * </pre>
 *
 * <p>A shutdown hook prints the state to stderr, so a SIGTERM from a failing test shows where the child was.
 */
final class ShmProcessChild {
    private ShmProcessChild() {
    }

    public static void main(final String[] args) throws Exception {
        final PrintStream out = System.out;
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        try (ShmProcessPeer peer = ShmProcessPeer.open(Long.parseLong(args[0]))) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> System.err.println("child state: " + peer)));
            reply(out, peer.endpoint().format());
            final String parent = in.readLine();
            if (parent == null) {
                return;
            }
            peer.connect(ShmProcessPeer.Endpoint.parse(parent));
            reply(out, "ready");
            String line;
            while ((line = in.readLine()) != null) {
                try {
                    if (!execute(peer, line.trim().split(" "), out)) {
                        break;
                    }
                } catch (final RuntimeException ex) {
                    ex.printStackTrace();
                    reply(out, "error " + ex);
                }
            }
        }
        reply(out, "bye");
    }

    private static boolean execute(final ShmProcessPeer peer, final String[] words, final PrintStream out) {
        final long length = words.length > 1 ? Long.parseLong(words[words.length - 1]) : 0;
        switch (words[0]) {
            case "fill" -> ShmProcessPeer.fill(peer.memory(), 0, length, Long.parseLong(words[1]));
            case "crc" -> {
                // just the checksum below
            }
            case "write" -> peer.write(WorkRequestOpcode.RDMA_WRITE, length);
            case "writeimm" -> peer.write(WorkRequestOpcode.RDMA_WRITE_WITH_IMM, length);
            case "read" -> peer.read(length);
            case "send" -> peer.sendMessages(length);
            case "recv" -> peer.receive(length, false);
            case "recvimm" -> peer.receive(length, true);
            case "stream" -> {
                reply(out, "streaming");
                peer.stream((int) length);
                return true;
            }
            case "closeqp" -> {
                peer.closeQueuePair();
                reply(out, "ok");
                return true;
            }
            case "exit" -> {
                return false;
            }
            default -> throw new IllegalArgumentException("unknown command " + String.join(" ", words));
        }
        reply(out, "ok crc=" + ShmProcessPeer.checksum(peer.memory(), length));
        return true;
    }

    private static void reply(final PrintStream out, final String line) {
        out.println(line);
        out.flush();
    }
}
