package io.rdmachannel.channel.shm;

import io.rdmachannel.channel.cm.ConnectionManager;
import io.rdmachannel.channel.spi.RdmaDevice;
import io.rdmachannel.channel.spi.RdmaProvider;

import java.io.IOException;
import java.util.List;
import java.util.Locale;

/**
 * The embedded shared-memory provider: verbs semantics in pure Java between processes and threads of one host.
 * Each {@link #openDevice(String)} creates a new device, a node of the host-local fabric with its own GID.
 */
public final class ShmProvider implements RdmaProvider {
    /** The provider name. */
    public static final String NAME = "shm";
    /** The name of the one device kind it offers. */
    public static final String DEVICE_NAME = "shm0";

    private final Throwable unavailabilityCause;

    /**
     * Called by {@link java.util.ServiceLoader}.
     */
    public ShmProvider() {
        this.unavailabilityCause = checkAvailability();
    }

    private static Throwable checkAvailability() {
        final String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        if (!os.contains("linux")) {
            return new UnsupportedOperationException("the shm provider needs Linux; this is " + os);
        }
        return null;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public boolean isAvailable() {
        return unavailabilityCause == null;
    }

    @Override
    public Throwable unavailabilityCause() {
        return unavailabilityCause;
    }

    @Override
    public List<String> deviceNames() {
        return isAvailable() ? List.of(DEVICE_NAME) : List.of();
    }

    @Override
    public RdmaDevice openDevice(final String name) throws IOException {
        ensureAvailability();
        if (name != null && !DEVICE_NAME.equals(name)) {
            throw new IllegalArgumentException("the shm provider has no device named '" + name + "'; it offers "
                + DEVICE_NAME);
        }
        return ShmDevice.open(this, ShmConfiguration.fromSystemProperties());
    }

    @Override
    public List<String> connectionManagerNames() {
        return List.of(ShmConnectionManager.NAME);
    }

    @Override
    public ConnectionManager openConnectionManager(final String name) throws IOException {
        if (name != null && !ShmConnectionManager.NAME.equals(name)) {
            throw new IllegalArgumentException("the shm provider has no connection manager named '" + name
                + "'; it offers " + ShmConnectionManager.NAME + ", and every provider offers oob");
        }
        final ShmDevice device = (ShmDevice) openDevice(null);
        try {
            return new ShmConnectionManager(device, ShmConfiguration.fromSystemProperties());
        } catch (final IOException | RuntimeException ex) {
            device.close();
            throw ex;
        }
    }

    @Override
    public String toString() {
        return "ShmProvider{available=" + isAvailable() + '}';
    }
}
