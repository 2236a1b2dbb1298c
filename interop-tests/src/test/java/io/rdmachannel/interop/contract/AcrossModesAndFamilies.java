package io.rdmachannel.interop.contract;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A contract test run per transport in each {@link IoMode}, over IPv4 and (where the machine has it) IPv6 loopback;
 * the test takes a {@link ContractTransport} and an {@link IoMode} first.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@ParameterizedTest(name = "[{index}] {0} {1}")
@MethodSource("io.rdmachannel.interop.contract.ContractTransports#allModesBothFamilies")
@interface AcrossModesAndFamilies {
}
