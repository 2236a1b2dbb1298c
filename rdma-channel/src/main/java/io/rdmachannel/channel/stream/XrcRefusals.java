package io.rdmachannel.channel.stream;

import java.net.SocketAddress;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The listener addresses that refused a request in the XRC mode lately, with the listener's reason: a connect there
 * asks for RC at once instead of paying the refused round trip again. An entry is forgotten after
 * {@link #MEMORY_NANOS} (a listener restarted with the mode gets XRC requests again) and the oldest goes first beyond
 * {@link #CAPACITY} addresses.
 */
final class XrcRefusals {
    /** How long a refusal is remembered. */
    static final long MEMORY_NANOS = TimeUnit.SECONDS.toNanos(30);
    /** The most addresses remembered. */
    static final int CAPACITY = 1024;

    private record Refusal(String reason, long until) {
    }

    private final Map<SocketAddress, Refusal> refusals = new LinkedHashMap<>(16, 0.75f, false) {
        private static final long serialVersionUID = 1L;

        @Override
        protected boolean removeEldestEntry(final Map.Entry<SocketAddress, Refusal> eldest) {
            return size() > CAPACITY;
        }
    };

    /**
     * Remember that the listener at {@code remote} refused the XRC mode.
     */
    synchronized void remember(final SocketAddress remote, final String reason) {
        refusals.remove(remote);
        refusals.put(remote, new Refusal(reason, System.nanoTime() + MEMORY_NANOS));
    }

    /**
     * The reason the listener at {@code remote} refused the XRC mode within {@link #MEMORY_NANOS}, or null.
     */
    synchronized String refusal(final SocketAddress remote) {
        final Refusal refusal = refusals.get(remote);
        if (refusal == null) {
            return null;
        }
        if (System.nanoTime() - refusal.until >= 0) {
            refusals.remove(remote);
            return null;
        }
        return refusal.reason;
    }
}
