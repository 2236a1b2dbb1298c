package io.rdmachannel.ffm.internal;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * Whether the data-path calls ({@code post_send}, {@code post_recv}, {@code post_srq_recv}, {@code poll_cq},
 * {@code req_notify_cq}) of a device may be linked with {@code Linker.Option.critical(false)}. A critical call holds
 * back safepoints for its whole duration, so it suits only providers whose data path stays in user space: not
 * soft-RoCE ({@code rxe}) or soft-iWARP ({@code siw}), whose {@code post_send} rings a doorbell with a system call.
 *
 * <ul>
 *   <li>{@value #CRITICAL_PROP_NAME}: {@code true} (default) or {@code false} for every device;</li>
 *   <li>{@value #EXCLUDED_PREFIXES_PROP_NAME}: comma-separated device-name prefixes never critical, default
 *       {@value #EXCLUDED_PREFIXES_DEFAULT};</li>
 *   <li>{@code rdmachannel.native.critical.<device>}: {@code true} or {@code false} for one device, overriding
 *       both.</li>
 * </ul>
 */
public final class CriticalPolicy {
    /** Global switch. */
    public static final String CRITICAL_PROP_NAME = "rdmachannel.native.critical";
    /** Default of {@link #CRITICAL_PROP_NAME}. */
    public static final boolean CRITICAL_DEFAULT = true;
    /** Device-name prefixes that are never critical. */
    public static final String EXCLUDED_PREFIXES_PROP_NAME = "rdmachannel.native.critical.exclude";
    /** Default of {@link #EXCLUDED_PREFIXES_PROP_NAME}: the software providers. */
    public static final String EXCLUDED_PREFIXES_DEFAULT = "rxe,siw";

    private CriticalPolicy() {
    }

    /**
     * Decide for a device, reading the system properties now.
     *
     * @param deviceName the {@code ibv_device} name, e.g. {@code mlx5_0} or {@code rxe0}.
     * @return true if its data-path calls may be critical.
     */
    public static boolean allowsCritical(String deviceName) {
        String override = System.getProperty(CRITICAL_PROP_NAME + "." + deviceName);
        if (override != null) {
            return Boolean.parseBoolean(override.trim());
        }
        String global = System.getProperty(CRITICAL_PROP_NAME);
        if (global != null ? !Boolean.parseBoolean(global.trim()) : !CRITICAL_DEFAULT) {
            return false;
        }
        String excluded = System.getProperty(EXCLUDED_PREFIXES_PROP_NAME, EXCLUDED_PREFIXES_DEFAULT);
        return !isExcluded(deviceName, Arrays.asList(excluded.split(",")));
    }

    private static boolean isExcluded(String deviceName, List<String> prefixes) {
        String name = deviceName.toLowerCase(Locale.ROOT);
        for (String prefix : prefixes) {
            String trimmed = prefix.trim().toLowerCase(Locale.ROOT);
            if (!trimmed.isEmpty() && name.startsWith(trimmed)) {
                return true;
            }
        }
        return false;
    }
}
