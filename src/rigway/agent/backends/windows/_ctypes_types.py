"""Fixed-width Win32 scalar types and the few structs every area shares.

Pure: importable and tested on Linux. `ctypes.wintypes` is not used in any struct whose
size matters: on Linux x86-64 its DWORD, LONG and BOOL are 8 bytes (c_ulong/c_long),
on Windows 4, so a struct built from them would pass a Linux test and be wrong on the
platform it is for. Every layout here is checked against the mingw-w64 headers
(`abi.py`).
"""

from __future__ import annotations

import ctypes

from rigway.agent.backends.windows.abi import AbiDeclarations

__all__ = [
    "ABI",
    "BOOL",
    "BYTE",
    "DWORD",
    "HANDLE",
    "HRESULT_T",
    "INT",
    "LONG",
    "POINT",
    "RECT",
    "UINT",
    "ULONG_PTR",
    "WORD",
    "hresult",
    "utf16_name",
]

BYTE = ctypes.c_uint8
WORD = ctypes.c_uint16
DWORD = ctypes.c_uint32
UINT = ctypes.c_uint32
INT = ctypes.c_int32
LONG = ctypes.c_int32
BOOL = ctypes.c_int32
# HRESULT as a plain signed 32-bit value (ctypes.HRESULT exists only on Windows).
HRESULT_T = ctypes.c_int32
ULONG_PTR = ctypes.c_size_t
HANDLE = ctypes.c_void_p


def hresult(code: int) -> int:
    """An HRESULT written as its 32-bit pattern (0x887A0027) → the signed value C has, which
    is also what comtypes reports in `COMError.hresult`."""
    return ctypes.c_int32(code & 0xFFFFFFFF).value


def utf16_name(units: ctypes.Array[ctypes.c_uint16]) -> str:
    """A WCHAR[n] field (NUL-terminated UTF-16) as text."""
    raw = bytes(bytearray(b for unit in units for b in int(unit).to_bytes(2, "little")))
    return raw.decode("utf-16-le", errors="replace").split("\0", 1)[0]


class RECT(ctypes.Structure):
    _fields_ = (("left", LONG), ("top", LONG), ("right", LONG), ("bottom", LONG))


class POINT(ctypes.Structure):
    _fields_ = (("x", LONG), ("y", LONG))


ABI = AbiDeclarations(structs=(RECT, POINT), headers=("windows.h",))
