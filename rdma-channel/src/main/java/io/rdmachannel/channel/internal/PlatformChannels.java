package io.rdmachannel.channel.internal;

import java.lang.reflect.InvocationTargetException;
import java.nio.channels.spi.SelectorProvider;

/**
 * The platform's own {@link SelectorProvider} (the JDK's), for every channel the library opens for itself (the shm
 * provider's Unix-domain sockets and selectors) and for the channels the NIO face hands to the platform (datagram
 * channels, pipes, Unix-domain channels, TCP connections of the drop-in).
 *
 * <p>{@link SelectorProvider#provider()} cannot be used for these: with rdmachannel installed as the JVM-wide
 * provider ({@code -Djava.nio.channels.spi.SelectorProvider=io.rdmachannel.nio.RdmaSelectorProvider}) it is
 * rdmachannel again, and opening the library's own sockets through it recursed until the stack overflowed. The JDK
 * keeps its provider in {@code sun.nio.ch.DefaultSelectorProvider}, which a JVM exports to the library with
 * {@value #EXPORT_FLAG} (class path; on the module path {@code =io.rdmachannel.channel}). Without that flag the
 * JVM-wide provider is used when it is not rdmachannel's, and otherwise every use fails with an
 * {@link IllegalStateException} that names the flag.
 */
public final class PlatformChannels {
    /** The JVM flag that lets the library reach the JDK's own provider. */
    public static final String EXPORT_FLAG = "--add-exports java.base/sun.nio.ch=ALL-UNNAMED";

    private static final String JDK_PROVIDER_CLASS = "sun.nio.ch.DefaultSelectorProvider";
    private static final String RDMACHANNEL_PACKAGE = "io.rdmachannel.";

    private PlatformChannels() {
    }

    /**
     * The platform's provider.
     *
     * @return the JDK's provider, or the JVM-wide provider when it is not rdmachannel's and the JDK's cannot be
     *     reached.
     * @throws IllegalStateException if rdmachannel is the JVM-wide provider and the JDK's provider is not exported
     *     to the library.
     */
    public static SelectorProvider provider() {
        final Lookup lookup = Holder.LOOKUP;
        if (lookup.provider != null) {
            return lookup.provider;
        }
        final SelectorProvider jvmWide = SelectorProvider.provider();
        if (!jvmWide.getClass().getName().startsWith(RDMACHANNEL_PACKAGE)) {
            return jvmWide;
        }
        throw new IllegalStateException("rdmachannel is the JVM-wide SelectorProvider (" + jvmWide.getClass()
            .getName() + "), so it needs the JDK's own provider for every other channel, and the JVM does not export "
            + "it: run java with " + EXPORT_FLAG + " (on the module path: --add-exports "
            + "java.base/sun.nio.ch=io.rdmachannel.channel)", lookup.failure);
    }

    /**
     * Whether {@link #provider()} can answer in this JVM.
     *
     * @return false if it would throw.
     */
    public static boolean isAvailable() {
        return Holder.LOOKUP.provider != null
            || !SelectorProvider.provider().getClass().getName().startsWith(RDMACHANNEL_PACKAGE);
    }

    private record Lookup(SelectorProvider provider, Exception failure) {
    }

    /**
     * Looked up once, on first use (never while the JDK initialises the JVM-wide provider: this class does not call
     * {@link SelectorProvider#provider()} when it loads).
     */
    private static final class Holder {
        static final Lookup LOOKUP = lookUp();

        private static Lookup lookUp() {
            try {
                final Object provider = Class.forName(JDK_PROVIDER_CLASS).getMethod("get").invoke(null);
                return new Lookup((SelectorProvider) provider, null);
            } catch (final ReflectiveOperationException | ClassCastException ex) {
                final Exception cause = ex instanceof InvocationTargetException invocation
                    && invocation.getCause() instanceof Exception thrown ? thrown : ex;
                return new Lookup(null, cause);
            }
        }
    }
}
