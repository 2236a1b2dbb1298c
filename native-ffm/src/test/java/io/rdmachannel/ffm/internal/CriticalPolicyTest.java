package io.rdmachannel.ffm.internal;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CriticalPolicyTest {
    @AfterEach
    void clearProperties() {
        System.clearProperty(CriticalPolicy.CRITICAL_PROP_NAME);
        System.clearProperty(CriticalPolicy.CRITICAL_PROP_NAME + ".mlx5_0");
        System.clearProperty(CriticalPolicy.CRITICAL_PROP_NAME + ".rxe0");
    }

    @Test
    void shouldAllowHardwareAndRefuseSoftwareProviders() {
        assertTrue(CriticalPolicy.allowsCritical("mlx5_0"));
        assertFalse(CriticalPolicy.allowsCritical("rxe0"));
        assertFalse(CriticalPolicy.allowsCritical("siw_eth0"));
    }

    @Test
    void shouldHonourGlobalSwitchAndPerDeviceOverride() {
        System.setProperty(CriticalPolicy.CRITICAL_PROP_NAME, "false");
        assertFalse(CriticalPolicy.allowsCritical("mlx5_0"));

        System.setProperty(CriticalPolicy.CRITICAL_PROP_NAME + ".mlx5_0", "true");
        assertTrue(CriticalPolicy.allowsCritical("mlx5_0"));

        System.clearProperty(CriticalPolicy.CRITICAL_PROP_NAME);
        System.setProperty(CriticalPolicy.CRITICAL_PROP_NAME + ".rxe0", "true");
        assertTrue(CriticalPolicy.allowsCritical("rxe0"));
    }
}
