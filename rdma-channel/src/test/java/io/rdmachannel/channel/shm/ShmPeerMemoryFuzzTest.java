package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.fail;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendFlags;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.channel.spi.WorkRequestOpcode;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.AfterAll;

/**
 * A hostile local process B owns everything a peer's requests are executed against: its queue pair's shared block
 * (state, access flags, receive queue head, tail, ring and posted entries, the guard), its shared receive queue's file
 * when its queue pair takes receives from one, its completion queue's arming file (the arming bits and the waiter word
 * that our requests disarm and wake), its memory-region table (keys, access, domains, addresses, lengths, file ids)
 * and its region files, which it may truncate or replace by links to files of ours. It can also write the arming file
 * of our completion queue, which its mapping of our queue pair lets it reach. Our process A executes SEND, WRITE,
 * WRITE WITH IMMEDIATE and READ requests against it in between, and waits on its own completion queue. Every request
 * must complete within a bounded time, with success or an error status; posting, polling and waiting must never
 * throw; a wait must end by its timeout whatever the arming word says; and A's memory outside what a request names as
 * its local target (a READ's) must never change: a peer can never make us write our own memory, nor any file but its
 * own. Runs its corpus in every build; {@code ./rdmachannel fuzz} fuzzes it.
 */
class ShmPeerMemoryFuzzTest {
    private static final int DATA = 4096;
    private static final int REGION = 2 * DATA;
    private static final int RECEIVES = 4;
    /** B's receive queue is deep: a bad ring position must not index outside its ring, however far it points. */
    private static final int RECEIVE_CAPACITY = 256;
    private static final int RECEIVE_LENGTH = 256;
    private static final long COMPLETION_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Ids of the files B makes link to ours: far above the ids its pool hands out. */
    private static final int LINK_FILE_ID = 0x7ff00000;
    /** How long A's wait on its own completion queue asks for, and how long it may take at most. */
    private static final long WAIT_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    private static final long WAIT_BOUND_NANOS = TimeUnit.SECONDS.toNanos(2);

    private static Devices devices;

    /** The two devices, opened once for all inputs. */
    private record Devices(ShmDevice a, ShmDevice b) {
    }

    private static synchronized Devices devices() throws IOException {
        if (devices == null) {
            devices = new Devices((ShmDevice) RdmaProviders.byName("shm").openDevice(null),
                (ShmDevice) RdmaProviders.byName("shm").openDevice(null));
        }
        return devices;
    }

    @AfterAll
    static synchronized void close() {
        if (devices != null) {
            devices.b().close();
            devices.a().close();
            devices = null;
        }
    }

    @FuzzTest
    void shouldTouchOnlyThePeersMemoryWhateverThePeerWrites(final FuzzedDataProvider data) throws Exception {
        fuzz(data, false);
    }

    /**
     * One input. Without {@code queues} (this class's target, whose kept inputs decode as they always did) B's queue
     * pair has its own receive queue and nobody writes an arming word; with it ({@link ShmPeerQueueFuzzTest}) B may
     * take receives from a shared receive queue, write both arming files and resize its own, and A waits on its queue.
     */
    static void fuzz(final FuzzedDataProvider data, final boolean queues) throws Exception {
        final Devices pair = devices();
        final Deque<AutoCloseable> owned = new ArrayDeque<>();
        final Hostile hostile = new Hostile(pair.b().folder(), queues);
        try {
            final Side a = side(pair.a(), owned, false);
            final Side b = side(pair.b(), owned, queues && data.consumeBoolean());
            a.connectTo(b);
            b.connectTo(a);
            a.mr.segment().fill((byte) 0x5A);
            final byte[] sentinel = a.mr.segment().asSlice(DATA, DATA).toArray(ValueLayout.JAVA_BYTE);
            final int posted = data.consumeInt(0, RECEIVES);
            for (int i = 0; i < posted; i++) {
                final ReceiveWorkRequest receive = b.qp.createReceiveWorkRequest().id(i).sge(0,
                    b.mr.address() + (long) i * RECEIVE_LENGTH, RECEIVE_LENGTH, b.mr.localKey());
                if (b.srq != null) {
                    b.srq.postReceive(receive);
                } else {
                    b.qp.postReceive(receive);
                }
            }
            hostile.map(b, a);
            final int entry = MemoryRegionTableDescriptor.index(b.mr.remoteKey(), hostile.tableCapacity());
            final Path ourFile = regionFile(pair.a().folder(), a.mr);
            final SendWorkRequest send = a.qp.createSendWorkRequest();
            final int steps = data.consumeInt(1, 16);
            for (int step = 0; step < steps; step++) {
                final int action = data.consumeInt(0, queues ? 7 : 5);
                switch (action) {
                    case 0 -> hostile.writeBlock(data);
                    case 1 -> hostile.writeReceiveQueue(data, b.mr);
                    case 2 -> hostile.writeTable(data, entry, b.mr);
                    case 3 -> hostile.resizeFile(data, entry, b.qp.number());
                    case 4 -> hostile.linkToOurs(data, entry, ourFile);
                    case 5 -> {
                        if (queues) {
                            hostile.writeArming(data);
                        } else {
                            execute(a, b, send, data, step);
                        }
                    }
                    case 6 -> awaitOwnQueue(a);
                    default -> execute(a, b, send, data, step);
                }
            }
            execute(a, b, send, data, steps);
            assertArrayEquals(sentinel, a.mr.segment().asSlice(DATA, DATA).toArray(ValueLayout.JAVA_BYTE),
                "our memory outside every local target changed: the peer made us write it");
        } finally {
            hostile.restore();
            while (!owned.isEmpty()) {
                owned.pop().close();
            }
        }
    }

    /**
     * A posts one request of the fuzzer's choice and waits for its completion: success or an error, within the
     * bound, and no exception out of posting or polling.
     */
    private static void execute(final Side a, final Side b, final SendWorkRequest send,
        final FuzzedDataProvider data, final int id) {
        final WorkRequestOpcode opcode = data.pickValue(WorkRequestOpcode.values());
        final int offset = data.consumeInt(0, DATA);
        final int length = data.consumeInt(0, DATA - offset);
        send.reset().id(id).opcode(opcode).flags(SendFlags.SIGNALED).sge(0, a.mr.address() + offset, length,
            a.mr.localKey());
        if (opcode == WorkRequestOpcode.SEND_WITH_IMM || opcode == WorkRequestOpcode.RDMA_WRITE_WITH_IMM) {
            send.immediate(id);
        }
        if (opcode.name().startsWith("RDMA")) {
            send.remote(data.consumeBoolean() ? b.mr.address() + data.consumeInt(-64, REGION) : data.consumeLong(),
                data.consumeBoolean() ? b.mr.remoteKey() : data.consumeInt());
        }
        a.qp.postSend(send);
        final List<Long> completed = new ArrayList<>();
        final long deadline = System.nanoTime() + COMPLETION_NANOS;
        while (!completed.contains((long) id)) {
            a.cq.poll(completion -> completed.add(completion.workRequestId()), 16);
            if (System.nanoTime() - deadline > 0) {
                fail("request " + id + " (" + opcode + ") did not complete within 10 s: " + a.qp);
            }
            LockSupport.parkNanos(10_000);
        }
    }

    /**
     * A waits on its own completion queue for a moment, as a blocked reader does: whatever B wrote into the arming
     * word, the wait ends by its timeout (or earlier), and neither arming nor waiting throws.
     */
    private static void awaitOwnQueue(final Side a) {
        if (!a.cq.supportsDirectWait()) {
            return;
        }
        final long start = System.nanoTime();
        a.cq.awaitWakeup(a.cq.requestWaiterWakeup(), WAIT_NANOS);
        final long waited = System.nanoTime() - start;
        if (waited > WAIT_BOUND_NANOS) {
            fail("a wait of " + WAIT_NANOS + " ns on our completion queue took " + waited + " ns: " + a.cq);
        }
    }

    private static Path regionFile(final Path folder, final MemoryRegion region) throws IOException {
        try (SharedFile table = SharedFile.open(folder.resolve("mrtable"))) {
            final int capacity = (int) (table.segment().byteSize() / MemoryRegionTableDescriptor.ENTRY_LENGTH);
            final long entry = MemoryRegionTableDescriptor.entryOffset(
                MemoryRegionTableDescriptor.index(region.remoteKey(), capacity));
            return folder.resolve(SharedFile.pooledName(
                table.segment().get(Atomics.INT, entry + MemoryRegionTableDescriptor.FILE_ID_OFFSET)));
        }
    }

    /**
     * What B's process does to its own shared files, through mappings of its own as another process would have;
     * everything is undone afterwards so that B's objects can close and the devices serve the next input.
     */
    private static final class Hostile {
        private final Path folder;
        private final Deque<Runnable> undo = new ArrayDeque<>();
        /** B's files it maps, and what is left of each: B's own writes past a truncation would fault in B. */
        private final Map<MemorySegment, long[]> left = new IdentityHashMap<>();
        private final List<SharedFile> mapped = new ArrayList<>();
        private SharedFile table;
        private SharedFile block;
        /** The receive queue B's requests take receives from: in its block, or its shared receive queue's file. */
        private SharedFile receiveFile;
        private long receiveBase;
        /** B's completion queue's arming file, and ours, which B reaches through its mapping of our queue pair. */
        private SharedFile arming;
        private SharedFile ourArming;
        private int receiveCapacity;
        private int receiveMaxSge;

        /** Whether the queues' files are fair game too (see {@link #fuzz}). */
        private final boolean queues;

        Hostile(final Path folder, final boolean queues) {
            this.folder = folder;
            this.queues = queues;
        }

        void map(final Side b, final Side a) throws IOException {
            table = open(folder.resolve("mrtable"));
            block = open(folder.resolve(QueuePairBlockDescriptor.fileName(b.qp.number())).toRealPath());
            if (b.srq != null) {
                receiveFile = open(folder.resolve(SharedFile.pooledName(((ShmSharedReceiveQueue) b.srq).fileId())));
                receiveBase = 0;
            } else {
                receiveFile = block;
                receiveBase = QueuePairBlockDescriptor.receiveQueueOffset();
            }
            arming = open(folder.resolve(SharedFile.pooledName(((ShmCompletionQueue) b.cq).fileId())));
            ourArming = open(a.device.folder().resolve(SharedFile.pooledName(((ShmCompletionQueue) a.cq).fileId())));
            receiveCapacity = receiveFile.segment().get(Atomics.INT,
                receiveBase + ReceiveQueueDescriptor.CAPACITY_OFFSET);
            receiveMaxSge = receiveFile.segment().get(Atomics.INT, receiveBase + ReceiveQueueDescriptor.MAX_SGE_OFFSET);
        }

        private SharedFile open(final Path path) throws IOException {
            final SharedFile file = SharedFile.open(path);
            mapped.add(file);
            left.put(file.segment(), new long[] {file.segment().byteSize()});
            return file;
        }

        private long left(final MemorySegment segment) {
            return left.get(segment)[0];
        }

        /**
         * An int of B's arming file (the arming bits, the waiter word, or past them), or of ours: a valid bit set, a
         * word near the current one, or any value.
         */
        void writeArming(final FuzzedDataProvider data) {
            final SharedFile file = data.consumeBoolean() ? arming : ourArming;
            final long offset = data.consumeBoolean()
                ? data.pickValue(new int[] {ShmCompletionQueue.ARMED_OFFSET, ShmCompletionQueue.WAITER_OFFSET})
                : (long) data.consumeInt(0, ShmCompletionQueue.FILE_LENGTH / Integer.BYTES - 1) * Integer.BYTES;
            if (offset + Integer.BYTES > left(file.segment())) {
                return;
            }
            final int current = file.segment().get(Atomics.INT, offset);
            writeInt(file.segment(), offset, switch (data.consumeInt(0, 2)) {
                case 0 -> data.consumeInt(0, 7);
                case 1 -> current + data.consumeInt(-2, 2);
                default -> data.consumeInt();
            });
        }

        int tableCapacity() {
            return (int) (table.segment().byteSize() / MemoryRegionTableDescriptor.ENTRY_LENGTH);
        }

        /** Any int anywhere in the block's header, receive queue and inbound ring. */
        void writeBlock(final FuzzedDataProvider data) {
            final long limit = Math.min(block.segment().byteSize(), 8192) / Integer.BYTES;
            final long offset = data.consumeLong(0, limit - 1) * Integer.BYTES;
            write(block.segment(), offset, Integer.BYTES, () -> block.segment().set(ValueLayout.JAVA_INT, offset,
                data.consumeInt()));
        }

        /** The receive queue's head, tail, ring or a posted slot's fields, near-valid values or any. */
        void writeReceiveQueue(final FuzzedDataProvider data, final MemoryRegion region) {
            final MemorySegment segment = receiveFile.segment();
            if (left(segment) < segment.byteSize()) {
                return;
            }
            final long base = receiveBase;
            // the layout as the owner formatted it (read before any hostile write): the header may say anything now
            final int capacity = receiveCapacity;
            final int maxSge = receiveMaxSge;
            final int slot = data.consumeInt(0, Math.max(0, capacity - 1));
            final long slotOffset = base + ReceiveQueueDescriptor.slotOffset(capacity, maxSge, slot);
            final long sge = ReceiveQueueDescriptor.sgeOffset(slotOffset, data.consumeInt(0, Math.max(0, maxSge - 1)));
            switch (data.consumeInt(0, 7)) {
                case 0 -> writeLong(segment, base + ReceiveQueueDescriptor.HEAD_OFFSET, data.consumeBoolean()
                    ? data.consumeLong(-2, 2 * RECEIVES) : data.consumeLong());
                case 1 -> writeLong(segment, base + ReceiveQueueDescriptor.TAIL_OFFSET, data.consumeBoolean()
                    ? data.consumeLong(-2, 2 * RECEIVES) : data.consumeLong());
                case 2 -> writeInt(segment, base + ReceiveQueueDescriptor.ringOffset(data.consumeInt(0,
                    Math.max(0, capacity - 1))), data.consumeBoolean() ? data.consumeInt(-1, capacity)
                    : data.consumeInt());
                case 3 -> writeInt(segment, slotOffset + ReceiveQueueDescriptor.SLOT_SGE_COUNT_OFFSET,
                    data.consumeBoolean() ? data.consumeInt(-1, maxSge + 1) : data.consumeInt());
                case 4 -> writeLong(segment, sge + ReceiveQueueDescriptor.SGE_ADDRESS_OFFSET, data.consumeBoolean()
                    ? region.address() + data.consumeInt(-64, REGION) : data.consumeLong());
                case 5 -> writeInt(segment, sge + ReceiveQueueDescriptor.SGE_LENGTH_OFFSET, data.consumeBoolean()
                    ? data.consumeInt(0, REGION) : data.consumeInt());
                case 6 -> writeInt(segment, sge + ReceiveQueueDescriptor.SGE_LKEY_OFFSET, data.consumeBoolean()
                    ? region.localKey() : data.consumeInt());
                default -> writeLong(segment, slotOffset + ReceiveQueueDescriptor.SLOT_WR_ID_OFFSET,
                    data.consumeLong());
            }
        }

        /** A field of the region's table entry (or of a neighbour), near-valid values or any. */
        void writeTable(final FuzzedDataProvider data, final int entry, final MemoryRegion region) {
            final int index = data.consumeBoolean() ? entry : data.consumeInt(0, tableCapacity() - 1);
            final long at = MemoryRegionTableDescriptor.entryOffset(index);
            final MemorySegment segment = table.segment();
            switch (data.consumeInt(0, 5)) {
                case 0 -> writeLong(segment, at + MemoryRegionTableDescriptor.GUARD_OFFSET, data.consumeBoolean()
                    ? (long) region.remoteKey() << 32 | data.consumeInt(0, 3) : data.consumeLong());
                case 1 -> writeInt(segment, at + MemoryRegionTableDescriptor.ACCESS_OFFSET, data.consumeInt());
                case 2 -> writeInt(segment, at + MemoryRegionTableDescriptor.PD_OFFSET, data.consumeInt());
                case 3 -> writeLong(segment, at + MemoryRegionTableDescriptor.ADDRESS_OFFSET, data.consumeBoolean()
                    ? region.address() + data.consumeInt(-REGION, REGION) : data.consumeLong());
                case 4 -> writeLong(segment, at + MemoryRegionTableDescriptor.LENGTH_OFFSET, data.consumeBoolean()
                    ? data.consumeLong(-1, 4L * REGION) : data.consumeLong());
                default -> writeInt(segment, at + MemoryRegionTableDescriptor.FILE_ID_OFFSET, data.consumeBoolean()
                    ? data.consumeInt(0, 64) : data.consumeInt());
            }
        }

        /**
         * Truncate (or grow) the region's file, the table or the block behind the back of every mapping of it; the
         * content comes back afterwards.
         */
        void resizeFile(final FuzzedDataProvider data, final int entry, final int queuePairNumber)
            throws IOException {
            if (left(table.segment()) < table.segment().byteSize()) {
                return;
            }
            final Path file = switch (data.consumeInt(0, queues ? 4 : 2)) {
                case 0 -> folder.resolve("mrtable");
                case 1 -> folder.resolve(QueuePairBlockDescriptor.fileName(queuePairNumber)).toRealPath();
                case 3 -> arming.path();
                case 4 -> receiveFile.path();
                default -> folder.resolve(SharedFile.pooledName(table.segment().get(Atomics.INT,
                    MemoryRegionTableDescriptor.entryOffset(entry) + MemoryRegionTableDescriptor.FILE_ID_OFFSET)));
            };
            if (!Files.isRegularFile(file, LinkOption.NOFOLLOW_LINKS)
                || SharedFile.pooledId(file.getFileName().toString()) >= LINK_FILE_ID) {
                return;
            }
            final byte[] content = Files.readAllBytes(file);
            final long length = data.consumeLong(0, 2L * content.length);
            setLength(file, length);
            for (final SharedFile shared : mapped) {
                if (file.equals(shared.path().toRealPath())) {
                    final long[] remaining = left.get(shared.segment());
                    remaining[0] = Math.min(remaining[0], length);
                }
            }
            undo.push(() -> {
                try {
                    setLength(file, content.length);
                    Files.write(file, content, StandardOpenOption.WRITE);
                } catch (final IOException ex) {
                    throw new IllegalStateException("cannot restore " + file, ex);
                }
            });
        }

        /** Put a file of B's pool that is a link to our region's file, and name it in the region's entry. */
        void linkToOurs(final FuzzedDataProvider data, final int entry, final Path ourFile) throws IOException {
            final int fileId = LINK_FILE_ID + data.consumeInt(0, 3);
            final Path link = folder.resolve(SharedFile.pooledName(fileId));
            if (!Files.exists(link, LinkOption.NOFOLLOW_LINKS)) {
                if (data.consumeBoolean()) {
                    Files.createSymbolicLink(link, ourFile);
                } else {
                    Files.createLink(link, ourFile);
                }
                undo.push(() -> {
                    try {
                        Files.deleteIfExists(link);
                    } catch (final IOException ex) {
                        throw new IllegalStateException("cannot delete " + link, ex);
                    }
                });
            }
            writeInt(table.segment(), MemoryRegionTableDescriptor.entryOffset(entry)
                + MemoryRegionTableDescriptor.FILE_ID_OFFSET, fileId);
        }

        private void writeInt(final MemorySegment segment, final long offset, final int value) {
            write(segment, offset, Integer.BYTES, () -> segment.set(ValueLayout.JAVA_INT, offset, value));
        }

        private void writeLong(final MemorySegment segment, final long offset, final long value) {
            write(segment, offset, Long.BYTES, () -> segment.set(ValueLayout.JAVA_LONG_UNALIGNED, offset, value));
        }

        private void write(final MemorySegment segment, final long offset, final int length, final Runnable write) {
            if (offset < 0 || offset + length > Math.min(left(segment), segment.byteSize())) {
                return;
            }
            final byte[] before = segment.asSlice(offset, length).toArray(ValueLayout.JAVA_BYTE);
            write.run();
            undo.push(() -> MemorySegment.copy(before, 0, segment, ValueLayout.JAVA_BYTE, offset, length));
        }

        /** Undo in reverse order, then unmap. */
        void restore() {
            while (!undo.isEmpty()) {
                undo.pop().run();
            }
            for (int i = mapped.size() - 1; i >= 0; i--) {
                mapped.get(i).close();
            }
        }

        private static void setLength(final Path file, final long length) throws IOException {
            try (RandomAccessFile access = new RandomAccessFile(file.toFile(), "rw")) {
                access.setLength(length);
            }
        }
    }

    /**
     * One end: a queue pair with its own completion queue and a file-backed region open to the peer.
     */
    private record Side(ShmDevice device, QueuePair qp, CompletionQueue cq, MemoryRegion mr, SharedReceiveQueue srq) {
        void connectTo(final Side peer) throws IOException {
            ShmFixture.connect(qp, ShmFixture.FULL_ACCESS, peer.device.queryGid(1, 0), peer.qp.number(),
                attributes -> attributes.retryCount(1).rnrRetry(1).timeout(1).minRnrTimer(1));
        }
    }

    /** One end; with {@code shared}, its queue pair takes its receives from a shared receive queue. */
    private static Side side(final ShmDevice device, final Deque<AutoCloseable> owned, final boolean shared)
        throws IOException {
        final ProtectionDomain pd = device.allocateProtectionDomain();
        owned.push(pd);
        final CompletionQueue cq = device.createCompletionQueue(2 * RECEIVE_CAPACITY, null, 0);
        owned.push(cq);
        final MemoryRegion mr = pd.allocate(REGION, ShmFixture.FULL_ACCESS);
        owned.push(mr);
        final SharedReceiveQueue srq = shared ? pd.createSharedReceiveQueue(RECEIVE_CAPACITY, 1) : null;
        if (srq != null) {
            owned.push(srq);
        }
        final QueuePairInitAttributes attributes = new QueuePairInitAttributes().sendCompletionQueue(cq)
            .receiveCompletionQueue(cq).maxSendWorkRequests(RECEIVES).maxSendSge(1);
        final QueuePair qp = pd.createQueuePair(srq != null ? attributes.sharedReceiveQueue(srq)
            : attributes.maxReceiveWorkRequests(RECEIVE_CAPACITY).maxReceiveSge(1));
        owned.push(qp);
        return new Side(device, qp, cq, mr, srq);
    }
}
