package io.rdmachannel.channel;

/**
 * The management view of one RDMA stream transport (one per provider a process uses), registered with the platform
 * MBean server as {@code io.rdmachannel:type=Transport,provider=<name>,id=<n>} while the transport is open: its live
 * connections and lifecycle counts. Readable with any JMX client (JConsole, {@code jcmd}) and by
 * {@code ./rdmachannel stat}, which lists the connections of every rdmachannel process of the user on the host.
 */
public interface RdmaTransportMXBean {
    /** The domain of the object names. */
    String DOMAIN = "io.rdmachannel";
    /**
     * The system property a process sets to {@code true} once it registered a transport's MBean: tools that attach
     * to local JVMs ({@code ./rdmachannel stat}) look at it first, and leave other JVMs alone.
     */
    String REGISTERED_PROPERTY = "rdmachannel.jmx.registered";

    /**
     * The verbs provider.
     *
     * @return {@code shm} or {@code native}.
     */
    String getProvider();

    /**
     * The connections established and not yet released.
     *
     * @return each with its addresses, state and counters.
     */
    ConnectionInfo[] getConnections();

    /**
     * The devices the transport has used so far, with their connections and open verbs objects.
     *
     * @return one entry per device.
     */
    DeviceInfo[] getDevices();

    /**
     * How many connections are live now.
     *
     * @return the length of {@link #getConnections()}.
     */
    int getConnectionCount();

    /**
     * Connections established since the transport opened, connected and accepted.
     *
     * @return the count.
     */
    long getConnectionsEstablished();

    /**
     * Connection attempts that failed before they were established, both sides.
     *
     * @return the count.
     */
    long getConnectionsFailed();

    /**
     * Connection requests a listener refused (backlog full, closing).
     *
     * @return the count.
     */
    long getRequestsRejected();
}
