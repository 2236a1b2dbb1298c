package io.rdmachannel.channel.stream;

import java.io.IOException;

/**
 * Opens something with a system property set for the opening only: settings are read when a device or transport
 * opens, so a test can give its own objects a setting without changing it for the rest of the JVM.
 */
final class WithProperty {
    private WithProperty() {
    }

    /**
     * Something that opens a device or transport underneath.
     */
    @FunctionalInterface
    interface Opener<T> {
        T open() throws IOException;
    }

    /**
     * Set {@code name} to {@code value}, open, and put back what the property was.
     */
    static synchronized <T> T open(final String name, final String value, final Opener<T> opener)
        throws IOException {
        final String previous = System.getProperty(name);
        System.setProperty(name, value);
        try {
            return opener.open();
        } finally {
            if (previous == null) {
                System.clearProperty(name);
            } else {
                System.setProperty(name, previous);
            }
        }
    }
}
