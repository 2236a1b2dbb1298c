package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The guards that keep reused shm memory out of a stale peer's reach: a peer mapping of a queue pair that was closed
 * and whose block now holds another queue pair is refused every access, and a region whose memory a peer access
 * still touches is not reused.
 */
class ShmReuseGuardTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();

    @Test
    void shouldRefuseAStalePeerEveryAccessToAReusedQueuePairBlock() throws Exception {
        final ShmDevice local = (ShmDevice) fixture.device();
        final ShmDevice owner = (ShmDevice) fixture.device();
        final ProtectionDomain pd = fixture.own(owner.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(owner.createCompletionQueue(16, null, 0));
        final QueuePair closed = pd.createQueuePair(attributes(cq));
        final Path closedLink = Files.readSymbolicLink(owner.folder().resolve(
            QueuePairBlockDescriptor.fileName(closed.number())));
        final RemotePeer stale = RemotePeer.connect(local, owner.gid(), closed.number());
        try {
            assertTrue(stale.enter());
            stale.exit();

            closed.close();
            final QueuePair reused = fixture.own(pd.createQueuePair(attributes(cq)));
            assertEquals(closedLink, Files.readSymbolicLink(owner.folder().resolve(
                QueuePairBlockDescriptor.fileName(reused.number()))), "the pool should give the block's file again");
            assertNotEquals(closed.number(), reused.number());

            assertFalse(stale.enter(), "a stale peer entered a reused block");
            assertEquals(QueuePairBlockDescriptor.STATE_DESTROYED, stale.state());
            assertTrue(stale.isGone());
            assertEquals(-1, stale.generation());
            stale.setError();
            assertEquals(QueuePairState.RESET, reused.state(), "a stale peer changed the new queue pair's state");
            final IOException gone = assertThrows(IOException.class,
                () -> RemotePeer.connect(local, owner.gid(), closed.number()));
            assertEquals("no queue pair " + closed.number() + " on shm device " + owner.gidHex(), gone.getMessage());
        } finally {
            stale.close();
        }
    }

    @Test
    void shouldSayWhetherAPeerAccessMayOutliveTheClose() throws Exception {
        final ShmDevice local = (ShmDevice) fixture.device();
        final ShmDevice owner = (ShmDevice) fixture.device();
        final ProtectionDomain pd = fixture.own(owner.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(owner.createCompletionQueue(16, null, 0));
        final QueuePair quiet = pd.createQueuePair(attributes(cq));
        final QueuePair held = pd.createQueuePair(attributes(cq));
        final RemotePeer visitor = RemotePeer.connect(local, owner.gid(), quiet.number());
        final RemotePeer stuck = RemotePeer.connect(local, owner.gid(), held.number());
        try {
            assertFalse(quiet.peerAccessEnded(), "an open queue pair is not quiescent");
            assertTrue(visitor.enter());
            visitor.exit();
            quiet.close();
            assertTrue(quiet.peerAccessEnded(), "every peer access had ended");

            assertTrue(stuck.enter());
            held.close();
            assertFalse(held.peerAccessEnded(), "a peer access was still under way when the close gave up on it");
            stuck.exit();
        } finally {
            visitor.close();
            stuck.close();
        }
    }

    /**
     * A region closed while a peer access is under way is not reused, and its key stops resolving. A close waits for
     * the access a while; an abandon (its peer died in the access, which never ends) does not wait.
     */
    @ParameterizedTest(name = "abandon={0}")
    @ValueSource(booleans = {false, true})
    void shouldNotReuseARegionWhileAPeerAccessIsUnderWay(final boolean abandon) throws Exception {
        final ShmDevice local = (ShmDevice) fixture.device();
        final ShmDevice owner = (ShmDevice) fixture.device();
        final ProtectionDomain pd = fixture.own(owner.allocateProtectionDomain());
        final MemoryRegion held = pd.allocate(4096, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
        final PeerNode node = local.peer(owner.gidHex());
        try {
            final PeerNode.Cursor cursor = new PeerNode.Cursor();
            assertEquals(PeerNode.OK, node.resolve(held.remoteKey(), held.address(), 8, AccessFlags.REMOTE_WRITE,
                ((ShmProtectionDomain) pd).handle(), cursor));

            final long start = System.nanoTime();
            if (abandon) {
                held.abandon();
            } else {
                held.close();
            }
            final long took = System.nanoTime() - start;
            assertEquals(!abandon, took >= ShmDevice.DRAIN_TIMEOUT_NANOS / 2,
                abandon ? "the abandon waited for the access under way" : "the close did not wait for the access");
            node.done(cursor);
            final MemoryRegion next = fixture.own(pd.allocate(4096, AccessFlags.LOCAL_WRITE));
            assertNotEquals(fileOf(held), fileOf(next), "memory a peer access still touched was reused");
            assertEquals(PeerNode.ACCESS_ERROR, node.resolve(held.remoteKey(), held.address(), 8,
                AccessFlags.REMOTE_WRITE, ((ShmProtectionDomain) pd).handle(), cursor));
        } finally {
            local.release(node);
        }
    }

    @Test
    void shouldReuseARegionOnceThePeerAccessUnderWayEnds() throws Exception {
        final ShmDevice local = (ShmDevice) fixture.device();
        final ShmDevice owner = (ShmDevice) fixture.device();
        final ProtectionDomain pd = fixture.own(owner.allocateProtectionDomain());
        final MemoryRegion held = pd.allocate(4096, AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE);
        final PeerNode node = local.peer(owner.gidHex());
        try {
            final PeerNode.Cursor cursor = new PeerNode.Cursor();
            assertEquals(PeerNode.OK, node.resolve(held.remoteKey(), held.address(), 8, AccessFlags.REMOTE_WRITE,
                ((ShmProtectionDomain) pd).handle(), cursor));
            final CompletableFuture<Void> closing = CompletableFuture.runAsync(held::close);
            Thread.sleep(10);
            assertFalse(closing.isDone(), "the close did not wait for the access under way");
            node.done(cursor);
            closing.get(10, TimeUnit.SECONDS);
            final MemoryRegion next = fixture.own(pd.allocate(4096,
                AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE));
            assertEquals(fileOf(held), fileOf(next), "the drained region's memory should be reused");
            assertNotEquals(held.remoteKey(), next.remoteKey());
            assertEquals(PeerNode.ACCESS_ERROR, node.resolve(held.remoteKey(), held.address(), 8,
                AccessFlags.REMOTE_WRITE, ((ShmProtectionDomain) pd).handle(), cursor), "a stale key resolved");
        } finally {
            local.release(node);
        }
    }

    private static int fileOf(final MemoryRegion region) {
        return ((ShmMemoryRegion) region).fileId();
    }

    /**
     * A closed queue pair's name (its link in the device's folder) is removed by the device's agent, off the closing
     * thread's path; until then a peer looking the number up is told it is gone. A link that names another file by
     * the time the agent comes (a newer queue pair's of the same number) is left alone.
     */
    @Test
    void shouldRemoveAClosedQueuePairsNameByTheAgent() throws Exception {
        final ShmDevice local = (ShmDevice) fixture.device();
        final ShmDevice owner = (ShmDevice) fixture.device();
        final ProtectionDomain pd = fixture.own(owner.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(owner.createCompletionQueue(16, null, 0));
        final QueuePair closed = pd.createQueuePair(attributes(cq));
        final Path name = owner.folder().resolve(QueuePairBlockDescriptor.fileName(closed.number()));
        assertTrue(Files.isSymbolicLink(name));
        closed.close();
        final IOException gone = assertThrows(IOException.class,
            () -> RemotePeer.connect(local, owner.gid(), closed.number()));
        assertEquals("no queue pair " + closed.number() + " on shm device " + owner.gidHex(), gone.getMessage());
        ShmFixture.awaitCondition("the agent to remove the closed queue pair's name",
            () -> !Files.exists(name, LinkOption.NOFOLLOW_LINKS));

        Files.createSymbolicLink(name, Path.of("another-file"));
        owner.forgetName(name.getFileName().toString(), "the-closed-queue-pairs-file");
        owner.removeForgottenNames();
        assertEquals(Path.of("another-file"), Files.readSymbolicLink(name), "a newer name was removed");
        Files.delete(name);
    }

    /**
     * The agent is not woken for every closed queue pair (waking it costs the closing thread), only when it waits
     * without a deadline: a file released while it waits so (nothing pooled, no peers) is still given back after the
     * idle time, and so is the closed queue pair's name.
     */
    @Test
    void shouldTrimAFileReleasedWhileTheAgentWaitedWithoutADeadline() throws Exception {
        final Properties properties = new Properties(System.getProperties());
        properties.setProperty(ShmConfiguration.POOL_IDLE_MILLIS_PROP_NAME, "50");
        final ShmDevice device = fixture.own(ShmDevice.open((ShmProvider) ShmFixture.provider(),
            ShmConfiguration.fromProperties(properties)));
        final ProtectionDomain pd = fixture.own(device.allocateProtectionDomain());
        final CompletionQueue cq = fixture.own(device.createCompletionQueue(16, null, 0));
        final QueuePair pair = pd.createQueuePair(attributes(cq));
        final Path name = device.folder().resolve(QueuePairBlockDescriptor.fileName(pair.number()));
        // nothing idle and no peers: the agent's next wait has no deadline
        Thread.sleep(200);
        assertEquals(0, device.filePool().idleFiles());
        pair.close();
        assertTrue(device.filePool().idleFiles() > 0, "the closed queue pair's block was not pooled");
        ShmFixture.awaitCondition("the idle file to be given back",
            () -> device.filePool().idleFiles() == 0 && !Files.exists(name, LinkOption.NOFOLLOW_LINKS));
    }

    private static QueuePairInitAttributes attributes(final CompletionQueue cq) {
        return new QueuePairInitAttributes().sendCompletionQueue(cq).receiveCompletionQueue(cq)
            .maxSendWorkRequests(8).maxReceiveWorkRequests(8);
    }
}
