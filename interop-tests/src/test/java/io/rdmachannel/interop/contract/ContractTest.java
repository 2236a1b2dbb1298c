package io.rdmachannel.interop.contract;

import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Marks a contract test class: its tests get a {@link ConnectionState} parameter on request, dumped on failure.
 * Every such class also carries a class-level {@link org.junit.jupiter.api.Timeout}.
 */
@Target(ElementType.TYPE)
@Retention(RetentionPolicy.RUNTIME)
@ExtendWith(ConnectionStateExtension.class)
@interface ContractTest {
}
