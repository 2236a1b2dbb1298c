package io.rdmachannel.ffm.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.lang.foreign.MemoryLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The C compiler is the ground truth for every size, offset and constant the bindings use. This test collects every
 * {@link CCheckSource} declared as a static field anywhere in the module (so a new struct member or constant cannot
 * escape), writes a C program printing the same facts, compiles it with gcc against the installed rdma-core headers,
 * runs it, and lists every difference.
 */
class CLayoutTest {
    private static final String ROOT_PACKAGE = "io.rdmachannel.ffm";
    private static final String[] HEADERS = {
        "stddef.h", "stdio.h", "errno.h", "fcntl.h", "poll.h", "netdb.h", "pthread.h", "sys/epoll.h",
        "sys/eventfd.h", "sys/socket.h", "netinet/in.h", "infiniband/verbs.h", "infiniband/ib.h",
        "rdma/rdma_cma.h",
    };
    private static final Pattern GCC_ERROR = Pattern.compile("^[^:]*\\.c:(\\d+):\\d+: error: (.*)$");
    private static final int FIRST_CHECK_LINE = HEADERS.length + 4;

    private static Map<String, List<CCheck>> sources;

    @BeforeAll
    static void collectChecks() throws Exception {
        sources = collect();
    }

    @Test
    void shouldDeclareChecksInEveryLayoutClass() {
        assertTrue(sources.keySet().stream().anyMatch(key -> key.contains("IbvContextLayouts.IBV_CONTEXT")),
            "no checks found: " + sources.keySet());
        assertTrue(sources.keySet().stream().anyMatch(key -> key.contains("LibC.")),
            "libc constants not found: " + sources.keySet());
    }

    @Test
    void shouldBackEveryStaticLayoutByACheckedStruct() throws Exception {
        Set<MemoryLayout> checked = Collections.newSetFromMap(new IdentityHashMap<>());
        List<String> unchecked = new ArrayList<>();
        for (Class<?> type : moduleClasses()) {
            for (Field field : type.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers()) && CStruct.class.isAssignableFrom(field.getType())) {
                    field.setAccessible(true);
                    checked.add(((CStruct) field.get(null)).layout());
                }
            }
        }
        for (Class<?> type : moduleClasses()) {
            for (Field field : type.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers()) && MemoryLayout.class.isAssignableFrom(field.getType())
                    && !field.getType().getName().startsWith("java.lang.foreign.ValueLayout")) {
                    field.setAccessible(true);
                    Object layout = field.get(null);
                    if (layout instanceof java.lang.foreign.GroupLayout && !checked.contains(layout)) {
                        unchecked.add(type.getSimpleName() + "." + field.getName());
                    }
                }
            }
        }
        assertEquals(List.of(), unchecked, "struct layouts not declared through a checked CStruct");
    }

    @Test
    void shouldMatchTheCCompiler(@TempDir Path dir) throws Exception {
        assumeTrue(onPath("gcc"), "gcc not found on PATH: layout test skipped");
        assumeTrue(Files.isRegularFile(Path.of("/usr/include/infiniband/verbs.h"))
            && Files.isRegularFile(Path.of("/usr/include/rdma/rdma_cma.h")),
            "rdma-core headers not installed (libibverbs-dev, librdmacm-dev): layout test skipped");

        List<CCheck> checks = new ArrayList<>();
        List<String> owners = new ArrayList<>();
        sources.forEach((owner, list) -> {
            for (CCheck check : list) {
                checks.add(check);
                owners.add(owner);
            }
        });
        Path source = dir.resolve("layout.c");
        Files.writeString(source, program(checks));
        Path binary = dir.resolve("layout");
        Result compile = run(dir, "gcc", "-std=gnu11", "-o", binary.toString(), source.toString());
        if (compile.exitCode() != 0) {
            fail("C program does not compile:\n" + compileErrors(compile.output(), checks, owners));
        }
        Result result = run(dir, binary.toString());
        assertEquals(0, result.exitCode(), result.output());
        List<String> lines = result.output().lines().toList();
        assertEquals(checks.size(), lines.size(), "one output line per check");

        List<String> mismatches = new ArrayList<>();
        for (int i = 0; i < checks.size(); i++) {
            CCheck check = checks.get(i);
            long cValue = Long.parseLong(lines.get(i).trim());
            if (cValue != check.javaValue()) {
                mismatches.add(owners.get(i) + ": " + check.description() + ": C=" + cValue + " Java="
                    + check.javaValue());
            }
        }
        assertEquals(List.of(), mismatches, mismatches.size() + " of " + checks.size() + " checks differ");
        System.out.println("CLayoutTest: " + checks.size() + " checks from " + sources.size()
            + " sources match the C compiler");
    }

    private static String program(List<CCheck> checks) {
        StringBuilder c = new StringBuilder();
        c.append("#define _GNU_SOURCE\n");
        for (String header : HEADERS) {
            c.append("#include <").append(header).append(">\n");
        }
        c.append("int main(void)\n{\n");
        for (CCheck check : checks) {
            c.append("    printf(\"%lld\\n\", (long long) (").append(check.cExpression()).append("));\n");
        }
        c.append("    return 0;\n}\n");
        return c.toString();
    }

    private static String compileErrors(String output, List<CCheck> checks, List<String> owners) {
        StringBuilder errors = new StringBuilder();
        for (String line : output.lines().toList()) {
            Matcher matcher = GCC_ERROR.matcher(line);
            if (matcher.matches()) {
                int index = Integer.parseInt(matcher.group(1)) - FIRST_CHECK_LINE;
                String what = index >= 0 && index < checks.size()
                    ? owners.get(index) + ": " + checks.get(index).description()
                    : "line " + matcher.group(1);
                errors.append(what).append(": ").append(matcher.group(2)).append('\n');
            }
        }
        return errors.isEmpty() ? output : errors.toString();
    }

    private static Map<String, List<CCheck>> collect() throws Exception {
        Map<String, List<CCheck>> found = new LinkedHashMap<>();
        for (Class<?> type : moduleClasses()) {
            for (Field field : type.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers())
                    && CCheckSource.class.isAssignableFrom(field.getType())) {
                    field.setAccessible(true);
                    found.put(type.getSimpleName() + "." + field.getName(),
                        ((CCheckSource) field.get(null)).checks());
                }
            }
        }
        return found;
    }

    /** Every class the build compiled into this module's output directory. */
    static List<Class<?>> moduleClasses() throws IOException, URISyntaxException, ClassNotFoundException {
        Path root = Path.of(CStruct.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Path packageDir = root.resolve(ROOT_PACKAGE.replace('.', '/'));
        List<String> names;
        try (Stream<Path> files = Files.walk(packageDir)) {
            names = files.map(root::relativize)
                .map(Path::toString)
                .filter(name -> name.endsWith(".class"))
                .map(name -> name.substring(0, name.length() - ".class".length()).replace('/', '.'))
                .sorted()
                .collect(Collectors.toList());
        }
        List<Class<?>> classes = new ArrayList<>();
        for (String name : names) {
            classes.add(Class.forName(name, false, CLayoutTest.class.getClassLoader()));
        }
        return classes;
    }

    private static boolean onPath(String program) {
        String path = System.getenv().getOrDefault("PATH", "");
        return Stream.of(path.split(":")).anyMatch(dir -> Files.isExecutable(Path.of(dir, program)));
    }

    private record Result(int exitCode, String output) {
    }

    private static Result run(Path dir, String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            fail(String.join(" ", command) + " timed out");
        }
        return new Result(process.exitValue(), output);
    }
}
