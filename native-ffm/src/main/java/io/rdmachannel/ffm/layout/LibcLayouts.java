package io.rdmachannel.ffm.layout;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_INT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The libc structs of the event loop: {@code struct epoll_event} (packed on x86-64: 12 bytes, {@code data} at 4)
 * and {@code struct pollfd}.
 */
public final class LibcLayouts {
    /** {@code struct epoll_event}, {@code __attribute__((packed))} on x86-64. */
    public static final CStruct EPOLL_EVENT = CStruct.struct("struct epoll_event",
        JAVA_INT_UNALIGNED.withName("events"), JAVA_LONG_UNALIGNED.withName("data"));
    /** {@code sizeof(struct epoll_event)}: the stride of the {@code epoll_wait} array. */
    public static final long EPOLL_EVENT_SIZE = EPOLL_EVENT.size();
    /** {@code epoll_event.events}. */
    public static final long EPOLL_EVENT_EVENTS = EPOLL_EVENT.offset("events");
    /** {@code epoll_event.data} (read with an unaligned long). */
    public static final long EPOLL_EVENT_DATA = EPOLL_EVENT.offset("data");

    /** {@code struct pollfd}. */
    public static final CStruct POLLFD = CStruct.struct("struct pollfd",
        JAVA_INT.withName("fd"), JAVA_SHORT.withName("events"), JAVA_SHORT.withName("revents"));
    /** {@code sizeof(struct pollfd)}. */
    public static final long POLLFD_SIZE = POLLFD.size();
    /** {@code pollfd.fd}. */
    public static final long POLLFD_FD = POLLFD.offset("fd");
    /** {@code pollfd.events}. */
    public static final long POLLFD_EVENTS = POLLFD.offset("events");
    /** {@code pollfd.revents}. */
    public static final long POLLFD_REVENTS = POLLFD.offset("revents");

    private LibcLayouts() {
    }
}
