package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcSharedReceiveQueue;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM of the XRC multi-process tests: one shm device with one handle of an XRC domain, driven by commands on
 * stdin, one reply line each on stdout ({@code ok ...}, or {@code error <message>}).
 *
 * <pre>
 *  open FILE       -&gt; ok gid=&lt;hex&gt;         (open the device and the domain of FILE, creating it if needed)
 *  gid             -&gt; ok gid=&lt;hex&gt;         (the device's GID)
 *  create          -&gt; ok qpn=&lt;n&gt;           (create a target queue pair)
 *  openqp N        -&gt; ok qpn=&lt;n&gt;           (open target queue pair N; a second open takes a second handle)
 *  refs N          -&gt; ok refs=&lt;n&gt;          (the references of target queue pair N, through a handle of it)
 *  state N         -&gt; ok state=&lt;state&gt;
 *  error N         -&gt; ok                    (move target queue pair N to ERROR)
 *  events N        -&gt; ok events=&lt;a,b,..&gt;   (the events its handle has not seen yet; "-" for none)
 *  closeqp N       -&gt; ok                    (close one handle of target queue pair N)
 *  closedomain     -&gt; ok
 *  srq             -&gt; ok srqn=&lt;n&gt;          (create an XRC shared receive queue with 8 receives of 64 bytes)
 *  connect N G Q   -&gt; ok                    (move target queue pair N through INIT to READY_TO_RECEIVE, connected
 *                                            to the XRC initiator Q of the device whose GID is G, in hex)
 *  recv K          -&gt; ok recv=&lt;qpn:status:text;..&gt;  (wait for K receive completions of the queue)
 *  lock            -&gt; ok                    (take the lock of the domain's registry file and keep it)
 *  unlock          -&gt; ok
 *  exit            -&gt; bye                   (close what is open and exit 0)
 * </pre>
 */
final class ShmXrcChild {
    private ShmXrcChild() {
    }

    public static void main(final String[] args) throws Exception {
        final PrintStream out = System.out;
        final BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        final State state = new State();
        String line;
        while ((line = in.readLine()) != null) {
            final String[] words = line.trim().split(" ");
            if ("exit".equals(words[0])) {
                break;
            }
            try {
                reply(out, "ok" + state.execute(words));
            } catch (final Exception ex) {
                ex.printStackTrace();
                reply(out, "error " + ex.getMessage());
            }
        }
        state.close();
        reply(out, "bye");
    }

    private static void reply(final PrintStream out, final String line) {
        out.println(line);
        out.flush();
    }

    private static final class State {
        private RdmaDevice device;
        private XrcDomain domain;
        private final Map<Integer, List<XrcTargetQueuePair>> targets = new HashMap<>();
        private ProtectionDomain pd;
        private CompletionQueue cq;
        private MemoryRegion mr;
        private XrcSharedReceiveQueue srq;
        private FileChannel lockedFile;
        private FileLock fileLock;

        String execute(final String[] words) throws Exception {
            final int number = words.length > 1 && !"open".equals(words[0]) ? Integer.parseInt(words[1]) : 0;
            switch (words[0]) {
                case "open" -> {
                    device = RdmaProviders.byName("shm").openDevice(null);
                    domain = device.openXrcDomain(Path.of(words[1]), true);
                    return " gid=" + HexFormat.of().formatHex(device.queryGid(1, 0));
                }
                case "gid" -> {
                    return " gid=" + HexFormat.of().formatHex(device.queryGid(1, 0));
                }
                case "create" -> {
                    return " qpn=" + add(domain.createTargetQueuePair());
                }
                case "openqp" -> {
                    return " qpn=" + add(domain.openTargetQueuePair(number));
                }
                case "refs" -> {
                    return " refs=" + handle(number).references();
                }
                case "state" -> {
                    return " state=" + handle(number).state();
                }
                case "error" -> handle(number).modify(QueuePairState.ERROR, null);
                case "events" -> {
                    final List<String> events = new ArrayList<>();
                    handle(number).pollEvents((qpn, event) -> events.add(event.name()), 16);
                    return " events=" + (events.isEmpty() ? "-" : String.join(",", events));
                }
                case "closeqp" -> {
                    final List<XrcTargetQueuePair> handles = targets.get(number);
                    handles.remove(handles.size() - 1).close();
                }
                case "srq" -> {
                    pd = device.allocateProtectionDomain();
                    cq = device.createCompletionQueue(16, null, 0);
                    mr = pd.allocate(8 * 64, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
                    srq = domain.createSharedReceiveQueue(pd, cq, 8, 1);
                    for (int i = 0; i < 8; i++) {
                        srq.postReceive(srq.createReceiveWorkRequest().id(i).sge(0, mr.address() + i * 64L, 64,
                            mr.localKey()));
                    }
                    return " srqn=" + srq.number();
                }
                case "connect" -> {
                    handle(number).modify(QueuePairState.INIT, new QueuePairAttributes()
                        .accessFlags(AccessFlags.REMOTE_WRITE));
                    handle(number).modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes()
                        .remoteGid(HexFormat.of().parseHex(words[2]))
                        .remoteQueuePairNumber(Integer.parseInt(words[3])));
                }
                case "recv" -> {
                    return " recv=" + receive(number);
                }
                case "lock" -> {
                    lockedFile = FileChannel.open(((ShmXrcDomain) domain).registry().path(), StandardOpenOption.WRITE);
                    fileLock = lockedFile.lock();
                }
                case "unlock" -> {
                    fileLock.release();
                    lockedFile.close();
                }
                case "closedomain" -> {
                    domain.close();
                    domain = null;
                }
                default -> throw new IllegalArgumentException("unknown command " + String.join(" ", words));
            }
            return "";
        }

        private String receive(final int count) throws InterruptedException {
            final List<String> received = new ArrayList<>();
            final long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (received.size() < count && System.nanoTime() - deadline < 0) {
                if (cq.poll(c -> {
                    final byte[] bytes = new byte[c.byteLength()];
                    MemorySegment.copy(mr.segment(), c.workRequestId() * 64, MemorySegment.ofArray(bytes), 0,
                        bytes.length);
                    received.add(c.queuePairNumber() + ":" + c.status() + ":"
                        + new String(bytes, StandardCharsets.UTF_8));
                }, count - received.size()) == 0) {
                    Thread.sleep(1);
                }
            }
            return String.join(";", received);
        }

        private int add(final XrcTargetQueuePair target) {
            targets.computeIfAbsent(target.number(), n -> new ArrayList<>()).add(target);
            return target.number();
        }

        private XrcTargetQueuePair handle(final int number) {
            final List<XrcTargetQueuePair> handles = targets.get(number);
            if (handles == null || handles.isEmpty()) {
                throw new IllegalArgumentException("no handle of target queue pair " + number);
            }
            return handles.get(0);
        }

        void close() {
            targets.values().forEach(handles -> handles.forEach(XrcTargetQueuePair::close));
            for (final AutoCloseable resource : new AutoCloseable[] {srq, mr, cq, pd}) {
                if (resource != null) {
                    try {
                        resource.close();
                    } catch (final Exception ex) {
                        ex.printStackTrace();
                    }
                }
            }
            if (domain != null) {
                domain.close();
            }
            if (device != null) {
                device.close();
            }
        }
    }
}
