package io.rdmachannel.channel.stream;

/**
 * The control window of one connection (section 2.5): {@code controlWindow} send slots kept for control messages
 * (credit grants, SHUTDOWN, DISCONNECT, keepalive), so data never starves them. A message that cannot go yet, for
 * want of a slot or because message mode's passive side awaits the first message, is held back and posted by whoever
 * holds the send lock next ({@link #flush()}). Guarded by the send lock; {@link SendPath} calls it with the lock held.
 */
final class ControlWindow {
    /** The ring offset of a grant of credits only. */
    static final int NO_REGION = -1;

    private static final int PENDING_SHUTDOWN = 1;
    private static final int PENDING_DISCONNECT = 2;

    private final ConnectionState state;
    private MessageProxy proxy;
    private int slotsPerMessage = 1;
    private int slots;
    private int pending;
    private boolean halfCloseDisconnect;
    private boolean disconnectPosted;
    private boolean disconnectCompleted;
    private long keepAlivesSent;

    // a credit grant waiting for a slot
    private boolean grantPending;
    private int grantLimit;
    private int grantOffset = NO_REGION;
    private int grantEntry;

    ControlWindow(final ConnectionState state, final int controlWindow) {
        this.state = state;
        this.slots = controlWindow;
    }

    void attach(final MessageProxy messageProxy, final int messageSlots) {
        this.proxy = messageProxy;
        this.slotsPerMessage = messageSlots;
    }

    /**
     * A control message's send completed: its slot is free.
     *
     * @param control the control code of its id.
     */
    void onCompleted(final int control) {
        slots++;
        if (control == ImmediateData.CTRL_DISCONNECT) {
            disconnectCompleted = true;
        }
    }

    /**
     * Whether polling the send completion queue first may help a grant: a slot is short, or one waits already.
     */
    boolean wantsSlots() {
        return grantPending || slots < slotsPerMessage;
    }

    /**
     * Post what was held back, as far as slots and the connection's state allow: SHUTDOWN and DISCONNECT first,
     * then the waiting grant.
     */
    void flush() {
        while (pending != 0 && slots > 0 && state.mayPostControl()) {
            if ((pending & PENDING_SHUTDOWN) != 0) {
                pending &= ~PENDING_SHUTDOWN;
                postControl(ImmediateData.ctrl(ImmediateData.CTRL_SHUTDOWN), ImmediateData.CTRL_SHUTDOWN);
            } else {
                pending &= ~PENDING_DISCONNECT;
                disconnectPosted = true;
                postControl(ImmediateData.ctrl(ImmediateData.CTRL_DISCONNECT), ImmediateData.CTRL_DISCONNECT);
            }
        }
        if (grantPending && slots >= slotsPerMessage && state.mayGrant()) {
            grantPending = false;
            if (grantOffset == NO_REGION) {
                postControl(ImmediateData.sgl(grantLimit), MessageProxy.SGL_CONTROL);
            } else {
                slots -= proxy.postRegion(grantOffset, grantEntry, ImmediateData.sgl(grantLimit));
            }
        }
    }

    private void postControl(final int message, final int control) {
        slots -= proxy.postControl(message, control);
    }

    /**
     * Post a credit grant now, or hold it back until a slot frees up. A grant held back takes in a later one: the
     * newer limit, and a region if the waiting one carries none. The caller polled first if {@link #wantsSlots()}.
     *
     * @param limit      the new credit limit, a u16.
     * @param ringOffset where the ring half to advertise starts, or {@link #NO_REGION} for credits only.
     * @param entry      the peer's target SGL entry for the region.
     * @return false if a region is already waiting: this grant was not taken, the receiver grants again later.
     */
    boolean grant(final int limit, final int ringOffset, final int entry) {
        if (grantPending && ringOffset != NO_REGION && grantOffset != NO_REGION) {
            return false;
        }
        if (!grantPending || ringOffset != NO_REGION) {
            grantOffset = ringOffset;
            grantEntry = entry;
        }
        grantPending = true;
        grantLimit = limit;
        flush();
        return true;
    }

    /**
     * Post the keepalive probe ({@link MessageProxy#postKeepAlive()}) if a slot is free and the connection is up.
     */
    void keepAlive() {
        if (!state.connected || state.closing || state.error() != null || state.peerDisconnected || slots == 0
            || state.awaitingFirstMessage) {
            return;
        }
        proxy.postKeepAlive();
        slots--;
        keepAlivesSent++;
    }

    /**
     * Queue a SHUTDOWN (the output ends, the input goes on).
     */
    void shutdown() {
        pending |= PENDING_SHUTDOWN;
    }

    /**
     * Queue the DISCONNECT of both half-closes, once: the two shutdowns may race from two threads, and each sees the
     * other's flag.
     */
    void halfCloseDisconnect() {
        if (!halfCloseDisconnect) {
            halfCloseDisconnect = true;
            pending |= PENDING_DISCONNECT;
        }
    }

    /**
     * Queue the DISCONNECT of a close.
     */
    void disconnect() {
        pending |= PENDING_DISCONNECT;
    }

    /**
     * Whether a DISCONNECT was queued and has not completed yet, on a connection that has not failed.
     */
    boolean disconnectUnderWay() {
        return state.error() == null && !disconnectCompleted
            && (disconnectPosted || (pending & PENDING_DISCONNECT) != 0);
    }

    long keepAlivesSent() {
        return keepAlivesSent;
    }

    void describe(final StringBuilder out) {
        out.append("controlSlots=").append(slots);
        if (grantPending) {
            out.append(", pendingGrant=").append(grantLimit);
        }
    }
}
