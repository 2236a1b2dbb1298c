package io.rdmachannel.demo.bench;

import io.rdmachannel.channel.spi.RdmaProviders;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * {@code ./rdmachannel bench}: latency and bandwidth of the RDMA channels next to the JDK's TCP and Unix-domain
 * socket channels, between this JVM (the client) and a {@link BenchServer} in a second JVM. See
 * {@link BenchOptions#USAGE}.
 */
public final class BenchMain {
    private BenchMain() {
    }

    /**
     * Run the benchmark; exit status 0 when every measurement ran, 1 when one failed, 2 on bad arguments.
     *
     * @param args the options, see {@code --help}.
     */
    public static void main(final String[] args) {
        System.exit(run(args, System.out, System.err));
    }

    /**
     * Run the benchmark with results on {@code out} and progress and errors on {@code err}.
     *
     * @return the exit status.
     */
    static int run(final String[] args, final PrintStream out, final PrintStream err) {
        final BenchOptions options;
        try {
            options = BenchOptions.parse(args);
            if (options != null && options.plot() != null) {
                final Path folder = options.plot().toAbsolutePath().getParent();
                if (!Files.isDirectory(folder)) {
                    throw new IllegalArgumentException("--plot: the folder " + folder + " does not exist");
                }
            }
        } catch (final IllegalArgumentException ex) {
            err.println("rdmachannel bench: " + ex.getMessage() + " (try --help)");
            return 2;
        }
        if (options == null) {
            out.print(BenchOptions.USAGE);
            return 0;
        }
        // The plot is drawn off screen; set before anything touches AWT.
        System.setProperty("java.awt.headless", "true");
        if (options.provider() != null) {
            System.setProperty(RdmaProviders.PROVIDER_PROP_NAME, options.provider());
        }
        try {
            return new BenchRun(options, out, err).run();
        } catch (final IOException | RuntimeException ex) {
            err.println("rdmachannel bench: failed: " + ex);
            ex.printStackTrace(err);
            return 1;
        }
    }
}
