package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.fail;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.CompletionOpcode;
import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.CompletionStatus;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.QueuePair;
import io.rdmachannel.channel.spi.QueuePairAttributes;
import io.rdmachannel.channel.spi.QueuePairInitAttributes;
import io.rdmachannel.channel.spi.QueuePairState;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;
import io.rdmachannel.channel.spi.RdmaProviders;
import io.rdmachannel.channel.spi.ReadinessSource;
import io.rdmachannel.channel.spi.ReceiveWorkRequest;
import io.rdmachannel.channel.spi.SendWorkRequest;
import io.rdmachannel.channel.spi.WorkCompletion;
import io.rdmachannel.channel.spi.WorkRequestOpcode;

import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.UnaryOperator;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * Test fixture for the shm provider: opens devices and connected queue-pair pairs, owns every object it creates,
 * closes them in reverse order of creation after each test, and dumps the queue pairs and completion queues when a
 * test fails. Register it with {@code @RegisterExtension final ShmFixture fixture = new ShmFixture();}.
 */
final class ShmFixture implements AfterEachCallback, TestExecutionExceptionHandler {
    /** How long any wait in a test may take before it fails. */
    static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** Remote access a pair's queue pairs and peer-facing regions allow by default. */
    static final int FULL_ACCESS = AccessFlags.LOCAL_WRITE | AccessFlags.REMOTE_WRITE | AccessFlags.REMOTE_READ;

    private final Deque<AutoCloseable> owned = new ArrayDeque<>();
    private final List<Object> watched = new ArrayList<>();

    /**
     * A completion copied out of the flyweight.
     */
    record Completion(long id, CompletionStatus status, CompletionOpcode opcode, int byteLength,
        boolean hasImmediate, int immediate, int queuePairNumber) {

        static Completion of(final WorkCompletion completion) {
            return new Completion(completion.workRequestId(), completion.status(), completion.opcode(),
                completion.byteLength(), completion.hasImmediate(), completion.immediate(),
                completion.queuePairNumber());
        }
    }

    /**
     * How a pair is built; every setter returns this.
     */
    static final class Config {
        private boolean sameDevice;
        private boolean connect = true;
        private ShmConfiguration.Transport transportA = ShmConfiguration.Transport.INFINIBAND;
        private ShmConfiguration.Transport transportB = ShmConfiguration.Transport.INFINIBAND;
        private boolean readinessSources;
        private int completionQueueEntries = 4096;
        private long regionLength = 4096;
        private int regionAccessA = FULL_ACCESS;
        private int regionAccessB = FULL_ACCESS;
        private int queuePairAccessA = FULL_ACCESS;
        private int queuePairAccessB = FULL_ACCESS;
        private UnaryOperator<QueuePairInitAttributes> initA = UnaryOperator.identity();
        private UnaryOperator<QueuePairInitAttributes> initB = UnaryOperator.identity();
        private UnaryOperator<QueuePairAttributes> connectA = UnaryOperator.identity();
        private UnaryOperator<QueuePairAttributes> connectB = UnaryOperator.identity();

        Config sameDevice(final boolean value) {
            this.sameDevice = value;
            return this;
        }

        Config connect(final boolean value) {
            this.connect = value;
            return this;
        }

        /** The transport both devices emulate ({@link ShmConfiguration#TRANSPORT_PROP_NAME}). */
        Config transport(final ShmConfiguration.Transport value) {
            return transports(value, value);
        }

        /** The transports A's and B's devices emulate. */
        Config transports(final ShmConfiguration.Transport a, final ShmConfiguration.Transport b) {
            this.transportA = a;
            this.transportB = b;
            return this;
        }

        Config readinessSources(final boolean value) {
            this.readinessSources = value;
            return this;
        }

        Config completionQueueEntries(final int value) {
            this.completionQueueEntries = value;
            return this;
        }

        Config regionLength(final long value) {
            this.regionLength = value;
            return this;
        }

        Config regionAccessA(final int value) {
            this.regionAccessA = value;
            return this;
        }

        Config regionAccessB(final int value) {
            this.regionAccessB = value;
            return this;
        }

        Config queuePairAccessA(final int value) {
            this.queuePairAccessA = value;
            return this;
        }

        Config queuePairAccessB(final int value) {
            this.queuePairAccessB = value;
            return this;
        }

        /** Adjust A's creation attributes (CQs are set by the fixture afterwards). */
        Config initA(final UnaryOperator<QueuePairInitAttributes> value) {
            this.initA = value;
            return this;
        }

        Config initB(final UnaryOperator<QueuePairInitAttributes> value) {
            this.initB = value;
            return this;
        }

        /** Adjust the attributes A uses for every transition (RTR and RTS values, e.g. rnrRetry, minRnrTimer). */
        Config connectA(final UnaryOperator<QueuePairAttributes> value) {
            this.connectA = value;
            return this;
        }

        Config connectB(final UnaryOperator<QueuePairAttributes> value) {
            this.connectB = value;
            return this;
        }
    }

    /**
     * One end: device, protection domain, optional readiness source, one completion queue for sends and receives,
     * one allocated region and the queue pair, plus reusable requests.
     */
    static final class Side {
        final String name;
        final RdmaDevice device;
        final ProtectionDomain pd;
        final ReadinessSource source;
        final CompletionQueue cq;
        final MemoryRegion mr;
        final QueuePair qp;
        final SendWorkRequest send;
        final ReceiveWorkRequest recv;
        final int queuePairAccess;
        final UnaryOperator<QueuePairAttributes> connectAttributes;

        Side(final String name, final RdmaDevice device, final ProtectionDomain pd, final ReadinessSource source,
            final CompletionQueue cq, final MemoryRegion mr, final QueuePair qp, final int queuePairAccess,
            final UnaryOperator<QueuePairAttributes> connectAttributes) {
            this.name = name;
            this.device = device;
            this.pd = pd;
            this.source = source;
            this.cq = cq;
            this.mr = mr;
            this.qp = qp;
            this.send = qp.createSendWorkRequest();
            this.recv = qp.createReceiveWorkRequest();
            this.queuePairAccess = queuePairAccess;
            this.connectAttributes = connectAttributes;
        }

        /** Post a receive of {@code length} bytes at {@code offset} of this side's region. */
        void postReceive(final long id, final long offset, final int length) {
            qp.postReceive(recv.reset().id(id).sge(0, mr.address() + offset, length, mr.localKey()));
        }

        /** Post a SEND (or SEND WITH IMM) of {@code length} bytes at {@code offset} of this side's region. */
        void postSend(final WorkRequestOpcode opcode, final long id, final int flags, final long offset,
            final int length) {
            qp.postSend(send.reset().id(id).opcode(opcode).flags(flags)
                .sge(0, mr.address() + offset, length, mr.localKey()));
        }

        /** Post an RDMA request between {@code offset} of this region and {@code remoteAddress}. */
        void postRdma(final WorkRequestOpcode opcode, final long id, final int flags, final long offset,
            final int length, final long remoteAddress, final int remoteKey) {
            qp.postSend(send.reset().id(id).opcode(opcode).flags(flags).remote(remoteAddress, remoteKey)
                .sge(0, mr.address() + offset, length, mr.localKey()));
        }

        /** Every completion available now. */
        List<Completion> poll() {
            final List<Completion> completions = new ArrayList<>();
            while (cq.poll(c -> completions.add(Completion.of(c)), 64) > 0) {
                // drain
            }
            return completions;
        }

        /** Wait for exactly {@code count} completions (fails if more are available at that point). */
        List<Completion> await(final int count) {
            final List<Completion> completions = new ArrayList<>();
            awaitCondition(name + " to see " + count + " completions", () -> {
                cq.poll(c -> completions.add(Completion.of(c)), count - completions.size());
                return completions.size() == count;
            });
            return completions;
        }

        /** Wait for one completion. */
        Completion awaitOne() {
            return await(1).getFirst();
        }

        /** Move RESET to RTS against a peer. */
        void connectTo(final Side peer) throws IOException {
            connect(qp, queuePairAccess, peer.device.queryGid(1, 0), peer.qp.number(), connectAttributes);
        }

        @Override
        public String toString() {
            return name + ": " + qp + ", " + cq;
        }
    }

    /**
     * Two sides A and B whose queue pairs are connected to each other.
     */
    static final class Pair {
        final Side a;
        final Side b;

        Pair(final Side a, final Side b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public String toString() {
            return a + "; " + b;
        }
    }

    // ----- creation -----

    static RdmaProvider provider() {
        return RdmaProviders.byName(ShmProvider.NAME);
    }

    /** Open a device owned by the fixture. */
    RdmaDevice device() throws IOException {
        return own(provider().openDevice(null));
    }

    /** Open a device owned by the fixture that emulates a transport, whatever the system properties say. */
    RdmaDevice device(final ShmConfiguration.Transport transport) throws IOException {
        final Properties properties = new Properties(System.getProperties());
        properties.setProperty(ShmConfiguration.TRANSPORT_PROP_NAME, transport.propertyValue());
        return own(ShmDevice.open((ShmProvider) provider(), ShmConfiguration.fromProperties(properties)));
    }

    /** Take ownership: closed after the test, in reverse order of {@code own} calls. */
    <T extends AutoCloseable> T own(final T resource) {
        owned.push(resource);
        return resource;
    }

    /** Dump this object's {@code toString()} when the test fails. */
    void watch(final Object object) {
        watched.add(object);
    }

    Pair pair() throws IOException {
        return pair(new Config());
    }

    Pair pair(final Config config) throws IOException {
        final RdmaDevice deviceA = device(config.transportA);
        final RdmaDevice deviceB = config.sameDevice ? deviceA : device(config.transportB);
        final Side a = side("A", deviceA, config, config.regionAccessA, config.queuePairAccessA, config.initA,
            config.connectA);
        final Side b = side("B", deviceB, config, config.regionAccessB, config.queuePairAccessB, config.initB,
            config.connectB);
        final Pair pair = new Pair(a, b);
        watch(pair);
        if (config.connect) {
            a.connectTo(b);
            b.connectTo(a);
        }
        return pair;
    }

    /** One end on {@code device}, as {@link #pair(Config)} makes them, not connected. */
    Side side(final String name, final RdmaDevice device, final Config config) throws IOException {
        return side(name, device, config, config.regionAccessA, config.queuePairAccessA, config.initA,
            config.connectA);
    }

    private Side side(final String name, final RdmaDevice device, final Config config, final int regionAccess,
        final int queuePairAccess, final UnaryOperator<QueuePairInitAttributes> init,
        final UnaryOperator<QueuePairAttributes> connectAttributes) throws IOException {
        final ProtectionDomain pd = own(device.allocateProtectionDomain());
        final ReadinessSource source = config.readinessSources ? own(device.createReadinessSource()) : null;
        final CompletionQueue cq = own(device.createCompletionQueue(config.completionQueueEntries, source,
            name.hashCode()));
        final MemoryRegion mr = own(pd.allocate(config.regionLength, regionAccess));
        final QueuePair qp = own(pd.createQueuePair(init.apply(new QueuePairInitAttributes())
            .sendCompletionQueue(cq).receiveCompletionQueue(cq)));
        return new Side(name, device, pd, source, cq, mr, qp, queuePairAccess, connectAttributes);
    }

    /** Move a queue pair from RESET through INIT and RTR to RTS. */
    static void connect(final QueuePair qp, final int access, final byte[] remoteGid, final int remoteNumber,
        final UnaryOperator<QueuePairAttributes> adjust) throws IOException {
        qp.modify(QueuePairState.INIT, adjust.apply(new QueuePairAttributes()).accessFlags(access));
        qp.modify(QueuePairState.READY_TO_RECEIVE, adjust.apply(new QueuePairAttributes()).remoteGid(remoteGid)
            .remoteQueuePairNumber(remoteNumber));
        qp.modify(QueuePairState.READY_TO_SEND, adjust.apply(new QueuePairAttributes()));
    }

    // ----- waiting -----

    /** Wait until {@code source} reports a wake-up; the tokens it reported then. */
    static List<Long> awaitTokens(final String what, final ReadinessSource source) {
        final List<Long> tokens = new ArrayList<>();
        awaitCondition(what, () -> {
            try {
                source.await(1_000_000, tokens::add);
            } catch (final IOException ex) {
                throw new AssertionError(ex);
            }
            return !tokens.isEmpty();
        });
        return tokens;
    }

    /** Wait until the condition holds, checking it repeatedly; fails after {@link #WAIT_NANOS}. */
    static void awaitCondition(final String what, final BooleanSupplier condition) {
        final long deadline = System.nanoTime() + WAIT_NANOS;
        int rounds = 0;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("timed out waiting for " + what);
            }
            if (++rounds < 100) {
                Thread.onSpinWait();
            } else {
                LockSupport.parkNanos(20_000);
            }
        }
    }

    /** Wait until the thread is blocked (parked or waiting). */
    static void awaitBlocked(final Thread thread) {
        awaitCondition(thread + " to block", () -> thread.getState() == Thread.State.WAITING
            || thread.getState() == Thread.State.TIMED_WAITING);
    }

    // ----- JUnit -----

    @Override
    public void handleTestExecutionException(final ExtensionContext context, final Throwable throwable)
        throws Throwable {
        final StringBuilder dump = new StringBuilder("state after the failure of ")
            .append(context.getDisplayName()).append(':');
        for (final Object object : watched) {
            dump.append(System.lineSeparator()).append("  ");
            try {
                dump.append(object);
            } catch (final RuntimeException ex) {
                dump.append("cannot describe: ").append(ex);
            }
        }
        System.err.println(dump);
        throw throwable;
    }

    @Override
    public void afterEach(final ExtensionContext context) throws Exception {
        watched.clear();
        Exception failure = null;
        while (!owned.isEmpty()) {
            try {
                owned.pop().close();
            } catch (final Exception ex) {
                if (failure == null) {
                    failure = ex;
                } else {
                    failure.addSuppressed(ex);
                }
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
