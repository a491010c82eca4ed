"""Struct member offsets from a kernel's BTF (``/sys/kernel/btf/vmlinux``).

Probes that read kernel memory through fixed offsets (a per-CPU runqueue's
fields, say, which a kprobe's typed arguments cannot reach) need the offsets
of the kernel they run on. BTF carries them: a header, a type section of
variable-length records and a string section (the layout is
Documentation/bpf/btf.rst). Only what offsets need is read: structs and
unions with their members, and the typedefs and qualifiers between a member
and its struct type.
"""

from __future__ import annotations

import struct

_MAGIC = 0xEB9F
# BTF_KIND_* and the bytes each kind's record carries after its 12-byte
# common part (per member/parameter/variable where it has `vlen` of them).
_STRUCT, _UNION = 4, 5
_TYPEDEF, _VOLATILE, _CONST, _RESTRICT, _TYPE_TAG = 8, 9, 10, 11, 18
# INT, ARRAY, VAR, DECL_TAG:
_FIXED = {1: 4, 3: 12, 14: 4, 17: 4}
# STRUCT, UNION, ENUM, FUNC_PROTO, DATASEC, ENUM64:
_PER_ITEM = {4: 12, 5: 12, 6: 8, 13: 8, 15: 12, 19: 12}


class BtfError(ValueError):
    """The data is not BTF this parser reads, or a path is not in it."""


class Btf:
    """The struct and union types of one BTF blob."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 24:
            raise BtfError("too short for a BTF header")
        magic, _version, _flags, hdr_len = struct.unpack_from("<HBBI", data, 0)
        if magic != _MAGIC:
            raise BtfError(f"bad magic {magic:#x} (expected {_MAGIC:#x}, little-endian BTF)")
        type_off, type_len, str_off, str_len = struct.unpack_from("<IIII", data, 8)
        types = data[hdr_len + type_off : hdr_len + type_off + type_len]
        self._strings = data[hdr_len + str_off : hdr_len + str_off + str_len]
        # id -> (kind, name, size_or_type, members); ids start at 1.
        self._types: list[tuple[int, str, int, list[tuple[str, int, int]]]] = [(0, "", 0, [])]
        self._by_name: dict[str, int] = {}
        pos = 0
        while pos + 12 <= len(types):
            name_off, info, size_or_type = struct.unpack_from("<III", types, pos)
            pos += 12
            kind, vlen, kflag = (info >> 24) & 0x1F, info & 0xFFFF, info >> 31
            members: list[tuple[str, int, int]] = []
            if kind in (_STRUCT, _UNION):
                for i in range(vlen):
                    m_name, m_type, m_off = struct.unpack_from("<III", types, pos + 12 * i)
                    bits = m_off & 0xFFFFFF if kflag else m_off
                    members.append((self._str(m_name), m_type, bits))
            pos += _FIXED.get(kind, 0) + _PER_ITEM.get(kind, 0) * vlen
            name = self._str(name_off)
            self._types.append((kind, name, size_or_type, members))
            if kind in (_STRUCT, _UNION) and name and name not in self._by_name:
                self._by_name[name] = len(self._types) - 1

    def _str(self, off: int) -> str:
        end = self._strings.find(b"\0", off)
        return self._strings[off : end if end >= 0 else len(self._strings)].decode(errors="replace")

    def _resolve(self, tid: int) -> int:
        """Through typedefs and qualifiers to the type they name."""
        for _ in range(64):
            kind, _name, ref, _members = self._types[tid]
            if kind not in (_TYPEDEF, _VOLATILE, _CONST, _RESTRICT, _TYPE_TAG):
                return tid
            tid = ref
        raise BtfError(f"type {tid}: a chain of typedefs too long")

    def _member(self, tid: int, name: str) -> tuple[int, int] | None:
        """(byte offset, type id) of member `name`, looking into anonymous
        structs and unions too."""
        for m_name, m_type, bits in self._types[tid][3]:
            if m_name == name:
                return bits // 8, m_type
            if not m_name:
                inner = self._resolve(m_type)
                if self._types[inner][0] in (_STRUCT, _UNION):
                    found = self._member(inner, name)
                    if found is not None:
                        return bits // 8 + found[0], found[1]
        return None

    def offset(self, path: str) -> int:
        """Byte offset of a member path such as ``rq.cfs.avg.load_avg``
        (struct name, then members through embedded structs)."""
        struct_name, *members = path.split(".")
        tid = self._by_name.get(struct_name)
        if tid is None:
            raise BtfError(f"{path}: no struct {struct_name} in this BTF")
        total = 0
        for name in members:
            tid = self._resolve(tid)
            if self._types[tid][0] not in (_STRUCT, _UNION):
                raise BtfError(f"{path}: {name} is asked of a type that is not a struct")
            found = self._member(tid, name)
            if found is None:
                raise BtfError(f"{path}: no member {name}")
            off, tid = found
            total += off
        return total
