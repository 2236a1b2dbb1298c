package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairEvent;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.QueuePairType;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkRequestOpcode;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HexFormat;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * XRC domains shared by processes: this JVM and child JVMs ({@link ShmXrcChild}) open one domain through one file
 * in a fresh shm directory, and take, drop and lose (by SIGKILL) references to its target queue pairs.
 */
class ShmXrcProcessTest {
    private Path directory;
    private Path domainFile;
    private final List<ShmChildProcess> children = new ArrayList<>();
    private final Deque<AutoCloseable> owned = new ArrayDeque<>();

    @RegisterExtension
    final InvocationInterceptor dumpOnFailure = new InvocationInterceptor() {
        @Override
        public void interceptTestMethod(final Invocation<Void> invocation,
            final ReflectiveInvocationContext<Method> invocationContext, final ExtensionContext extensionContext)
            throws Throwable {
            try {
                invocation.proceed();
            } catch (final Throwable failure) {
                final StringBuilder state = new StringBuilder("directory: ").append(listDirectory());
                for (final ShmChildProcess child : children) {
                    state.append('\n').append(child.dump());
                }
                failure.addSuppressed(new AssertionError("state at failure:\n" + state));
                throw failure;
            }
        }
    };

    @BeforeEach
    void useFreshDirectory() throws IOException {
        directory = ShmTestDirectories.create();
        domainFile = directory.resolve("domain-file");
    }

    @AfterEach
    void closeAll() throws Exception {
        try {
            for (final ShmChildProcess child : children) {
                child.close();
            }
            while (!owned.isEmpty()) {
                owned.pop().close();
            }
        } finally {
            ShmTestDirectories.delete(directory);
        }
    }

    private <T extends AutoCloseable> T own(final T resource) {
        owned.push(resource);
        return resource;
    }

    private RdmaDevice device() throws IOException {
        final Properties properties = new Properties(System.getProperties());
        properties.setProperty(ShmConfiguration.DIRECTORY_PROP_NAME, directory.toString());
        return own(ShmDevice.open((ShmProvider) RdmaProviders.byName("shm"),
            ShmConfiguration.fromProperties(properties)));
    }

    private XrcDomain domain() throws IOException {
        return own(device().openXrcDomain(domainFile, true));
    }

    private ShmChildProcess child() throws IOException {
        final ShmChildProcess child = ShmChildProcess.start(directory, ShmXrcChild.class);
        children.add(child);
        child.command("open " + domainFile, "ok gid=");
        return child;
    }

    private static int references(final ShmChildProcess child, final int number) {
        return Integer.parseInt(ShmChildProcess.value(child.command("refs " + number, "ok"), "refs"));
    }

    private static void kill(final ShmChildProcess child) throws InterruptedException {
        child.process().destroyForcibly();
        child.awaitExit();
    }

    private List<String> listDirectory() {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.map(path -> path.getFileName().toString()).sorted().toList();
        } catch (final IOException ex) {
            return List.of("(cannot list: " + ex + ")");
        }
    }

    private boolean registryExists() {
        return listDirectory().stream().anyMatch(name -> name.startsWith(XrcDomainDescriptor.FILE_PREFIX));
    }

    @Test
    @Timeout(120)
    void shouldCountReferencesOfThreeProcessesAndDestroyWithTheLastClose() throws Exception {
        final XrcDomain domain = domain();
        final XrcTargetQueuePair target = domain.createTargetQueuePair();
        final int number = target.number();
        final ShmChildProcess first = child();
        final ShmChildProcess second = child();
        first.command("openqp " + number, "ok qpn=" + number);
        second.command("openqp " + number, "ok qpn=" + number);
        second.command("openqp " + number, "ok qpn=" + number);
        assertEquals(4, target.references());
        assertEquals(4, references(first, number));
        second.command("closeqp " + number, "ok");
        assertEquals(3, references(second, number));
        first.command("closeqp " + number, "ok");
        assertEquals(2, target.references());
        // the creator leaves first: the queue pair stays for the process still holding it
        target.close();
        assertEquals(1, references(second, number));
        second.command("closeqp " + number, "ok");
        assertEquals("error XRC domain " + domainFile + " holds no target queue pair " + number
            + " (never created, or destroyed when its last user closed it)",
            first.command("openqp " + number, "error"));
        assertThrows(IOException.class, () -> domain.openTargetQueuePair(number));
        // the domain outlives its target queue pairs
        final int next = Integer.parseInt(ShmChildProcess.value(first.command("create", "ok qpn="), "qpn"));
        second.command("openqp " + next, "ok qpn=" + next);
        assertEquals(2, references(first, next));
    }

    @Test
    @Timeout(120)
    void shouldDropTheReferencesOfAKilledProcess() throws Exception {
        final XrcDomain domain = domain();
        final XrcTargetQueuePair target = own(domain.createTargetQueuePair());
        final ShmChildProcess victim = child();
        final ShmChildProcess witness = child();
        victim.command("openqp " + target.number(), "ok");
        victim.command("openqp " + target.number(), "ok");
        witness.command("openqp " + target.number(), "ok");
        assertEquals(4, target.references());
        kill(victim);
        assertEquals(2, target.references());
        assertEquals(2, references(witness, target.number()));

        // a queue pair only the killed process held is destroyed
        final ShmChildProcess sole = child();
        final int orphan = Integer.parseInt(ShmChildProcess.value(sole.command("create", "ok qpn="), "qpn"));
        assertEquals(2, own(domain.openTargetQueuePair(orphan)).references());
        owned.pop().close();
        sole.command("openqp " + orphan, "ok");
        kill(sole);
        final IOException ex = assertThrows(IOException.class, () -> domain.openTargetQueuePair(orphan));
        assertTrue(ex.getMessage().contains("holds no target queue pair " + orphan), ex.getMessage());
        assertEquals(2, target.references());
    }

    @Test
    @Timeout(120)
    void shouldReclaimADomainWhoseEveryUserWasKilled() throws Exception {
        final ShmChildProcess only = child();
        only.command("create", "ok qpn=");
        assertTrue(registryExists(), listDirectory().toString());
        kill(only);
        // the next device to open on the host finds the registry without a live user
        device();
        assertFalse(registryExists(), listDirectory().toString());
        assertThrows(IOException.class, () -> device().openXrcDomain(domainFile, false));
    }

    @Test
    @Timeout(120)
    void shouldRefuseToCloseADomainHandleWhileItsTargetQueuePairsAreOpen() throws Exception {
        final RdmaDevice device = device();
        final XrcDomain domain = device.openXrcDomain(domainFile, true);
        final ShmChildProcess child = child();
        final int number = Integer.parseInt(ShmChildProcess.value(child.command("create", "ok qpn="), "qpn"));
        assertEquals("error XRC domain " + domainFile + " still has 1 target queue pairs [" + number + "] and 0 "
            + "shared receive queues [] open through this handle: close them first", child.command("closedomain",
            "error"));
        final XrcTargetQueuePair opened = domain.openTargetQueuePair(number);
        final IllegalStateException ex = assertThrows(IllegalStateException.class, domain::close);
        assertTrue(ex.getMessage().contains("still has 1 target queue pairs [" + number + "]"), ex.getMessage());
        opened.close();
        // this process leaves; the child's queue pair and the domain stay
        domain.close();
        assertTrue(registryExists(), listDirectory().toString());
        assertEquals(1, references(child, number));
        child.command("closeqp " + number, "ok");
        child.command("closedomain", "ok");
        assertFalse(registryExists(), listDirectory().toString());
    }

    @Test
    @Timeout(120)
    void shouldReportAnErrorToEveryProcessHoldingTheTargetQueuePair() throws Exception {
        final XrcDomain domain = domain();
        final XrcTargetQueuePair target = own(domain.createTargetQueuePair());
        final int number = target.number();
        final ShmChildProcess first = child();
        final ShmChildProcess second = child();
        first.command("openqp " + number, "ok");
        second.command("openqp " + number, "ok");
        first.command("events " + number, "ok events=-");
        first.command("error " + number, "ok");
        final List<QueuePairEvent> seen = new ArrayList<>();
        assertEquals(1, target.pollEvents((qpn, event) -> seen.add(event), 8));
        assertEquals(List.of(QueuePairEvent.LAST_WORK_REQUEST_REACHED), seen);
        assertEquals(QueuePairState.ERROR, target.state());
        for (final ShmChildProcess child : List.of(first, second)) {
            child.command("events " + number, "ok events=LAST_WORK_REQUEST_REACHED");
            child.command("events " + number, "ok events=-");
            child.command("state " + number, "ok state=ERROR");
            // each opener unregisters after the error
            child.command("closeqp " + number, "ok");
        }
        assertEquals(1, target.references());
    }

    /**
     * A process that keeps the registry's file lock (stopped while holding it) makes the others' calls fail after the
     * lock timeout instead of blocking them for good; they are served again once the lock is free.
     */
    @Test
    @Timeout(120)
    void shouldRefuseACallWhileAnotherProcessKeepsTheRegistryLockedAndServeItOnceFree() throws Exception {
        final XrcDomain domain = domain();
        final ShmChildProcess holder = child();
        final long defaultTimeout = XrcRegistry.lockTimeoutNanos;
        XrcRegistry.lockTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(300);
        try {
            holder.command("lock", "ok");
            final long start = System.nanoTime();
            final IllegalStateException ex = assertThrows(IllegalStateException.class, domain::createTargetQueuePair);
            final long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            assertEquals("XRC domain registry " + ((ShmXrcDomain) domain).registry().path() + " was locked by another "
                + "user for 300 ms (a stopped process?): the call is refused", ex.getMessage());
            assertTrue(waitedMillis >= 290 && waitedMillis < 10_000, "waited " + waitedMillis + " ms");
            holder.command("unlock", "ok");
            final XrcTargetQueuePair target = own(domain.createTargetQueuePair());
            holder.command("openqp " + target.number(), "ok");
            assertEquals(2, target.references());
        } finally {
            XrcRegistry.lockTimeoutNanos = defaultTimeout;
        }
    }

    /**
     * The XRC data path across processes: an initiator in this JVM, one target queue pair held by two child JVMs,
     * each with an XRC shared receive queue of its own. Each message lands in the process whose queue it names; the
     * creator's death leaves the target to the other holder (its queue still served, the dead one's refused); the
     * last holder's close destroys the target, and the initiator's next request finds no responder.
     */
    @Test
    @Timeout(120)
    void shouldDeliverIntoTheQueuesOfTwoProcessesThroughOneTargetHeldByBoth() throws Exception {
        final RdmaDevice device = device();
        final ProtectionDomain pd = own(device.allocateProtectionDomain());
        final CompletionQueue cq = own(device.createCompletionQueue(16, null, 0));
        final MemoryRegion mr = own(pd.allocate(4096, AccessFlags.LOCAL_WRITE));
        final QueuePair initiator = own(pd.createQueuePair(new QueuePairInitAttributes()
            .type(QueuePairType.XRC_SEND).sendCompletionQueue(cq).signalAll(true)));
        final ShmChildProcess creator = child();
        final ShmChildProcess holder = child();
        final String creatorGid = ShmChildProcess.value(creator.command("gid", "ok gid="), "gid");
        final int number = Integer.parseInt(ShmChildProcess.value(creator.command("create", "ok qpn="), "qpn"));
        holder.command("openqp " + number, "ok qpn=" + number);
        final int creatorQueue = Integer.parseInt(ShmChildProcess.value(creator.command("srq", "ok srqn="), "srqn"));
        final int holderQueue = Integer.parseInt(ShmChildProcess.value(holder.command("srq", "ok srqn="), "srqn"));
        creator.command("connect " + number + " " + HexFormat.of().formatHex(device.queryGid(1, 0)) + " "
            + initiator.number(), "ok");
        initiator.modify(QueuePairState.INIT, new QueuePairAttributes());
        initiator.modify(QueuePairState.READY_TO_RECEIVE, new QueuePairAttributes()
            .remoteGid(HexFormat.of().parseHex(creatorGid)).remoteQueuePairNumber(number));
        initiator.modify(QueuePairState.READY_TO_SEND, new QueuePairAttributes().retryCount(0));
        final SendWorkRequest send = initiator.createSendWorkRequest();

        assertEquals(CompletionStatus.SUCCESS, send(initiator, cq, send, mr, creatorQueue, "to the creator"));
        assertEquals(CompletionStatus.SUCCESS, send(initiator, cq, send, mr, holderQueue, "to the holder"));
        creator.command("recv 1", "ok recv=" + number + ":SUCCESS:to the creator");
        holder.command("recv 1", "ok recv=" + number + ":SUCCESS:to the holder");

        kill(creator);
        assertEquals(1, references(holder, number));
        assertEquals(CompletionStatus.SUCCESS, send(initiator, cq, send, mr, holderQueue, "still there"));
        holder.command("recv 1", "ok recv=" + number + ":SUCCESS:still there");
        // the creator's link ended: its queue is gone for the initiator
        ShmFixture.awaitCondition("the initiator to see the creator's device gone",
            () -> ((ShmQueuePair) initiator).xrcLinkCount() == 1);
        assertEquals(CompletionStatus.REMOTE_INVALID_REQUEST,
            send(initiator, cq, send, mr, creatorQueue, "to the dead"));
        holder.command("state " + number, "ok state=ERROR");
        holder.command("events " + number, "ok events=FATAL");

        holder.command("closeqp " + number, "ok");
        assertEquals("error XRC domain " + domainFile + " holds no target queue pair " + number
            + " (never created, or destroyed when its last user closed it)", holder.command("openqp " + number,
            "error"));
    }

    private static CompletionStatus send(final QueuePair qp, final CompletionQueue cq, final SendWorkRequest send,
        final MemoryRegion mr, final int queue, final String text) {
        final byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        MemorySegment.copy(MemorySegment.ofArray(bytes), 0, mr.segment(), 0, bytes.length);
        qp.postSend(send.reset().id(queue).opcode(WorkRequestOpcode.SEND).remoteSharedReceiveQueue(queue)
            .sge(0, mr.address(), bytes.length, mr.localKey()));
        final List<CompletionStatus> statuses = new ArrayList<>();
        ShmFixture.awaitCondition("the completion of a send to queue " + queue,
            () -> cq.poll(c -> statuses.add(c.status()), 1) == 1);
        return statuses.getFirst();
    }
}
