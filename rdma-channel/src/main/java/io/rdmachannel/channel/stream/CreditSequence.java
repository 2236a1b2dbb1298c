package io.rdmachannel.channel.stream;

/**
 * The 16-bit message sequence arithmetic of rsockets credits. All values are u16 held in an {@code int}; every
 * result is masked, so the arithmetic wraps at 2^16 as C's {@code uint16_t} does.
 *
 * <p>Sender: {@code sent} ({@code sseq_no}) counts DATA and IOMAP_SGL messages sent, {@code limit}
 * ({@code sseq_comp}) is the last credit limit received, starting at the peer's advertised credits. The sender may
 * post while {@code sent != limit}; {@link #window(int, int)} messages may still go.
 *
 * <p>Receiver: {@code consumed} ({@code rseq_no}) counts DATA messages the application read completely; a grant
 * carries {@link #grantLimit(int, int)} = {@code consumed + receiveQueueSize}.
 *
 * <p>The rule applied to each received limit ({@link #checkCreditLimit(int, int, int, int)}): the receiver's
 * {@code consumed} never decreases and never exceeds our {@code sent}, and it grants {@code consumed +} its
 * advertised credits. So, measured forward from {@code sent}, a new limit is at least the current one (limits never
 * move backwards; an equal limit is a repeat, as when an SGE is published without new consumption) and at most the
 * credits the peer advertised in its connection data (it cannot have freed receives it never had). Anything else is
 * a {@link ProtocolException}. The rule is unambiguous because a window never exceeds 0xFFFF.
 */
public final class CreditSequence {
    /** The sequence width: 16 bits. */
    public static final int MASK = 0xFFFF;

    private CreditSequence() {
    }

    /**
     * The sequence after one more message.
     *
     * @param sequence a u16.
     * @return {@code sequence + 1}, wrapped.
     */
    public static int next(final int sequence) {
        return (sequence + 1) & MASK;
    }

    /**
     * The sequence after some messages.
     *
     * @param sequence a u16.
     * @param count    messages.
     * @return {@code sequence + count}, wrapped.
     */
    public static int add(final int sequence, final int count) {
        return (sequence + count) & MASK;
    }

    /**
     * Whether the sender has a credit left ({@code sseq_no != sseq_comp}).
     *
     * @param sent  messages sent, a u16.
     * @param limit the credit limit, a u16.
     * @return true if another message may be sent.
     */
    public static boolean hasCredit(final int sent, final int limit) {
        return ((sent ^ limit) & MASK) != 0;
    }

    /**
     * Messages the sender may still send.
     *
     * @param sent  messages sent, a u16.
     * @param limit the credit limit, a u16.
     * @return {@code (limit - sent) & 0xFFFF}.
     */
    public static int window(final int sent, final int limit) {
        return (limit - sent) & MASK;
    }

    /**
     * The credit limit a receiver grants.
     *
     * @param consumed         messages the application consumed, a u16.
     * @param receiveQueueSize the receiver's advertised credits.
     * @return {@code (consumed + receiveQueueSize) & 0xFFFF}, the SGL operand.
     */
    public static int grantLimit(final int consumed, final int receiveQueueSize) {
        return (consumed + receiveQueueSize) & MASK;
    }

    /**
     * Check a credit limit received in an SGL message against the rule of this class.
     *
     * @param sent          messages we sent, a u16.
     * @param currentLimit  our current limit, a u16, no more than {@code receiveWindow} ahead of {@code sent}.
     * @param newLimit      the received limit; only its low 16 bits count ({@link ImmediateData#creditLimit(int)}).
     * @param receiveWindow the credits the peer advertised in its connection data, in [1, 0xFFFF].
     * @return the new limit as a u16.
     * @throws ProtocolException if the limit moves backwards or grants more than the peer's receive window.
     * @throws IllegalArgumentException if {@code sent} has passed {@code currentLimit}: our own state is broken.
     */
    public static int checkCreditLimit(final int sent, final int currentLimit, final int newLimit,
        final int receiveWindow) throws ProtocolException {
        final int limit = newLimit & MASK;
        final int newWindow = window(sent, limit);
        final int currentWindow = window(sent, currentLimit);
        if (currentWindow > receiveWindow) {
            throw new IllegalArgumentException("sent must be at most receiveWindow behind currentLimit: sent="
                + (sent & MASK) + ", currentLimit=" + (currentLimit & MASK) + ", receiveWindow=" + receiveWindow);
        }
        if (newWindow >= currentWindow && newWindow <= receiveWindow) {
            return limit;
        }
        if (newWindow < currentWindow || window(limit, currentLimit) <= receiveWindow) {
            throw new ProtocolException("credit limit moved backwards: creditLimit=" + limit
                + ", currentLimit=" + (currentLimit & MASK) + ", sent=" + (sent & MASK));
        }
        throw new ProtocolException("credit limit beyond the peer's receive window: creditLimit=" + limit
            + ", sent=" + (sent & MASK) + ", receiveWindow=" + receiveWindow);
    }
}
