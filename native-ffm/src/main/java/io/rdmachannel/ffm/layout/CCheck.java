package io.rdmachannel.ffm.layout;

import java.util.Objects;

/**
 * One fact the Java bindings rely on, paired with the C expression that must produce the same value when compiled
 * against the installed headers: a size, an alignment, an offset or a constant.
 *
 * @param description what is checked, e.g. {@code offsetof(struct ibv_qp, qp_num)}.
 * @param cExpression a C integer expression, e.g. {@code offsetof(struct ibv_qp, qp_num)}.
 * @param javaValue the value the Java bindings use.
 */
public record CCheck(String description, String cExpression, long javaValue) {
    /**
     * Validate the components.
     *
     * @param description what is checked.
     * @param cExpression the C expression.
     * @param javaValue the Java value.
     */
    public CCheck {
        Objects.requireNonNull(description, "description");
        Objects.requireNonNull(cExpression, "cExpression");
    }
}
