package io.rdmachannel.ffm.internal;

import java.util.Locale;

/**
 * The platform facts the struct layouts depend on. The layouts are verified for Linux on x86-64 (glibc); elsewhere
 * the bindings report themselves unavailable instead of guessing.
 */
public final class Platform {
    /** {@code sizeof(pthread_mutex_t)} on this platform; 40 where unknown, so that classes still load. */
    public static final long PTHREAD_MUTEX_SIZE;
    /** {@code sizeof(pthread_cond_t)}: 48 on every glibc platform. */
    public static final long PTHREAD_COND_SIZE = 48;

    private static final String OS = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
    private static final String ARCH = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
    private static final String ABI_PROBLEM;

    static {
        long mutexSize = switch (ARCH) {
            case "amd64", "x86_64" -> 40;
            case "aarch64" -> 48;
            default -> -1;
        };
        PTHREAD_MUTEX_SIZE = mutexSize > 0 ? mutexSize : 40;
        if (!OS.startsWith("linux")) {
            ABI_PROBLEM = "unexpected ABI: os.name=" + OS + ", the bindings need Linux";
        } else if (mutexSize < 0) {
            ABI_PROBLEM = "unexpected ABI: os.arch=" + ARCH + ", sizeof(pthread_mutex_t) unknown";
        } else if (mutexSize != 40) {
            ABI_PROBLEM = "unexpected ABI: os.arch=" + ARCH + ", struct layouts are verified on x86-64 only";
        } else {
            ABI_PROBLEM = null;
        }
    }

    private Platform() {
    }

    /**
     * Why the struct layouts cannot be trusted here.
     *
     * @return the reason, or {@code null} on a supported platform.
     */
    public static String abiProblem() {
        return ABI_PROBLEM;
    }
}
