package io.rdmachannel.nio;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.module.ModuleDescriptor;
import java.lang.module.ModuleFinder;
import java.lang.module.ModuleReference;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

/**
 * Reads the module descriptor that the build compiled into target/classes (tests run on the class path, so the
 * descriptor is not otherwise exercised).
 */
class ModuleLoadTest {

    private static final String MODULE_NAME = "io.rdmachannel.nio";
    private static final Path CLASSES = Path.of("target", "classes");

    @Test
    void shouldFindCompiledModuleDescriptor() {
        assertTrue(Files.isRegularFile(CLASSES.resolve("module-info.class")),
            "module-info.class missing in " + CLASSES.toAbsolutePath());

        Optional<ModuleReference> module = ModuleFinder.of(CLASSES).find(MODULE_NAME);

        assertTrue(module.isPresent(), "no module " + MODULE_NAME + " in " + CLASSES.toAbsolutePath());
        ModuleDescriptor descriptor = module.get().descriptor();
        assertEquals(MODULE_NAME, descriptor.name());
        assertFalse(descriptor.isAutomatic(), "module must be explicit, not automatic");
    }

    @Test
    void shouldRequireChannelModule() {
        ModuleDescriptor descriptor = ModuleFinder.of(CLASSES).find(MODULE_NAME).orElseThrow().descriptor();

        Set<String> required = descriptor.requires().stream()
            .map(ModuleDescriptor.Requires::name)
            .collect(Collectors.toSet());

        assertTrue(required.contains("io.rdmachannel.channel"), MODULE_NAME + " requires only " + required);
    }

    @Test
    void shouldExportOnlyTheApiPackageAndShipNoProviderServiceFile() {
        ModuleDescriptor descriptor = ModuleFinder.of(CLASSES).find(MODULE_NAME).orElseThrow().descriptor();

        assertEquals(Set.of("io.rdmachannel.nio"), descriptor.exports().stream()
            .map(ModuleDescriptor.Exports::source)
            .collect(Collectors.toSet()));
        assertTrue(descriptor.provides().isEmpty(), "provides " + descriptor.provides());
        assertFalse(Files.exists(CLASSES.resolve("META-INF/services/java.nio.channels.spi.SelectorProvider")));
    }
}
