package io.rdmachannel.channel.shm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.rdmachannel.channel.spi.AccessFlags;
import io.rdmachannel.channel.spi.MemoryRegion;
import io.rdmachannel.channel.spi.ProtectionDomain;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The shm provider keeps its mappings within what the kernel's {@code vm.max_map_count} leaves the JVM: past the
 * budget, the mapping a new region needs fails with an {@link IOException} that says what to raise, instead of the
 * JVM running out of mappings later (a crash, as it did at about 9,000 connections in one process).
 */
class ShmMappingBudgetTest {
    @RegisterExtension
    final ShmFixture fixture = new ShmFixture();
    private final int budget = SharedFile.mappingBudget;

    @AfterEach
    void restoreBudget() {
        SharedFile.mappingBudget = budget;
    }

    @Test
    void shouldDeriveTheBudgetFromTheKernelsLimit() {
        if (SharedFile.MAX_MAP_COUNT != Integer.MAX_VALUE) {
            assertTrue(budget > 0 && budget <= SharedFile.MAX_MAP_COUNT - 8192,
                "budget " + budget + " of vm.max_map_count " + SharedFile.MAX_MAP_COUNT);
        }
    }

    @Test
    void shouldRefuseAMappingPastTheBudgetAndCountEachFileOnce() throws Exception {
        final ProtectionDomain pd = fixture.own(fixture.device().allocateProtectionDomain());
        final List<MemoryRegion> regions = new ArrayList<>();
        final int mappedBefore = SharedFile.mappedFiles();
        SharedFile.mappingBudget = mappedBefore + 2;
        try {
            IOException refused = null;
            for (int i = 0; i < 10 && refused == null; i++) {
                try {
                    // each of a new size: no pooled file of the device can serve it
                    regions.add(pd.allocate((i + 1) * 1_000_000L, AccessFlags.LOCAL_WRITE));
                } catch (final IOException ex) {
                    refused = ex;
                }
            }
            if (refused == null) {
                fail("10 regions of new files were mapped with a budget of 2 more files");
            }
            assertEquals(2, regions.size(), "regions mapped before the refusal");
            assertTrue(refused.getMessage().contains("vm.max_map_count"), refused::getMessage);
            assertEquals(mappedBefore + 2, SharedFile.mappedFiles(), "a refused mapping is not counted");
        } finally {
            for (final MemoryRegion region : regions) {
                region.close();
            }
        }
        SharedFile.mappingBudget = budget;
        pd.allocate(64, AccessFlags.LOCAL_WRITE).close();
    }
}
