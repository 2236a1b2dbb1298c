package io.rdmachannel.interop.contract;

import java.util.List;

import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.AfterTestExecutionCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;

/**
 * Gives each test a fresh {@link ConnectionState}, prints it when the test fails (before resources are closed, so
 * the dump shows the connections as the failure left them) and closes the registered resources afterwards.
 */
final class ConnectionStateExtension implements ParameterResolver, AfterTestExecutionCallback, AfterEachCallback {

    private static final ExtensionContext.Namespace NAMESPACE =
        ExtensionContext.Namespace.create(ConnectionStateExtension.class);

    @Override
    public boolean supportsParameter(final ParameterContext parameterContext,
        final ExtensionContext extensionContext) {
        return parameterContext.getParameter().getType() == ConnectionState.class;
    }

    @Override
    public Object resolveParameter(final ParameterContext parameterContext, final ExtensionContext extensionContext) {
        return stateOf(extensionContext);
    }

    @Override
    public void afterTestExecution(final ExtensionContext context) {
        context.getExecutionException().ifPresent(failure -> {
            final String dump = stateOf(context).dump() + "\n  failure = " + failure;
            System.err.println(dump);
            context.publishReportEntry("connection-state", dump);
        });
    }

    @Override
    public void afterEach(final ExtensionContext context) throws Exception {
        final List<Exception> failures = stateOf(context).closeAll();
        if (!failures.isEmpty() && context.getExecutionException().isEmpty()) {
            final Exception first = failures.getFirst();
            failures.stream().skip(1).forEach(first::addSuppressed);
            throw first;
        }
    }

    private static ConnectionState stateOf(final ExtensionContext context) {
        return context.getStore(NAMESPACE).getOrComputeIfAbsent(ConnectionState.class,
            type -> new ConnectionState(context.getRequiredTestClass().getSimpleName() + "."
                + context.getRequiredTestMethod().getName() + " " + context.getDisplayName()),
            ConnectionState.class);
    }
}
