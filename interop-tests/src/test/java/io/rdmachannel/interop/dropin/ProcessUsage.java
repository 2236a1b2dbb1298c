package io.rdmachannel.interop.dropin;

import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.management.JMException;
import javax.management.ObjectName;

import io.rdmachannel.channel.shm.ShmConfiguration;

/**
 * What this process holds that a connection could leak: open descriptors, native threads, mappings of files in the
 * shm folder, direct buffer memory, and native memory Java code allocated (direct buffers, FFM arenas: NMT's "Other"
 * category; -1 unless the JVM runs with {@code -XX:NativeMemoryTracking=summary}). Printed and parsed as one line of
 * {@code name=value} words, so a child JVM can report its own.
 */
record ProcessUsage(long descriptors, long threads, long mappings, long directBytes, long nativeOtherKib) {
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
        return new ProcessUsage(count(Path.of("/proc/self/fd")), count(Path.of("/proc/self/task")), mappings, direct,
            nativeOther());
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
            values.get("directBytes"), values.get("nativeOtherKiB"));
    }

    /**
     * Whether nothing grew past {@code base} by more than the slack a few connections in flight explain.
     */
    boolean withinSlackOf(final ProcessUsage base) {
        return descriptors <= base.descriptors + 16 && threads <= base.threads + 4 && mappings <= base.mappings + 16
            && directBytes <= base.directBytes + (1 << 20)
            && (nativeOtherKib < 0 || nativeOtherKib <= base.nativeOtherKib + 4096);
    }

    @Override
    public String toString() {
        return "fds=" + descriptors + " threads=" + threads + " shmMappings=" + mappings + " directBytes="
            + directBytes + " nativeOtherKiB=" + nativeOtherKib;
    }
}
