package io.rdmachannel.demo;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The command line of a second JVM started as this one was, for the demos' and benchmarks' other processes: the same
 * {@code java} ({@code RDMACHANNEL_JAVA} if set), JVM flags ({@code RDMACHANNEL_JVM_FLAGS} if set, else the flags
 * rdmachannel needs), {@code rdmachannel.*} system properties and class path.
 */
public final class JavaCommand {
    /** What rdmachannel needs of the JVM: Agrona's and the selector's internal APIs, native access for FFM. */
    static final List<String> DEFAULT_JVM_FLAGS = List.of("--add-exports",
        "java.base/jdk.internal.misc=ALL-UNNAMED", "--add-exports", "java.base/sun.nio.ch=ALL-UNNAMED",
        "--enable-native-access=ALL-UNNAMED");

    private JavaCommand() {
    }

    /**
     * The command that runs {@code main} with {@code arguments}.
     *
     * @param main      the class whose {@code main} runs.
     * @param arguments its arguments.
     * @return a new, modifiable list.
     */
    public static List<String> of(final Class<?> main, final List<String> arguments) {
        final List<String> command = new ArrayList<>();
        final String java = System.getenv("RDMACHANNEL_JAVA");
        command.add(java != null && !java.isBlank() ? java : ProcessHandle.current().info().command()
            .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        final String flags = System.getenv("RDMACHANNEL_JVM_FLAGS");
        command.addAll(flags != null && !flags.isBlank() ? Arrays.asList(flags.trim().split("\\s+"))
            : DEFAULT_JVM_FLAGS);
        for (final String name : System.getProperties().stringPropertyNames()) {
            if (name.startsWith("rdmachannel.")) {
                command.add("-D" + name + "=" + System.getProperty(name));
            }
        }
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(arguments);
        return command;
    }
}
