"""Layouts and values of the DXGI/D3D11 and GDI declarations, as they are on Windows x64.

The mingw-w64 compile check (the ABI test) is the authority; these pin the figures the
capture code relies on, on any machine."""

from __future__ import annotations

import ctypes

import pytest

from rigway.agent.backends.windows import dxgi_types as dx
from rigway.agent.backends.windows import gdi_types as gdi
from rigway.agent.backends.windows.abi import collect, vtable_slots


@pytest.mark.parametrize(
    ("struct", "size"),
    [
        (dx.DXGI_OUTDUPL_FRAME_INFO, 48),
        (dx.DXGI_OUTDUPL_MOVE_RECT, 24),
        (dx.DXGI_OUTDUPL_POINTER_POSITION, 12),
        (dx.DXGI_MODE_DESC, 28),
        (dx.DXGI_OUTDUPL_DESC, 36),
        (dx.DXGI_OUTPUT_DESC, 96),
        (dx.DXGI_MAPPED_RECT, 16),
        (dx.D3D11_TEXTURE2D_DESC, 44),
        (dx.LUID, 8),
        (gdi.BITMAPINFOHEADER, 40),
        (gdi.BITMAPINFO, 44),
        (gdi.MONITORINFO, 40),
    ],
)
def test_struct_size_matches_windows_x64(struct: type[ctypes.Structure], size: int) -> None:
    assert ctypes.sizeof(struct) == size


@pytest.mark.parametrize(
    ("struct", "field", "offset"),
    [
        (dx.DXGI_OUTDUPL_FRAME_INFO, "LastMouseUpdateTime", 8),
        (dx.DXGI_OUTDUPL_FRAME_INFO, "AccumulatedFrames", 16),
        (dx.DXGI_OUTDUPL_FRAME_INFO, "PointerPosition", 28),
        (dx.DXGI_OUTDUPL_FRAME_INFO, "TotalMetadataBufferSize", 40),
        (dx.DXGI_OUTDUPL_MOVE_RECT, "DestinationRect", 8),
        (dx.DXGI_OUTPUT_DESC, "DesktopCoordinates", 64),
        (dx.DXGI_OUTPUT_DESC, "Rotation", 84),
        (dx.DXGI_OUTPUT_DESC, "Monitor", 88),
        (dx.DXGI_MAPPED_RECT, "pBits", 8),
        (dx.DXGI_OUTDUPL_DESC, "Rotation", 28),
    ],
)
def test_field_offset_matches_windows_x64(
    struct: type[ctypes.Structure], field: str, offset: int
) -> None:
    assert getattr(struct, field).offset == offset


def test_hresult_pattern_becomes_signed_value() -> None:
    assert dx.DXGI_ERROR_WAIT_TIMEOUT == 0x887A0027 - 2**32
    assert dx.hresult(dx.DXGI_ERROR_WAIT_TIMEOUT) == dx.DXGI_ERROR_WAIT_TIMEOUT


def test_hresult_name_known_code_names_it() -> None:
    assert dx.hresult_name(0x887A0026) == "DXGI_ERROR_ACCESS_LOST (0x887A0026)"


def test_hresult_name_unknown_code_shows_pattern() -> None:
    assert dx.hresult_name(-1) == "0xFFFFFFFF"


def test_acquire_next_frame_slot_counts_every_ancestor() -> None:
    known = {interface.name: interface for interface in collect(("dxgi_types",)).interfaces}
    slots = vtable_slots(dx.IDXGIOutputDuplication, known)
    assert slots["AcquireNextFrame"] == 8
    assert vtable_slots(dx.IDXGIOutput1, known)["DuplicateOutput"] == 22
    assert vtable_slots(dx.ID3D11DeviceContext, known)["CopyResource"] == 47


def test_every_parent_is_declared() -> None:
    declared = collect(("_ctypes_types", "dxgi_types", "gdi_types"))
    names = {interface.name for interface in declared.interfaces}
    assert all(i.parent is None or i.parent in names for i in declared.interfaces)


def test_utf16_name_stops_at_nul() -> None:
    desc = dx.DXGI_OUTPUT_DESC()
    for index, char in enumerate("\\\\.\\DISPLAY1"):
        desc.DeviceName[index] = ord(char)
    assert dx.utf16_name(desc.DeviceName) == "\\\\.\\DISPLAY1"
