package io.rdmachannel.ffm.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The native libraries the bindings use, each loaded lazily and once, in the global arena (they are never unloaded).
 * A library that cannot be loaded, and every symbol that cannot be found, is remembered for the availability check.
 */
public enum NativeLibrary {
    /** The C library, through the linker's default lookup. */
    LIBC("libc.so.6"),
    /** libibverbs from rdma-core (the soname: the unversioned link comes only with the -dev package). */
    IBVERBS("libibverbs.so.1"),
    /** librdmacm from rdma-core. */
    RDMACM("librdmacm.so.1");

    private final String soname;
    private final List<String> missingSymbols = new ArrayList<>();
    private SymbolLookup lookup;
    private Throwable loadFailure;
    private boolean attempted;

    NativeLibrary(String soname) {
        this.soname = soname;
    }

    /**
     * The name the library is loaded by.
     *
     * @return e.g. {@code libibverbs.so.1}.
     */
    public String soname() {
        return soname;
    }

    private synchronized SymbolLookup lookup() {
        if (!attempted) {
            attempted = true;
            try {
                lookup = this == LIBC
                    ? Linker.nativeLinker().defaultLookup()
                    : SymbolLookup.libraryLookup(soname, Arena.global());
            } catch (IllegalArgumentException | IllegalCallerException e) {
                loadFailure = new UnsatisfiedLinkError(soname + " cannot be loaded (install rdma-core's "
                    + soname.substring(0, soname.indexOf('.')) + " package): " + e.getMessage());
                loadFailure.initCause(e);
            }
        }
        return lookup;
    }

    /**
     * Whether the library is loaded, loading it if this is the first use.
     *
     * @return true if symbols can be looked up.
     */
    public boolean isLoaded() {
        return lookup() != null;
    }

    /**
     * Why the library could not be loaded.
     *
     * @return the failure, or {@code null} if it is loaded.
     */
    public synchronized Throwable loadFailure() {
        lookup();
        return loadFailure;
    }

    /**
     * Find a symbol; a missing one is recorded (unless the whole library is missing).
     *
     * @param name the symbol.
     * @return its address, or empty.
     */
    public synchronized Optional<MemorySegment> find(String name) {
        SymbolLookup symbols = lookup();
        if (symbols == null) {
            return Optional.empty();
        }
        Optional<MemorySegment> symbol = symbols.find(name);
        if (symbol.isEmpty()) {
            missingSymbols.add(name);
        }
        return symbol;
    }

    /**
     * Symbols that were looked up and not found.
     *
     * @return the names, in lookup order.
     */
    public synchronized List<String> missingSymbols() {
        return List.copyOf(missingSymbols);
    }
}
