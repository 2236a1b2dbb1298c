package io.rdmachannel.interop.dropin;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.management.JMException;
import javax.management.JMX;
import javax.management.MBeanServer;
import javax.management.ObjectName;

import io.rdmachannel.channel.DeviceInfo;
import io.rdmachannel.channel.RdmaTransportMXBean;
import io.rdmachannel.channel.shm.ShmConfiguration;
import io.rdmachannel.channel.spi.DeviceResources;

/**
 * What this process holds that a connection could leak: open descriptors, native threads, mappings of files in the
 * shm folder, direct buffer memory, native memory Java code allocated (direct buffers, FFM arenas: NMT's "Other"
 * category; -1 unless the JVM runs with {@code -XX:NativeMemoryTracking=summary}), and the queue pairs, completion
 * queues and memory regions open on the devices of its stream transports (their management views). Printed and
 * parsed as one line of {@code name=value} words, so a child JVM can report its own.
 */
record ProcessUsage(long descriptors, long threads, long mappings, long directBytes, long nativeOtherKib,
    long queuePairs, long completionQueues, long memoryRegions) {
    /** Verbs objects a few connections in flight (opening, lingering) explain. */
    private static final int VERBS_SLACK = 8;

    private static final Pattern NMT_OTHER = Pattern.compile("-\\s+Other \\(reserved=\\d+KB, committed=(\\d+)KB\\)");

    static ProcessUsage now() throws IOException {
        final String folder = System.getProperty(ShmConfiguration.DIRECTORY_PROP_NAME,
            ShmConfiguration.DIRECTORY_DEFAULT) + "/";
        final long mappings;
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            mappings = lines.filter(line -> line.contains(folder)).count();
        }
        long direct = 0;
        for (final BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if ("direct".equals(pool.getName())) {
                direct = pool.getMemoryUsed();
            }
        }
        final DeviceResources verbs = verbsObjects();
        return new ProcessUsage(count(Path.of("/proc/self/fd")), count(Path.of("/proc/self/task")), mappings, direct,
            nativeOther(), verbs.queuePairs(), verbs.completionQueues(), verbs.memoryRegions());
    }

    /**
     * This process's open descriptors by what they are: the targets of {@code /proc/self/fd}, with the inode
     * numbers of sockets, pipes and anonymous inodes left out (so {@code socket:[]} counts every socket).
     *
     * @return how many descriptors of each kind are open, by kind.
     */
    static Map<String, Integer> descriptorKinds() throws IOException {
        final Map<String, Integer> kinds = new TreeMap<>();
        try (Stream<Path> descriptors = Files.list(Path.of("/proc/self/fd"))) {
            for (final Path descriptor : (Iterable<Path>) descriptors::iterator) {
                try {
                    kinds.merge(Files.readSymbolicLink(descriptor).toString().replaceAll("\\[\\d+]", "[]"), 1,
                        Integer::sum);
                } catch (final IOException ex) {
                    // closed since the listing (the listing's own descriptor among them)
                }
            }
        }
        return kinds;
    }

    /**
     * The kinds whose count changed between two {@link #descriptorKinds()}, for example
     * {@code "socket:[] +3, pipe:[] -1"}, or {@code "none"}.
     */
    static String descriptorChange(final Map<String, Integer> before, final Map<String, Integer> after) {
        final Map<String, Integer> change = new TreeMap<>(after);
        before.forEach((kind, count) -> change.merge(kind, -count, Integer::sum));
        final StringBuilder text = new StringBuilder();
        change.forEach((kind, delta) -> {
            if (delta != 0) {
                text.append(text.isEmpty() ? "" : ", ").append(kind).append(delta > 0 ? " +" : " ").append(delta);
            }
        });
        return text.isEmpty() ? "none" : text.toString();
    }

    /**
     * The verbs objects open on the devices of this process's stream transports, from their management views.
     */
    private static DeviceResources verbsObjects() {
        int queuePairs = 0;
        int completionQueues = 0;
        int memoryRegions = 0;
        final MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        try {
            for (final ObjectName name : server.queryNames(new ObjectName(RdmaTransportMXBean.DOMAIN
                + ":type=Transport,*"), null)) {
                for (final DeviceInfo device : JMX.newMXBeanProxy(server, name, RdmaTransportMXBean.class)
                    .getDevices()) {
                    queuePairs += device.resources().queuePairs();
                    completionQueues += device.resources().completionQueues();
                    memoryRegions += device.resources().memoryRegions();
                }
            }
        } catch (final JMException ex) {
            throw new IllegalStateException(ex);
        }
        return new DeviceResources(0, completionQueues, 0, queuePairs, 0, memoryRegions);
    }

    private static long count(final Path folder) throws IOException {
        try (Stream<Path> entries = Files.list(folder)) {
            return entries.count();
        }
    }

    private static long nativeOther() {
        try {
            final Object summary = ManagementFactory.getPlatformMBeanServer().invoke(
                new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmNativeMemory",
                new Object[] {new String[] {"summary"}}, new String[] {String[].class.getName()});
            final Matcher matcher = NMT_OTHER.matcher(String.valueOf(summary));
            return matcher.find() ? Long.parseLong(matcher.group(1)) : -1;
        } catch (final JMException ex) {
            return -1;
        }
    }

    /**
     * Parse what {@link #toString()} printed, anywhere in {@code line}.
     */
    static ProcessUsage parse(final String line) {
        final Map<String, Long> values = new HashMap<>();
        for (final String word : line.split(" ")) {
            final int equals = word.indexOf('=');
            if (equals > 0) {
                values.put(word.substring(0, equals), Long.parseLong(word.substring(equals + 1)));
            }
        }
        return new ProcessUsage(values.get("fds"), values.get("threads"), values.get("shmMappings"),
            values.get("directBytes"), values.get("nativeOtherKiB"), values.get("qps"), values.get("cqs"),
            values.get("mrs"));
    }

    /**
     * Whether nothing grew past {@code base} by more than the slack a few connections in flight explain.
     */
    boolean withinSlackOf(final ProcessUsage base) {
        return descriptors <= base.descriptors + 16 && threads <= base.threads + 4 && mappings <= base.mappings + 16
            && directBytes <= base.directBytes + (1 << 20)
            && (nativeOtherKib < 0 || nativeOtherKib <= base.nativeOtherKib + 4096)
            && queuePairs <= base.queuePairs + VERBS_SLACK
            && completionQueues <= base.completionQueues + 2 * VERBS_SLACK
            && memoryRegions <= base.memoryRegions + 2 * VERBS_SLACK;
    }

    @Override
    public String toString() {
        return "fds=" + descriptors + " threads=" + threads + " shmMappings=" + mappings + " directBytes="
            + directBytes + " nativeOtherKiB=" + nativeOtherKib + " qps=" + queuePairs + " cqs=" + completionQueues
            + " mrs=" + memoryRegions;
    }
}
