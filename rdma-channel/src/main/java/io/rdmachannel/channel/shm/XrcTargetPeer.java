package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.QueuePairEvent;
import io.rdmachannel.channel.spi.QueuePairState;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotLinkException;
import java.nio.file.Path;
import java.util.EnumSet;
import java.util.HexFormat;

/**
 * An XRC initiator's connection to its target queue pair: this process's use of the target's domain registry, read
 * without its lock on every request (the target's state and the initiator it is connected to). The device that moved
 * the target to READY_TO_RECEIVE names it for initiators with a symbolic link {@code xtgt-<number>} in its folder to
 * the registry file ({@link ShmXrcTargetQueuePair}).
 */
final class XrcTargetPeer implements AutoCloseable {
    static final String LINK_PREFIX = "xtgt-";

    private final XrcRegistry registry;
    private final MemorySegment segment;
    private final int number;
    private final long entry;
    private final long initiatorGidHigh;
    private final long initiatorGidLow;
    private final int initiator;

    private XrcTargetPeer(final XrcRegistry registry, final MemorySegment segment, final int index, final int number,
        final byte[] initiatorGid, final int initiator) {
        this.registry = registry;
        this.segment = segment;
        this.number = number;
        this.entry = XrcDomainDescriptor.targetOffset(index);
        // the registry holds the GID as the bytes it was given: compare it as two words of the same byte order
        final MemorySegment gid = MemorySegment.ofArray(initiatorGid);
        final ValueLayout.OfLong unaligned = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.nativeOrder());
        this.initiatorGidHigh = gid.get(unaligned, 0);
        this.initiatorGidLow = gid.get(unaligned, 8);
        this.initiator = initiator;
    }

    static String linkName(final int number) {
        return LINK_PREFIX + Integer.toHexString(number);
    }

    /**
     * Reach the target queue pair {@code number} that the device {@code gid} names.
     *
     * @throws IOException if that device names no such target queue pair, or its domain no longer has it.
     */
    static XrcTargetPeer connect(final ShmDevice device, final byte[] gid, final int number, final int initiator)
        throws IOException {
        final String gidHex = HexFormat.of().formatHex(gid);
        final String missing = "no XRC target queue pair " + number + " on shm device " + gidHex;
        final Path target;
        try {
            target = Files.readSymbolicLink(device.peerFolder(gidHex).resolve(linkName(number)));
        } catch (final NoSuchFileException | NotLinkException ex) {
            throw new IOException(missing + " (it names the targets it moved to READY_TO_RECEIVE)", ex);
        }
        final String name = target.getFileName().toString();
        if (target.getNameCount() != 2 || !"..".equals(target.getName(0).toString())
            || !name.startsWith(XrcDomainDescriptor.FILE_PREFIX)) {
            throw new IOException(missing + ": its link names " + target);
        }
        final XrcRegistry registry;
        try {
            registry = XrcRegistry.acquire(device.configuration().directory().resolve(name), false);
        } catch (final NoSuchFileException ex) {
            throw new IOException(missing + ": its XRC domain is gone", ex);
        }
        try {
            final int index = registry.targetIndex(number);
            if (index < 0) {
                throw new IOException(missing + ": its XRC domain no longer holds it");
            }
            return new XrcTargetPeer(registry, registry.mappedForReading(), index, number, device.gid(), initiator);
        } catch (final IOException | RuntimeException ex) {
            registry.release();
            throw ex;
        }
    }

    XrcRegistry registry() {
        return registry;
    }

    int number() {
        return number;
    }

    /**
     * The target's state code, or -1 once the domain destroyed it.
     */
    private int state() {
        final int state = Atomics.getIntVolatile(segment, entry + XrcDomainDescriptor.TARGET_STATE_OFFSET);
        return Atomics.getIntVolatile(segment, entry + XrcDomainDescriptor.TARGET_NUMBER_OFFSET) == number ? state
            : -1;
    }

    /**
     * Whether the target takes this initiator's requests: it exists, is READY_TO_RECEIVE or READY_TO_SEND, and is
     * connected to this initiator (not to another one after a RESET).
     */
    boolean accepts() {
        final int state = state();
        return (state == QueuePairState.READY_TO_RECEIVE.code() || state == QueuePairState.READY_TO_SEND.code())
            && Atomics.getIntVolatile(segment, entry + XrcDomainDescriptor.TARGET_REMOTE_QPN_OFFSET) == initiator
            && segment.get(Atomics.LONG, entry + XrcDomainDescriptor.TARGET_REMOTE_GID_OFFSET)
            == initiatorGidHigh
            && segment.get(Atomics.LONG, entry + XrcDomainDescriptor.TARGET_REMOTE_GID_OFFSET + 8)
            == initiatorGidLow;
    }

    /**
     * Whether the target is destroyed or in ERROR.
     */
    boolean isGone() {
        final int state = state();
        return state < 0 || state == QueuePairState.ERROR.code();
    }

    int accessFlags() {
        return segment.get(Atomics.INT, entry + XrcDomainDescriptor.TARGET_ACCESS_OFFSET);
    }

    int minRnrTimer() {
        return segment.get(Atomics.INT, entry + XrcDomainDescriptor.TARGET_MIN_RNR_TIMER_OFFSET) & 31;
    }

    /**
     * Move the target to ERROR, as a responder does on a fatal error of a request (an invalid shared receive queue
     * number, a receive it could not fill): every process with a handle of it hears {@link QueuePairEvent#FATAL}.
     */
    void fail() {
        try {
            registry.transition(index(), number, QueuePairState.ERROR, EnumSet.allOf(QueuePairState.class),
                QueuePairEvent.FATAL);
        } catch (final IllegalStateException gone) {
            // destroyed meanwhile: nothing to fail
        }
    }

    private int index() {
        return (int) ((entry - XrcDomainDescriptor.TARGETS_OFFSET) / XrcDomainDescriptor.TARGET_ENTRY_LENGTH);
    }

    @Override
    public void close() {
        registry.release();
    }

    @Override
    public String toString() {
        return "XrcTargetPeer{number=" + number + ", state=" + state() + ", accepts=" + accepts() + ", registry="
            + registry.path().getFileName() + '}';
    }
}
