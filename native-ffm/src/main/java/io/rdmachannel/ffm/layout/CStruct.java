package io.rdmachannel.ffm.layout;

import java.lang.foreign.GroupLayout;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.MemoryLayout.PathElement;
import java.lang.foreign.StructLayout;
import java.lang.foreign.UnionLayout;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A C struct or union described as an FFM {@link GroupLayout}, with C's padding rules applied, and the table of
 * every size and offset it defines.
 *
 * <p>Members are given in C order with their C names; padding is inserted the way the C compiler inserts it (each
 * member at a multiple of its alignment, the size a multiple of the largest alignment). A member whose name starts
 * with {@code $} stands for an anonymous C struct or union: its own members are addressed without it, as in C
 * ({@code ibv_send_wr.imm_data}). Offsets are resolved by C member path, e.g. {@code offset("ops.post_send")}.
 *
 * <p>The {@link #checks()} list holds {@code sizeof} and {@code _Alignof} of the type and {@code offsetof} and size
 * of every named member at every depth (sequences are checked as a whole), plus any extra checks registered with
 * {@link #relativeOffset(String, String)}.
 */
public final class CStruct implements CCheckSource {
    private final String cType;
    private final GroupLayout layout;
    private final Map<String, Member> members = new LinkedHashMap<>();
    private final List<CCheck> checks = new ArrayList<>();

    private record Member(long offset, long size) {
    }

    private CStruct(String cType, GroupLayout layout) {
        this.cType = cType;
        this.layout = layout;
        checks.add(new CCheck("sizeof(" + cType + ")", "sizeof(" + cType + ")", layout.byteSize()));
        checks.add(new CCheck("_Alignof(" + cType + ")", "_Alignof(" + cType + ")", layout.byteAlignment()));
        collect(layout, "", new ArrayList<>());
    }

    /**
     * Describe a C struct.
     *
     * @param cType the C type as written in C, e.g. {@code struct ibv_qp}.
     * @param members the members in C order, each with its C name.
     * @return the description.
     */
    public static CStruct struct(String cType, MemoryLayout... members) {
        return new CStruct(cType, structLayout(cType, members));
    }

    /**
     * Describe a C union.
     *
     * @param cType the C type, e.g. {@code union ibv_gid}.
     * @param members the members, each with its C name.
     * @return the description.
     */
    public static CStruct union(String cType, MemoryLayout... members) {
        return new CStruct(cType, unionLayout(cType, members));
    }

    /**
     * A C struct as a layout member, padded the way C pads it.
     *
     * @param name the member name.
     * @param members its members.
     * @return the layout.
     */
    public static StructLayout structLayout(String name, MemoryLayout... members) {
        List<MemoryLayout> padded = new ArrayList<>();
        long offset = 0;
        long alignment = 1;
        for (MemoryLayout member : members) {
            long a = member.byteAlignment();
            long aligned = align(offset, a);
            if (aligned > offset) {
                padded.add(MemoryLayout.paddingLayout(aligned - offset));
            }
            padded.add(member);
            offset = aligned + member.byteSize();
            alignment = Math.max(alignment, a);
        }
        long size = align(offset, alignment);
        if (size > offset) {
            padded.add(MemoryLayout.paddingLayout(size - offset));
        }
        return MemoryLayout.structLayout(padded.toArray(MemoryLayout[]::new)).withName(name);
    }

    /**
     * A C union as a layout member, its size rounded up to its alignment.
     *
     * @param name the member name, {@code $...} for an anonymous union.
     * @param members its members.
     * @return the layout.
     */
    public static UnionLayout unionLayout(String name, MemoryLayout... members) {
        long size = 0;
        long alignment = 1;
        for (MemoryLayout member : members) {
            size = Math.max(size, member.byteSize());
            alignment = Math.max(alignment, member.byteAlignment());
        }
        List<MemoryLayout> all = new ArrayList<>(List.of(members));
        long padded = align(size, alignment);
        if (padded > size) {
            all.add(MemoryLayout.paddingLayout(padded));
        }
        return MemoryLayout.unionLayout(all.toArray(MemoryLayout[]::new)).withName(name);
    }

    private static long align(long value, long alignment) {
        return (value + alignment - 1) / alignment * alignment;
    }

    private void collect(GroupLayout group, String prefix, List<PathElement> path) {
        for (MemoryLayout member : group.memberLayouts()) {
            if (member.name().isEmpty()) {
                continue;
            }
            String name = member.name().get();
            List<PathElement> memberPath = new ArrayList<>(path);
            memberPath.add(PathElement.groupElement(name));
            long offset = layout.byteOffset(memberPath.toArray(PathElement[]::new));
            boolean anonymous = name.startsWith("$");
            String cPath = anonymous ? prefix : prefix + name;
            if (!anonymous) {
                members.put(cPath, new Member(offset, member.byteSize()));
                String offsetOf = "offsetof(" + cType + ", " + cPath + ")";
                checks.add(new CCheck(offsetOf, offsetOf, offset));
                String sizeOf = "sizeof(((" + cType + " *) 0)->" + cPath + ")";
                checks.add(new CCheck(sizeOf, sizeOf, member.byteSize()));
            }
            if (member instanceof GroupLayout nested) {
                collect(nested, anonymous ? prefix : cPath + ".", memberPath);
            }
        }
    }

    /**
     * The C type name.
     *
     * @return e.g. {@code struct ibv_qp}.
     */
    public String cType() {
        return cType;
    }

    /**
     * The layout, padded as in C.
     *
     * @return the layout.
     */
    public GroupLayout layout() {
        return layout;
    }

    /**
     * {@code sizeof} the type.
     *
     * @return the size in bytes.
     */
    public long size() {
        return layout.byteSize();
    }

    /**
     * {@code offsetof} a member.
     *
     * @param cPath the C member path, e.g. {@code qp_num} or {@code ops.post_send}.
     * @return the offset in bytes from the start of the type.
     * @throws IllegalArgumentException if there is no such member.
     */
    public long offset(String cPath) {
        return member(cPath).offset();
    }

    /**
     * The size of a member.
     *
     * @param cPath the C member path.
     * @return the size in bytes.
     * @throws IllegalArgumentException if there is no such member.
     */
    public long memberSize(String cPath) {
        return member(cPath).size();
    }

    private Member member(String cPath) {
        Member member = members.get(cPath);
        if (member == null) {
            throw new IllegalArgumentException("no member " + cPath + " in " + cType);
        }
        return member;
    }

    /**
     * The offset of a member relative to another, e.g. of a {@code verbs_context} op relative to the embedded
     * {@code ibv_context}; registered as a check of its own.
     *
     * @param cPath the member.
     * @param basePath the member offsets are relative to.
     * @return {@code offset(cPath) - offset(basePath)}, negative when the member comes first.
     */
    public long relativeOffset(String cPath, String basePath) {
        long relative = offset(cPath) - offset(basePath);
        String expression = "(long) offsetof(" + cType + ", " + cPath + ") - (long) offsetof(" + cType + ", "
            + basePath + ")";
        checks.add(new CCheck(expression, expression, relative));
        return relative;
    }

    @Override
    public List<CCheck> checks() {
        return Collections.unmodifiableList(checks);
    }

    @Override
    public String toString() {
        return cType + " " + layout;
    }
}
