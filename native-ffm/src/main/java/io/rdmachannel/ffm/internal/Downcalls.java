package io.rdmachannel.ffm.internal;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.Optional;

/**
 * Links downcall handles without ever failing class initialisation: a symbol that cannot be found yields a handle
 * that throws {@link UnsatisfiedLinkError} when called, and is recorded so that the availability check can name it.
 */
public final class Downcalls {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final MethodHandle MISSING;

    static {
        try {
            MISSING = MethodHandles.lookup().findStatic(Downcalls.class, "missing",
                MethodType.methodType(Object.class, String.class));
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private Downcalls() {
    }

    /**
     * Link an exported function.
     *
     * @param library the library that exports it.
     * @param name the symbol.
     * @param descriptor the C signature.
     * @param options linker options, e.g. {@link Errno#CAPTURE}.
     * @return the handle; one that throws {@link UnsatisfiedLinkError} if the symbol is missing.
     */
    public static MethodHandle link(NativeLibrary library, String name, FunctionDescriptor descriptor,
        Linker.Option... options) {
        Optional<MemorySegment> symbol = library.find(name);
        if (symbol.isPresent()) {
            return LINKER.downcallHandle(symbol.get(), descriptor, options);
        }
        MethodType type = LINKER.downcallHandle(descriptor, options).type().dropParameterTypes(0, 1);
        String message = library.isLoaded()
            ? "symbol " + name + " not found in " + library.soname()
            : library.soname() + " is not loaded, cannot call " + name;
        MethodHandle thrower = MethodHandles.insertArguments(MISSING, 0, message)
            .asType(MethodType.methodType(type.returnType()));
        return MethodHandles.dropArguments(thrower, 0, type.parameterList());
    }

    /**
     * An unbound ("virtual") handle: its first parameter is the address of the function to call. Used for the
     * function pointers of the {@code ibv_context} ops table and of {@code verbs_context}.
     *
     * @param descriptor the C signature of the pointer.
     * @param options linker options.
     * @return the handle.
     */
    public static MethodHandle unbound(FunctionDescriptor descriptor, Linker.Option... options) {
        return LINKER.downcallHandle(descriptor, options);
    }

    /**
     * Turn what {@code invokeExact} threw into an unchecked exception: native code throws nothing, so this is an
     * {@link UnsatisfiedLinkError} from a missing symbol or a programming error.
     *
     * @param thrown what was thrown.
     * @return an exception to throw.
     */
    public static RuntimeException unexpected(Throwable thrown) {
        if (thrown instanceof Error error) {
            throw error;
        }
        if (thrown instanceof RuntimeException runtime) {
            return runtime;
        }
        return new IllegalStateException("unexpected exception from a downcall", thrown);
    }

    @SuppressWarnings("unused")
    private static Object missing(String message) {
        throw new UnsatisfiedLinkError(message);
    }
}
