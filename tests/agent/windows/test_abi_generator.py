"""The ABI check catches drift: each deliberate mistake in a small hand-made declaration
makes the cross compile fail with an assertion that names the declaration.

Independent of the package's declaring modules: RECT, POINT, INPUT, IUnknown and a real
DXGI interface are declared here."""

from __future__ import annotations

import ctypes

import pytest

from rigway.agent.backends.windows._ctypes_types import (
    BOOL,
    DWORD,
    LONG,
    POINT,
    RECT,
    UINT,
    ULONG_PTR,
)
from rigway.agent.backends.windows.abi import IUNKNOWN, AbiDeclarations, ComInterface
from tests.agent.windows.abi_asserts import (
    CompileOutcome,
    compile_check,
    generate,
    missing_compilers,
    names_declared_by_headers,
)

pytestmark = pytest.mark.skipif(
    bool(missing_compilers()), reason=f"mingw-w64 cross compilers absent: {missing_compilers()}"
)

IDXGI_OBJECT = ComInterface(
    name="IDXGIObject",
    iid="{AEC22FB8-76F3-4639-9BE0-28EB43A67A2E}",
    parent="IUnknown",
    methods=("SetPrivateData", "SetPrivateDataInterface", "GetPrivateData", "GetParent"),
)
DUPLICATION_METHODS = (
    "GetDesc",
    "AcquireNextFrame",
    "GetFrameDirtyRects",
    "GetFrameMoveRects",
    "GetFramePointerShape",
    "MapDesktopSurface",
    "UnMapDesktopSurface",
    "ReleaseFrame",
)
DUPLICATION_IID = "{191CFAC3-A341-470D-B26E-A864F428319C}"
HEADERS = ("windows.h", "dxgi1_2.h")


class MOUSEINPUT(ctypes.Structure):
    _fields_ = (
        ("dx", LONG),
        ("dy", LONG),
        ("mouseData", DWORD),
        ("dwFlags", DWORD),
        ("time", DWORD),
        ("dwExtraInfo", ULONG_PTR),
    )


class _INPUT_UNION(ctypes.Union):
    _fields_ = (("mi", MOUSEINPUT),)


class INPUT(ctypes.Structure):
    _anonymous_ = ("u",)
    _fields_ = (("type", DWORD), ("u", _INPUT_UNION))


class DXGI_OUTDUPL_POINTER_POSITION(ctypes.Structure):
    _fields_ = (("Position", POINT), ("Visible", BOOL))


class DXGI_OUTDUPL_FRAME_INFO(ctypes.Structure):
    # LARGE_INTEGER is a union in C: declared as the 64-bit integer it holds.
    _fields_ = (
        ("LastPresentTime", ctypes.c_int64),
        ("LastMouseUpdateTime", ctypes.c_int64),
        ("AccumulatedFrames", UINT),
        ("RectsCoalesced", BOOL),
        ("ProtectedContentMaskedOut", BOOL),
        ("PointerPosition", DXGI_OUTDUPL_POINTER_POSITION),
        ("TotalMetadataBufferSize", UINT),
        ("PointerShapeBufferSize", UINT),
    )


def duplication(methods: tuple[str, ...], iid: str = DUPLICATION_IID) -> ComInterface:
    return ComInterface("IDXGIOutputDuplication", iid, "IDXGIObject", methods)


def compiled(declarations: AbiDeclarations) -> CompileOutcome:
    return compile_check(generate(declarations))


def test_declarations_matching_the_headers_compile_clean() -> None:
    declarations = AbiDeclarations(
        structs=(RECT, POINT, INPUT, DXGI_OUTDUPL_FRAME_INFO),
        constants={"DXGI_ERROR_ACCESS_LOST": 0x887A0026, "INPUT_MOUSE": 0, "E_FAIL": -2147467259},
        interfaces=(IUNKNOWN, IDXGI_OBJECT, duplication(DUPLICATION_METHODS)),
        headers=HEADERS,
    )
    outcome = compiled(declarations)
    assert outcome.compiled, outcome.errors
    assert outcome.failed_asserts == ()


def test_two_swapped_methods_fail_naming_both_slots() -> None:
    swapped = ("GetDesc", "GetFrameDirtyRects", "AcquireNextFrame", *DUPLICATION_METHODS[3:])
    declarations = AbiDeclarations(
        interfaces=(IUNKNOWN, IDXGI_OBJECT, duplication(swapped)), headers=HEADERS
    )
    outcome = compiled(declarations)
    assert not outcome.compiled
    assert set(outcome.failed_asserts) == {
        "vtable slot of IDXGIOutputDuplication::GetFrameDirtyRects == 8",
        "vtable slot of IDXGIOutputDuplication::AcquireNextFrame == 9",
    }


def test_field_of_the_wrong_width_fails_naming_the_struct() -> None:
    class POINT(ctypes.Structure):  # LONG x declared 64 bits wide
        _fields_ = (("x", ctypes.c_int64), ("y", LONG))

    outcome = compiled(AbiDeclarations(structs=(POINT,)))
    assert not outcome.compiled
    assert set(outcome.failed_asserts) == {
        "sizeof(POINT) == 16",
        "_Alignof(POINT) == 8",
        "offsetof(POINT.y) == 8",
        "sizeof(POINT.x) == 8",
    }


def test_narrow_last_field_hidden_by_padding_fails_naming_the_field() -> None:
    class POINT(ctypes.Structure):  # padding keeps the struct 8 bytes: only the field tells
        _fields_ = (("x", LONG), ("y", ctypes.c_int16))

    outcome = compiled(AbiDeclarations(structs=(POINT,)))
    assert outcome.failed_asserts == ("sizeof(POINT.y) == 2",)


def test_unsigned_field_where_c_is_signed_fails_naming_the_field() -> None:
    class POINT(ctypes.Structure):  # LONG y declared as a DWORD
        _fields_ = (("x", LONG), ("y", DWORD))

    outcome = compiled(AbiDeclarations(structs=(POINT,)))
    assert outcome.failed_asserts == ("POINT.y is unsigned",)


def test_wrong_constant_fails_naming_it() -> None:
    outcome = compiled(
        AbiDeclarations(constants={"DXGI_ERROR_ACCESS_LOST": 0x887A0027}, headers=HEADERS)
    )
    assert not outcome.compiled
    assert outcome.failed_asserts == ("DXGI_ERROR_ACCESS_LOST == 0x887a0027",)


def test_one_wrong_iid_byte_fails_naming_the_interface() -> None:
    wrong_last_byte = DUPLICATION_IID[:-3] + "9D}"
    declarations = AbiDeclarations(
        interfaces=(IUNKNOWN, IDXGI_OBJECT, duplication(DUPLICATION_METHODS, wrong_last_byte)),
        headers=HEADERS,
    )
    outcome = compiled(declarations)
    assert not outcome.compiled
    assert outcome.failed_asserts == (f"IID of IDXGIOutputDuplication == {wrong_last_byte}",)


def test_constant_wider_than_its_c_expression_fails_naming_it() -> None:
    # INPUT_MOUSE is an int: 1 << 32 has the same low 32 bits, and must not pass for it.
    outcome = compiled(AbiDeclarations(constants={"INPUT_MOUSE": 1 << 32}))
    assert outcome.failed_asserts == ("INPUT_MOUSE == 0x100000000",)


def test_method_the_header_lacks_fails_naming_it() -> None:
    misnamed = ("GetDescription", *DUPLICATION_METHODS[1:])
    declarations = AbiDeclarations(
        interfaces=(IUNKNOWN, IDXGI_OBJECT, duplication(misnamed)), headers=HEADERS
    )
    outcome = compiled(declarations)
    assert not outcome.compiled
    assert any("GetDescription" in error for error in outcome.errors), outcome.errors


def test_name_absent_from_headers_gets_no_assertion() -> None:
    automation = ComInterface(
        "IUIAutomation", "{30CBE57D-D9D0-452A-AB13-7AC5AC4825EE}", "IUnknown", ("CompareElements",)
    )
    declarations = AbiDeclarations(
        interfaces=(IUNKNOWN, automation),
        headers=("uiautomation.h",),
        absent_from_headers={"IUIAutomation": "mingw-w64 10 declares no UIA client interface"},
    )
    check = generate(declarations)
    assert not any("IUIAutomation" in item.message for item in check.c_asserts + check.cxx_asserts)
    assert compile_check(check).compiled


def test_exemption_of_a_name_the_headers_declare_is_found() -> None:
    declarations = AbiDeclarations(
        interfaces=(IUNKNOWN, IDXGI_OBJECT, duplication(DUPLICATION_METHODS)),
        headers=HEADERS,
        absent_from_headers={"IDXGIOutputDuplication": "wrongly believed absent"},
    )
    wanted = {"IDXGIOutputDuplication", "IUIAutomation"}
    assert names_declared_by_headers(wanted, generate(declarations)) == {"IDXGIOutputDuplication"}


def test_exemption_of_an_undeclared_name_is_refused() -> None:
    declarations = AbiDeclarations(absent_from_headers={"IUIAutomation": "stale"})
    with pytest.raises(ValueError, match="IUIAutomation"):
        generate(declarations)
