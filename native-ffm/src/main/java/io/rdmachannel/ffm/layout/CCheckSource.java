package io.rdmachannel.ffm.layout;

import java.util.List;

/**
 * Something that declares facts about the C ABI. Every static field of this type in the module's classes is found
 * by the layout test and compared with the C compiler, so a fact cannot be used without being checked.
 */
public interface CCheckSource {
    /**
     * The facts to check.
     *
     * @return the checks, in declaration order.
     */
    List<CCheck> checks();
}
