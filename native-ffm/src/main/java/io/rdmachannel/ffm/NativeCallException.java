package io.rdmachannel.ffm;

import java.io.IOException;

/**
 * A native call failed. The message names the C function and the error, in the form
 * {@code ibv_reg_mr(..) failed with error(12): Cannot allocate memory}.
 *
 * <p>Most failures carry an {@code errno} value. {@code rdma_getaddrinfo} may also fail with a resolver code
 * ({@code EAI_*}, negative); then {@link #errno()} is 0 and {@link #addressInfoError()} holds the code.
 */
public class NativeCallException extends IOException {
    private static final long serialVersionUID = 1L;

    private final String function;
    private final int errno;
    private final int addressInfoError;

    /**
     * A failure with an {@code errno} value.
     *
     * @param function the C function, e.g. {@code ibv_reg_mr}.
     * @param errno the error number.
     * @param description the text of the error, e.g. from {@code strerror}.
     */
    public NativeCallException(String function, int errno, String description) {
        this(function, errno, 0, errno, description);
    }

    private NativeCallException(String function, int errno, int addressInfoError, int code, String description) {
        super(function + "(..) failed with error(" + code + "): " + description);
        this.function = function;
        this.errno = errno;
        this.addressInfoError = addressInfoError;
    }

    /**
     * A failure with a resolver code, as returned by {@code getaddrinfo}.
     *
     * @param function the C function, e.g. {@code rdma_getaddrinfo}.
     * @param code the {@code EAI_*} code.
     * @param description the text of the error, from {@code gai_strerror}.
     * @return the exception.
     */
    public static NativeCallException addressInfo(String function, int code, String description) {
        return new NativeCallException(function, 0, code, code, description);
    }

    /**
     * The C function that failed.
     *
     * @return the function name, e.g. {@code ibv_reg_mr}.
     */
    public String function() {
        return function;
    }

    /**
     * The error number.
     *
     * @return the {@code errno} value, or 0 for a resolver failure.
     */
    public int errno() {
        return errno;
    }

    /**
     * The resolver code of a {@code rdma_getaddrinfo} failure.
     *
     * @return the {@code EAI_*} code, or 0 for an {@code errno} failure.
     */
    public int addressInfoError() {
        return addressInfoError;
    }
}
