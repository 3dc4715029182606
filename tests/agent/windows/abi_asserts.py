"""Static assertions that hold the Windows ABI declarations to the mingw-w64 headers.

`generate` turns an `AbiDeclarations` into two translation units, and `compile_check`
compiles them with the mingw-w64 cross compilers (nothing is linked or run):

- C (`x86_64-w64-mingw32-gcc -std=c11`, with `COBJMACROS` so every COM interface has its
  C `<Name>Vtbl` struct): struct size and alignment; each field's offset, size and, for
  integers, signedness (anonymous unions are looked through, nested structs are followed
  to their leaves); each constant's value in the width of the C expression (an HRESULT
  may be declared as 0x887A0026 or as its negative int32); each method's vtable slot.
- C++ (`x86_64-w64-mingw32-g++ -std=c++17`) for interface ids and parents: a C `IID_x`
  is an `extern const GUID`, never a constant expression, while mingw-w64's
  `__CRT_UUID_DECL` makes `__uuidof(Interface)` constexpr from C++17 on, so the ids are
  compared with the headers' own values at compile time.

Every assertion's message names the declaration it checks, so a failure says what is
wrong. Names in `AbiDeclarations.absent_from_headers` get no assertion;
`names_declared_by_headers` lets the test prove the headers really lack them.
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rigway.agent.backends.windows.abi import (
    IUNKNOWN,
    AbiDeclarations,
    ComInterface,
    StructType,
    vtable_slots,
)

__all__ = [
    "CXX_COMPILER",
    "C_COMPILER",
    "AbiCheck",
    "CompileOutcome",
    "StaticAssert",
    "compile_check",
    "generate",
    "missing_compilers",
    "names_declared_by_headers",
]

C_COMPILER = "x86_64-w64-mingw32-gcc"
CXX_COMPILER = "x86_64-w64-mingw32-g++"
_C_FLAGS = ("-std=c11", "-Werror", "-fdiagnostics-plain-output", "-c", "-x", "c")
_CXX_FLAGS = ("-std=c++17", "-Werror", "-fdiagnostics-plain-output", "-c", "-x", "c++")

# mingw-w64 10's uiautomationcoreapi.h names a parameter `new`, which is not C++; the two
# headers uiautomation.h adds it to hold every UI Automation interface and id.
_CXX_HEADER_SUBSTITUTES: Mapping[str, tuple[str, ...]] = {
    "uiautomation.h": ("uiautomationcore.h", "uiautomationclient.h"),
}

# ctypes `_type_` codes of the integer scalars (c_char and c_bool are left out: their C
# counterparts' signedness says nothing about the ABI).
_SIGNED_CODES = frozenset("bhilq")
_UNSIGNED_CODES = frozenset("BHILQ")
_UINT64_MASK = (1 << 64) - 1

_C_PRELUDE = """\
#define COBJMACROS
#include <windows.h>
#include <unknwn.h>
{includes}
#include <stddef.h>

/* All bits of an integer expression's own width (one to eight bytes). */
#define RIGWAY_BITS_OF(x) (~0ULL >> (64 - 8 * sizeof(x)))
/* Whether member m of T has signedness `want`; true for what is not a plain integer (a
   pointer, an enum, a union such as LARGE_INTEGER: no signedness the ABI depends on).
   _Generic, not a cast of -1 to the member's type, so that any type compiles. */
#define RIGWAY_SIGNED(x) _Generic((x), \\
    signed char: 1, short: 1, int: 1, long: 1, long long: 1, \\
    unsigned char: 0, unsigned short: 0, unsigned int: 0, unsigned long: 0, \\
    unsigned long long: 0, default: -1)
#define RIGWAY_SIGN_IS(T, m, want) __builtin_choose_expr( \\
    __builtin_classify_type(((T *)0)->m) == 1, \\
    RIGWAY_SIGNED(((T *)0)->m) == (want) || RIGWAY_SIGNED(((T *)0)->m) == -1, 1)
"""

_CXX_PRELUDE = """\
#include <windows.h>
#include <unknwn.h>
{includes}

constexpr bool rigway_guid_is(const GUID &guid, unsigned long data1, unsigned short data2,
                              unsigned short data3, const unsigned char (&data4)[8]) {{
    bool same = guid.Data1 == data1 && guid.Data2 == data2 && guid.Data3 == data3;
    for (int index = 0; index < 8; ++index) {{
        same = same && guid.Data4[index] == data4[index];
    }}
    return same;
}}
"""


@dataclass(frozen=True, slots=True)
class StaticAssert:
    condition: str
    message: str

    def render(self, keyword: str) -> str:
        quoted = self.message.replace("\\", "\\\\").replace('"', '\\"')
        return f'{keyword}({self.condition}, "{quoted}");'


@dataclass(frozen=True, slots=True)
class AbiCheck:
    """The two translation units and the assertions in each."""

    c_asserts: tuple[StaticAssert, ...]
    cxx_asserts: tuple[StaticAssert, ...]
    c_source: str
    cxx_source: str

    @property
    def assert_count(self) -> int:
        return len(self.c_asserts) + len(self.cxx_asserts)


@dataclass(frozen=True, slots=True)
class CompileOutcome:
    returncodes: tuple[int, ...]
    # Messages of the static assertions that failed, as the compilers printed them.
    failed_asserts: tuple[str, ...]
    # Every diagnostic line with "error:" (failed assertions included), for reports.
    errors: tuple[str, ...]

    @property
    def compiled(self) -> bool:
        return all(code == 0 for code in self.returncodes)


def missing_compilers() -> list[str]:
    return [name for name in (C_COMPILER, CXX_COMPILER) if shutil.which(name) is None]


def generate(declarations: AbiDeclarations) -> AbiCheck:
    """The C and C++ sources that compile only if `declarations` match the headers."""
    skipped = set(declarations.absent_from_headers)
    declared_names = {s.__name__ for s in declarations.structs}
    declared_names |= set(declarations.constants)
    declared_names |= {i.name for i in declarations.interfaces}
    if stale := skipped - declared_names:
        raise ValueError(f"absent_from_headers names undeclared {sorted(stale)}")
    c_asserts: list[StaticAssert] = []
    for struct in declarations.structs:
        if struct.__name__ not in skipped:
            c_asserts.extend(_struct_asserts(struct, declarations.structs))
    for name, value in declarations.constants.items():
        if name not in skipped:
            c_asserts.append(_constant_assert(name, value))
    known = {IUNKNOWN.name: IUNKNOWN} | {i.name: i for i in declarations.interfaces}
    cxx_asserts: list[StaticAssert] = []
    for interface in declarations.interfaces:
        if interface.name not in skipped:
            c_asserts.extend(_vtable_asserts(interface, known))
            cxx_asserts.extend(_identity_asserts(interface))
    c_includes = _includes(declarations.headers, {})
    cxx_includes = _includes(declarations.headers, _CXX_HEADER_SUBSTITUTES)
    c_source = _source(_C_PRELUDE.format(includes=c_includes), c_asserts, "_Static_assert")
    cxx_source = _source(_CXX_PRELUDE.format(includes=cxx_includes), cxx_asserts, "static_assert")
    return AbiCheck(tuple(c_asserts), tuple(cxx_asserts), c_source, cxx_source)


def compile_check(check: AbiCheck) -> CompileOutcome:
    """Compiles both units at once (a translation unit with no assertion is skipped)."""
    with tempfile.TemporaryDirectory(prefix="rigway-abi-") as directory:
        units = [(C_COMPILER, _C_FLAGS, check.c_source, "abi.c", check.c_asserts)]
        units.append((CXX_COMPILER, _CXX_FLAGS, check.cxx_source, "abi.cpp", check.cxx_asserts))
        running: list[subprocess.Popen[str]] = []
        for compiler, flags, source, file_name, asserts in units:
            if not asserts:
                continue
            path = Path(directory) / file_name
            path.write_text(source)
            command = [compiler, *flags, "-o", os.devnull, str(path)]
            running.append(
                subprocess.Popen(
                    command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
                )
            )
        outputs = [process.communicate()[0] for process in running]
    errors = tuple(line for output in outputs for line in output.splitlines() if "error:" in line)
    failed = tuple(m.group("message") for line in errors if (m := _FAILED_ASSERT.search(line)))
    return CompileOutcome(tuple(p.returncode for p in running), failed, errors)


_FAILED_ASSERT = re.compile(r'static assertion failed: "?(?P<message>.*?)"?$')


def names_declared_by_headers(names: set[str], check: AbiCheck) -> set[str]:
    """Those of `names` that occur as a word in the preprocessed C unit (macros kept),
    that is, that the headers declare after all."""
    with tempfile.TemporaryDirectory(prefix="rigway-abi-") as directory:
        path = Path(directory) / "abi.c"
        path.write_text(check.c_source)
        command = [C_COMPILER, "-std=c11", "-E", "-dD", "-x", "c", str(path)]
        preprocessed = subprocess.run(command, capture_output=True, text=True, check=True).stdout
    words = set(re.findall(r"\w+", preprocessed))
    return names & words


def _source(prelude: str, asserts: list[StaticAssert], keyword: str) -> str:
    lines = [prelude, *(item.render(keyword) for item in asserts), ""]
    return "\n".join(lines)


def _includes(headers: tuple[str, ...], substitutes: Mapping[str, tuple[str, ...]]) -> str:
    seen: list[str] = []
    for header in headers:
        for actual in substitutes.get(header, (header,)):
            if actual not in seen and actual not in ("windows.h", "unknwn.h"):
                seen.append(actual)
    return "\n".join(f"#include <{header}>" for header in seen)


def _struct_asserts(struct: StructType, declared: tuple[StructType, ...]) -> Iterator[StaticAssert]:
    name = struct.__name__
    yield _equal(f"sizeof({name})", ctypes.sizeof(struct), f"sizeof({name})")
    yield _equal(f"_Alignof({name})", ctypes.alignment(struct), f"_Alignof({name})")
    for path, field_type, offset, size in _leaf_fields(struct, "", 0, declared):
        where = f"{name}.{path}"
        yield _equal(f"offsetof({name}, {path})", offset, f"offsetof({where})")
        yield _equal(f"sizeof((({name} *)0)->{path})", size, f"sizeof({where})")
        code = getattr(field_type, "_type_", None)
        if isinstance(code, str) and code in _SIGNED_CODES | _UNSIGNED_CODES:
            signed = code in _SIGNED_CODES
            yield StaticAssert(
                f"RIGWAY_SIGN_IS({name}, {path}, {int(signed)})",
                f"{where} is {'signed' if signed else 'unsigned'}",
            )


def _equal(expression: str, value: int, described: str) -> StaticAssert:
    return StaticAssert(f"{expression} == {value}", f"{described} == {value}")


def _leaf_fields(
    struct: StructType, prefix: str, base_offset: int, declared: tuple[StructType, ...]
) -> Iterator[tuple[str, object, int, int]]:
    """(C member designator, ctypes type, offset from the outermost struct, size) of each
    field: members of an anonymous union or struct under the names C gives them (the
    anonymous member itself has none), and the members of a nested struct that is not
    declared on its own (a declared one is checked whole, by its own assertions)."""
    anonymous = set(getattr(struct, "_anonymous_", ()))
    for field in struct._fields_:
        if len(field) != 2:
            raise ValueError(f"{struct.__name__}.{field[0]}: bit fields are not checked")
        name, field_type = field[0], field[1]
        descriptor = getattr(struct, name)
        offset = base_offset + descriptor.offset
        if not issubclass(field_type, (ctypes.Structure, ctypes.Union)):
            yield prefix + name, field_type, offset, descriptor.size
        elif name in anonymous:
            yield from _leaf_fields(field_type, prefix, offset, declared)
        else:
            yield prefix + name, field_type, offset, descriptor.size
            if field_type not in declared:
                yield from _leaf_fields(field_type, f"{prefix}{name}.", offset, declared)


def _constant_assert(name: str, value: int) -> StaticAssert:
    """`name`'s value in the width of its own C expression, so a signed and an unsigned
    spelling of the same bits agree (HRESULTs), and a value wider than the C expression
    fails instead of being truncated."""
    if not -(1 << 63) <= value <= _UINT64_MASK:
        raise ValueError(f"{name} = {value} does not fit in 64 bits")
    bits = f"RIGWAY_BITS_OF({name})"
    same_bits = (
        f"(((unsigned long long)({name}) & {bits}) == ({value & _UINT64_MASK:#x}ULL & {bits}))"
    )
    if value >= 0:
        fits, shown = f"({value:#x}ULL <= {bits})", f"{value:#x}"
    else:  # in range of the signed type of that width
        fits = f"({-value - 1:#x}ULL <= ({bits} >> 1))"
        shown = f"{value} ({value & 0xFFFFFFFF:#x} as 32 bits)"
    return StaticAssert(f"{same_bits} && {fits}", f"{name} == {shown}")


def _vtable_asserts(
    interface: ComInterface, known: Mapping[str, ComInterface]
) -> Iterator[StaticAssert]:
    try:
        slots = vtable_slots(interface, known)
    except KeyError as missing:
        raise ValueError(f"{interface.name}: ancestor {missing} is not declared") from None
    vtable = f"{interface.name}Vtbl"
    for method, slot in slots.items():
        yield StaticAssert(
            f"offsetof({vtable}, {method}) / sizeof(void *) == {slot}",
            f"vtable slot of {interface.name}::{method} == {slot}",
        )


def _identity_asserts(interface: ComInterface) -> Iterator[StaticAssert]:
    """The interface id, byte for byte, and the parent the interface derives from."""
    iid = uuid.UUID(interface.iid)
    data4 = ", ".join(f"{byte:#04x}" for byte in iid.bytes[8:])
    expected = f"{iid.time_low:#010x}, {iid.time_mid:#06x}, {iid.time_hi_version:#06x}, {{{data4}}}"
    yield StaticAssert(
        f"rigway_guid_is(__uuidof({interface.name}), {expected})",
        f"IID of {interface.name} == {interface.iid}",
    )
    if interface.parent is not None:
        yield StaticAssert(
            f"__is_base_of({interface.parent}, {interface.name})",
            f"{interface.name} derives from {interface.parent}",
        )
