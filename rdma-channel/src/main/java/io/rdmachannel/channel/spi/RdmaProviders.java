package io.rdmachannel.channel.spi;

import java.util.ArrayList;
import java.util.List;
import java.util.ServiceLoader;
import java.util.StringJoiner;

/**
 * Finds {@link RdmaProvider}s with {@link ServiceLoader} and chooses the default one.
 */
public final class RdmaProviders {
    /**
     * System property naming the provider to use: a provider name, or {@code auto}.
     */
    public static final String PROVIDER_PROP_NAME = "rdmachannel.provider";

    /**
     * Default for {@link #PROVIDER_PROP_NAME}: {@code auto} picks {@code native} when it is available, else
     * {@code shm}.
     */
    public static final String PROVIDER_DEFAULT = "auto";

    private static final String AUTO = "auto";
    private static final String NATIVE = "native";
    private static final String SHM = "shm";

    private RdmaProviders() {
    }

    /**
     * All providers on the class path or module path, in service-loader order.
     *
     * @return the providers, whether available or not.
     */
    public static List<RdmaProvider> all() {
        final List<RdmaProvider> providers = new ArrayList<>();
        final ClassLoader loader = RdmaProviders.class.getClassLoader();
        for (final RdmaProvider provider : ServiceLoader.load(RdmaProvider.class, loader)) {
            providers.add(provider);
        }
        return providers;
    }

    /**
     * The provider with the given name.
     *
     * @param name the provider name.
     * @return the provider, available or not.
     * @throws IllegalArgumentException if no provider has that name.
     */
    public static RdmaProvider byName(final String name) {
        final List<RdmaProvider> providers = all();
        final StringJoiner known = new StringJoiner(", ");
        for (final RdmaProvider provider : providers) {
            if (provider.name().equals(name)) {
                return provider;
            }
            known.add(provider.name());
        }
        throw new IllegalArgumentException("no RDMA provider named '" + name + "'; known providers: " + known);
    }

    /**
     * The provider chosen by {@link #PROVIDER_PROP_NAME}: with {@code auto}, {@code native} when it is available
     * and otherwise {@code shm}.
     *
     * @return the chosen provider; an explicitly named provider is returned even if it is unavailable, so that its
     *     {@link RdmaProvider#ensureAvailability()} can say why.
     */
    public static RdmaProvider defaultProvider() {
        final String name = System.getProperty(PROVIDER_PROP_NAME, PROVIDER_DEFAULT);
        if (!AUTO.equals(name)) {
            return byName(name);
        }
        RdmaProvider shm = null;
        for (final RdmaProvider provider : all()) {
            if (NATIVE.equals(provider.name()) && provider.isAvailable()) {
                return provider;
            }
            if (SHM.equals(provider.name())) {
                shm = provider;
            }
        }
        if (shm == null) {
            throw new IllegalStateException("no RDMA provider found: the shm provider of io.rdmachannel.channel is"
                + " missing from the class path");
        }
        return shm;
    }
}
