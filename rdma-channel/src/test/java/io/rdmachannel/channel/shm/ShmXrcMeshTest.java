package io.rdmachannel.channel.shm;

import static io.rdmachannel.channel.shm.ShmFixture.FULL_ACCESS;
import static io.rdmachannel.channel.shm.ShmFixture.awaitCondition;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcSharedReceiveQueue;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The queue pairs a full mesh needs: N processes on each of M hosts, every process sending to every process of the
 * other hosts, built with RC queue pairs and with XRC, counted on the devices and checked by a message from every
 * process to every remote process. On shm a device stands for a process and a host is the set of devices that open
 * the host's XRC domain file. RC needs a queue pair per process pair on each side, N x N x (M - 1) per host; XRC one
 * initiator per process and remote host and one target per remote initiator, 2 x N x (M - 1) per host.
 */
@Timeout(120)
class ShmXrcMeshTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @TempDir
    Path temp;

    /** One process: a device with memory, a completion queue and (in XRC) its host's domain and a queue of its own. */
    private final class Process {
        final int host;
        final RdmaDevice device;
        final ProtectionDomain pd;
        final CompletionQueue cq;
        final MemoryRegion mr;
        XrcDomain domain;
        XrcSharedReceiveQueue srq;

        Process(final int host) throws IOException {
            this.host = host;
            device = fixture.device();
            pd = fixture.own(device.allocateProtectionDomain());
            cq = fixture.own(device.createCompletionQueue(256, null, 0));
            mr = fixture.own(pd.allocate(64 * 64, FULL_ACCESS));
        }

        void joinDomain() throws IOException {
            domain = fixture.own(device.openXrcDomain(temp.resolve("host-" + host), true));
            srq = fixture.own(domain.createSharedReceiveQueue(pd, cq, 64, 1));
            for (int i = 0; i < 64; i++) {
                srq.postReceive(srq.createReceiveWorkRequest().id(i).sge(0, mr.address() + i * 64L, 64,
                    mr.localKey()));
            }
        }

        QueuePair queuePair(final QueuePairType type) throws IOException {
            final QueuePairInitAttributes attributes = new QueuePairInitAttributes().type(type)
                .sendCompletionQueue(cq).maxSendWorkRequests(64).signalAll(true);
            return fixture.own(pd.createQueuePair(type == QueuePairType.RC
                ? attributes.receiveCompletionQueue(cq).maxReceiveWorkRequests(4) : attributes));
        }

        int queuePairs() {
            return device.resources().queuePairs() + device.resources().xrcTargetQueuePairs();
        }

        byte[] gid() throws IOException {
            return device.queryGid(1, 0);
        }
    }

    private List<List<Process>> hosts(final int processes, final int hostCount) throws IOException {
        final List<List<Process>> hosts = new ArrayList<>();
        for (int h = 0; h < hostCount; h++) {
            final List<Process> host = new ArrayList<>();
            for (int p = 0; p < processes; p++) {
                host.add(new Process(h));
            }
            hosts.add(host);
        }
        return hosts;
    }

    private static void toReadyToSend(final QueuePair qp, final byte[] gid, final int number) throws IOException {
        qp.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(FULL_ACCESS));
        qp.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(gid)
            .remoteQueuePairNumber(number));
        qp.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes());
    }

    private static int perHost(final List<Process> host) {
        return host.stream().mapToInt(Process::queuePairs).sum();
    }

    /**
     * Wait for a process's completions: one message from every remote process (its host in the immediate) and the
     * completions of its own as many sends, all successful.
     */
    private static void awaitMessages(final Process q, final int expected, final int hostCount) {
        final Set<Integer> fromHosts = new TreeSet<>();
        final List<CompletionStatus> statuses = new ArrayList<>();
        final int[] receives = new int[1];
        awaitCondition("the messages of every remote process and the completions of its own sends", () -> {
            q.cq.poll(c -> {
                statuses.add(c.status());
                if (c.opcode().name().startsWith("RECV")) {
                    receives[0]++;
                    fromHosts.add(c.immediate());
                }
            }, 64);
            return statuses.size() == 2 * expected;
        });
        assertEquals(expected, receives[0]);
        assertEquals(hostCount - 1, fromHosts.size());
        assertEquals(List.of(CompletionStatus.SUCCESS), statuses.stream().distinct().toList());
    }

    @ParameterizedTest(name = "{0} processes on each of {1} hosts")
    @CsvSource({"3, 3", "8, 4"})
    void shouldMeshWithTheQueuePairsOnPaper(final int processes, final int hostCount) throws Exception {
        final List<List<Process>> rcHosts = hosts(processes, hostCount);
        final Map<QueuePair, Process> rcOwner = new HashMap<>();
        for (int h = 0; h < hostCount; h++) {
            for (int g = h + 1; g < hostCount; g++) {
                for (final Process p : rcHosts.get(h)) {
                    for (final Process q : rcHosts.get(g)) {
                        final QueuePair a = p.queuePair(QueuePairType.RC);
                        final QueuePair b = q.queuePair(QueuePairType.RC);
                        toReadyToSend(a, q.gid(), b.number());
                        toReadyToSend(b, p.gid(), a.number());
                        rcOwner.put(a, p);
                        rcOwner.put(b, q);
                    }
                }
            }
        }
        final int rcPerHost = processes * processes * (hostCount - 1);
        for (final List<Process> host : rcHosts) {
            assertEquals(rcPerHost, perHost(host));
        }
        final int expectedPerProcess = processes * (hostCount - 1);
        for (final QueuePair qp : rcOwner.keySet()) {
            final Process own = rcOwner.get(qp);
            qp.postReceive(qp.createReceiveWorkRequest().id(1).sge(0, own.mr.address(), 64, own.mr.localKey()));
        }
        for (final QueuePair qp : rcOwner.keySet()) {
            final Process own = rcOwner.get(qp);
            qp.postSend(qp.createSendWorkRequest().opcode(WorkRequestOpcode.SEND_WITH_IMM).immediate(own.host)
                .sge(0, own.mr.address() + 64, 8, own.mr.localKey()));
        }
        for (final List<Process> host : rcHosts) {
            for (final Process q : host) {
                awaitMessages(q, expectedPerProcess, hostCount);
            }
        }

        final List<List<Process>> xrcHosts = hosts(processes, hostCount);
        for (final List<Process> host : xrcHosts) {
            for (final Process p : host) {
                p.joinDomain();
            }
        }
        // each process: one initiator per remote host, connected to a target made there by the first process
        final Map<Process, Map<Integer, QueuePair>> initiators = new HashMap<>();
        for (int h = 0; h < hostCount; h++) {
            for (final Process p : xrcHosts.get(h)) {
                for (int g = 0; g < hostCount; g++) {
                    if (g == h) {
                        continue;
                    }
                    final Process owner = xrcHosts.get(g).getFirst();
                    final QueuePair initiator = p.queuePair(QueuePairType.XRC_SEND);
                    final XrcTargetQueuePair target = fixture.own(owner.domain.createTargetQueuePair());
                    target.modify(QueuePairState.INIT, new QueuePairAttributes().accessFlags(FULL_ACCESS));
                    target.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes().remoteGid(p.gid())
                        .remoteQueuePairNumber(initiator.number()));
                    toReadyToSend(initiator, owner.gid(), target.number());
                    initiators.computeIfAbsent(p, k -> new HashMap<>()).put(g, initiator);
                }
            }
        }
        final int xrcPerHost = 2 * processes * (hostCount - 1);
        for (final List<Process> host : xrcHosts) {
            assertEquals(xrcPerHost, perHost(host));
        }
        // every process sends one message to every process of the other hosts through its one initiator there
        for (final Map.Entry<Process, Map<Integer, QueuePair>> entry : initiators.entrySet()) {
            final Process p = entry.getKey();
            for (final Map.Entry<Integer, QueuePair> remote : entry.getValue().entrySet()) {
                final QueuePair initiator = remote.getValue();
                final SendWorkRequest send = initiator.createSendWorkRequest();
                for (final Process q : xrcHosts.get(remote.getKey())) {
                    initiator.postSend(send.reset().opcode(WorkRequestOpcode.SEND_WITH_IMM).immediate(p.host)
                        .remoteSharedReceiveQueue(q.srq.number()).sge(0, p.mr.address(), 8, p.mr.localKey()));
                }
            }
        }
        for (final List<Process> host : xrcHosts) {
            for (final Process q : host) {
                awaitMessages(q, expectedPerProcess, hostCount);
            }
        }
        System.out.printf("mesh of %d processes on each of %d hosts: %d queue pairs per host with RC, %d with XRC%n",
            processes, hostCount, rcPerHost, xrcPerHost);
    }
}
