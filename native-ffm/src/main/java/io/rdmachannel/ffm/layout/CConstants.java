package io.rdmachannel.ffm.layout;

import java.util.ArrayList;
import java.util.List;

/**
 * A table of C constants (macros, enum values, type sizes) that Java code repeats as literals. Declare the table as a
 * static field next to the constants; each {@code value(..)} call returns the value it registers, so a constant is
 * written once:
 *
 * <pre>{@code
 * private static final CConstants C = new CConstants();
 * public static final int O_NONBLOCK = C.value("O_NONBLOCK", 0x800);
 * }</pre>
 */
public final class CConstants implements CCheckSource {
    private final List<CCheck> checks = new ArrayList<>();

    /**
     * Register an int constant.
     *
     * @param cExpression the C expression, usually the macro name.
     * @param value the Java value.
     * @return {@code value}.
     */
    public int value(String cExpression, int value) {
        // As an int: flags such as EPOLLET are unsigned in C and negative in Java, with the same bits.
        checks.add(new CCheck(cExpression, "(int) (" + cExpression + ")", value));
        return value;
    }

    /**
     * Register a long constant, e.g. a {@code sizeof}.
     *
     * @param cExpression the C expression.
     * @param value the Java value.
     * @return {@code value}.
     */
    public long longValue(String cExpression, long value) {
        checks.add(new CCheck(cExpression, cExpression, value));
        return value;
    }

    @Override
    public List<CCheck> checks() {
        return List.copyOf(checks);
    }
}
