package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.spi.CompletionQueue;
import io.rdmachannel.channel.spi.ProtectionDomain;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.ResourceCounter;
import io.rdmachannel.channel.spi.SharedReceiveQueue;
import io.rdmachannel.channel.spi.XrcDomain;
import io.rdmachannel.channel.spi.XrcSharedReceiveQueue;
import io.rdmachannel.channel.spi.XrcTargetQueuePair;

import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A handle of an XRC domain of the shared-memory provider: this device's membership in the domain's registry
 * ({@link XrcRegistry}), which every process of the host that opens the same file shares.
 */
final class ShmXrcDomain implements XrcDomain {
    private static final Logger LOG = LoggerFactory.getLogger(ShmXrcDomain.class);
    /** Opens racing with the deletion of the registry by its last user: each retry finds a newer file. */
    private static final int MAX_ATTEMPTS = 100;

    private final ShmDevice device;
    private final Path file;
    private final XrcRegistry registry;
    private final int opener;
    // guarded by this
    private final Set<ShmXrcTargetQueuePair> targets = new LinkedHashSet<>();
    private final Set<ShmXrcSharedReceiveQueue> sharedReceiveQueues = new LinkedHashSet<>();
    private boolean closed;

    private ShmXrcDomain(final ShmDevice device, final Path file, final XrcRegistry registry, final int opener) {
        this.device = device;
        this.file = file;
        this.registry = registry;
        this.opener = opener;
    }

    static ShmXrcDomain open(final ShmDevice device, final Path file, final boolean create) throws IOException {
        if (create) {
            try {
                Files.createFile(file);
            } catch (final FileAlreadyExistsException ignore) {
                // the domain's file exists: it is opened below
            }
        }
        final Map<String, Object> identity = Files.readAttributes(file, "unix:dev,ino");
        final Path registryPath = device.configuration().directory().resolve(XrcDomainDescriptor.fileName(
            (Long) identity.get("dev"), (Long) identity.get("ino")));
        for (int attempt = 1;; attempt++) {
            final XrcRegistry registry;
            try {
                registry = XrcRegistry.acquire(registryPath, create);
            } catch (final NoSuchFileException ex) {
                throw noDomain(file, ex);
            }
            final int opener;
            try {
                opener = registry.join(device.gid(), create);
            } catch (final RuntimeException ex) {
                registry.release();
                throw ex;
            }
            if (opener >= 0) {
                LOG.debug("opened XRC domain {} (registry {}) as opener {}", file, registryPath, opener);
                return new ShmXrcDomain(device, file, registry, opener);
            }
            registry.release();
            if (opener == XrcRegistry.NO_DOMAIN) {
                throw noDomain(file, null);
            }
            if (attempt == MAX_ATTEMPTS) {
                throw new IOException("XRC domain " + file + ": its registry " + registryPath + " was deleted "
                    + MAX_ATTEMPTS + " times while this process opened it");
            }
            // its last opener deleted the registry while we waited for it: open the next one
        }
    }

    private static IOException noDomain(final Path file, final IOException cause) {
        return new IOException("no XRC domain is associated with " + file + ": open it with create=true first",
            cause);
    }

    XrcRegistry registry() {
        return registry;
    }

    int opener() {
        return opener;
    }

    ShmDevice shmDevice() {
        return device;
    }

    @Override
    public RdmaDevice device() {
        return device;
    }

    @Override
    public Path file() {
        return file;
    }

    @Override
    public XrcSharedReceiveQueue createSharedReceiveQueue(final ProtectionDomain protectionDomain,
        final CompletionQueue completionQueue, final int maxWorkRequests, final int maxSge) throws IOException {
        if (!(protectionDomain instanceof ShmProtectionDomain pd) || pd.shmDevice() != device) {
            throw new IllegalArgumentException("the protection domain belongs to another device");
        }
        if (!(completionQueue instanceof ShmCompletionQueue cq) || cq.device() != device) {
            throw new IllegalArgumentException("the completion queue belongs to another device");
        }
        synchronized (this) {
            ensureOpen();
            final SharedReceiveQueue queue = pd.createSharedReceiveQueue(maxWorkRequests, maxSge);
            try {
                cq.attach();
                try {
                    final ShmXrcSharedReceiveQueue srq = ShmXrcSharedReceiveQueue.create(this,
                        (ShmSharedReceiveQueue) queue, cq);
                    sharedReceiveQueues.add(srq);
                    return srq;
                } catch (final IOException | RuntimeException ex) {
                    cq.detach();
                    throw ex;
                }
            } catch (final IOException | RuntimeException ex) {
                queue.close();
                throw ex;
            }
        }
    }

    @Override
    public XrcTargetQueuePair createTargetQueuePair() {
        synchronized (this) {
            ensureOpen();
            final int[] created = registry.createTarget(opener);
            return addTarget(created[0], created[1], 0);
        }
    }

    @Override
    public XrcTargetQueuePair openTargetQueuePair(final int number) throws IOException {
        synchronized (this) {
            ensureOpen();
            final long[] opened = registry.openTarget(opener, number);
            if (opened == null) {
                throw new IOException("XRC domain " + file + " holds no target queue pair " + number
                    + " (never created, or destroyed when its last user closed it)");
            }
            return addTarget((int) opened[0], number, opened[1]);
        }
    }

    // guarded by this
    private ShmXrcTargetQueuePair addTarget(final int index, final int number, final long eventSequence) {
        final ShmXrcTargetQueuePair target = new ShmXrcTargetQueuePair(this, index, number, eventSequence);
        targets.add(target);
        device.resourceCounter().opened(ResourceCounter.Kind.XRC_TARGET_QUEUE_PAIR);
        return target;
    }

    synchronized void targetClosed(final ShmXrcTargetQueuePair target) {
        targets.remove(target);
        device.resourceCounter().closed(ResourceCounter.Kind.XRC_TARGET_QUEUE_PAIR);
    }

    synchronized void sharedReceiveQueueClosed(final ShmXrcSharedReceiveQueue queue) {
        sharedReceiveQueues.remove(queue);
    }

    private void ensureOpen() {
        if (closed) {
            throw new IllegalStateException("XRC domain " + file + " is closed");
        }
        device.ensureOpen();
    }

    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            if (!targets.isEmpty() || !sharedReceiveQueues.isEmpty()) {
                final List<Integer> targetNumbers = new ArrayList<>();
                targets.forEach(target -> targetNumbers.add(target.number()));
                final List<Integer> queueNumbers = new ArrayList<>();
                sharedReceiveQueues.forEach(queue -> queueNumbers.add(queue.number()));
                throw new IllegalStateException("XRC domain " + file + " still has " + targets.size()
                    + " target queue pairs " + targetNumbers + " and " + sharedReceiveQueues.size()
                    + " shared receive queues " + queueNumbers + " open through this handle: close them first");
            }
            closed = true;
        }
        try {
            if (registry.leave(opener)) {
                LOG.debug("closed XRC domain {}: the last user, its registry {} is deleted", file, registry.path());
            }
        } finally {
            registry.release();
            device.childClosed(ResourceCounter.Kind.XRC_DOMAIN);
        }
    }

    /**
     * Whether the domain's registry file exists: its last user deletes it.
     */
    boolean registryExists() {
        return Files.exists(registry.path(), LinkOption.NOFOLLOW_LINKS);
    }

    @Override
    public String toString() {
        return "ShmXrcDomain{file=" + file + ", registry=" + registry.path() + ", opener=" + opener + ", closed="
            + closed + '}';
    }
}
