"""Binding for `capture.py`: `DxgiDuplication`, the `DuplicationPort` over DXGI 1.2
Desktop Duplication and a D3D11 staging texture, through comtypes.

Only calls: when to acquire, what to do on an error and how pixels are read out are
decided in `capture.py` and `dxgi_policy.py`. The comtypes interface classes are built
from `dxgi_types` (each `_methods_` in the order of the declaration, which the ABI test
checks against the headers); methods we never call are slots without argument types.

The objects here are used by one thread at a time: the first device and duplication
are made on the thread that opens the desktop, which then hands them to the screen
worker (`capture.py` says why that is harmless); each thread joins the multithreaded
COM apartment on first use.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from rigway.agent.backends.windows import _com
from rigway.agent.backends.windows import dxgi_types as decl
from rigway.agent.backends.windows._ctypes_types import RECT, UINT
from rigway.agent.backends.windows.abi import ComInterface
from rigway.agent.backends.windows.capture_ports import (
    DuplicationDesc,
    FrameInfo,
    MappedSurface,
)
from rigway.agent.backends.windows.dirty import surface_size
from rigway.agent.backends.windows.dxgi_policy import DUPLICATE_OUTPUT, HResultError
from rigway.agent.backends.windows.dxgi_types import (
    D3D11_CPU_ACCESS_READ,
    D3D11_SDK_VERSION,
    D3D11_TEXTURE2D_DESC,
    D3D11_USAGE_STAGING,
    D3D_DRIVER_TYPE_UNKNOWN,
    D3D_FEATURE_LEVEL_9_1,
    D3D_FEATURE_LEVEL_9_2,
    D3D_FEATURE_LEVEL_9_3,
    D3D_FEATURE_LEVEL_10_0,
    D3D_FEATURE_LEVEL_10_1,
    D3D_FEATURE_LEVEL_11_0,
    DXGI_ERROR_INVALID_CALL,
    DXGI_ERROR_MORE_DATA,
    DXGI_ERROR_NOT_FOUND,
    DXGI_ERROR_UNSUPPORTED,
    DXGI_FORMAT_B8G8R8A8_UNORM,
    DXGI_MAP_READ,
    DXGI_MAPPED_RECT,
    DXGI_OUTDUPL_DESC,
    DXGI_OUTDUPL_FRAME_INFO,
    DXGI_OUTDUPL_MOVE_RECT,
    DXGI_OUTPUT_DESC,
    WAIT_ABANDONED,
    utf16_name,
)
from rigway.agent.backends.windows.geometry import OutputPlacement

assert sys.platform == "win32"

__all__ = ["DxgiDuplication", "OutputChoice", "find_output"]

_FEATURE_LEVELS = (
    D3D_FEATURE_LEVEL_11_0,
    D3D_FEATURE_LEVEL_10_1,
    D3D_FEATURE_LEVEL_10_0,
    D3D_FEATURE_LEVEL_9_3,
    D3D_FEATURE_LEVEL_9_2,
    D3D_FEATURE_LEVEL_9_1,
)

_d3d11 = ctypes.WinDLL("d3d11", use_last_error=True)
_dxgi = ctypes.WinDLL("dxgi", use_last_error=True)

# (restype, argtypes) of the methods we call; every other slot is a placeholder.
_Signature = tuple[Any, tuple[Any, ...]]


class _Interfaces:
    """The comtypes classes, built once (comtypes must be imported on a COM thread)."""

    def __init__(self, comtypes: Any) -> None:
        self.comtypes = comtypes
        self.com_error: type[Exception] = comtypes.COMError
        self.classes: dict[str, Any] = {"IUnknown": comtypes.IUnknown}
        self._build_dxgi()
        self._build_d3d11()
        assert set(self.classes) >= {interface.name for interface in decl.INTERFACES}
        ptr = ctypes.POINTER
        self.create_factory = _dxgi.CreateDXGIFactory1
        self.create_factory.argtypes = (ptr(comtypes.GUID), ptr(ptr(self["IDXGIFactory1"])))
        self.create_factory.restype = ctypes.c_int32
        self.create_device = _d3d11.D3D11CreateDevice
        self.create_device.argtypes = (
            ptr(self["IDXGIAdapter"]),
            UINT,
            ctypes.c_void_p,
            UINT,
            ptr(UINT),
            UINT,
            UINT,
            ptr(ptr(self["ID3D11Device"])),
            ptr(UINT),
            ptr(ptr(self["ID3D11DeviceContext"])),
        )
        self.create_device.restype = ctypes.c_int32

    def _build_dxgi(self) -> None:
        hr, ptr = ctypes.HRESULT, ctypes.POINTER
        self._build(decl.IDXGIObject, {})
        self._build(decl.IDXGIDeviceSubObject, {})
        self._build(decl.IDXGIResource, {})
        self._build(
            decl.IDXGISurface,
            {"Map": (hr, (ptr(DXGI_MAPPED_RECT), UINT)), "Unmap": (hr, ())},
        )
        frame = ptr(ptr(self["IDXGIResource"]))
        self._build(
            decl.IDXGIOutputDuplication,
            {
                "GetDesc": (None, (ptr(DXGI_OUTDUPL_DESC),)),
                "AcquireNextFrame": (hr, (UINT, ptr(DXGI_OUTDUPL_FRAME_INFO), frame)),
                "GetFrameDirtyRects": (hr, (UINT, ptr(RECT), ptr(UINT))),
                "GetFrameMoveRects": (hr, (UINT, ptr(DXGI_OUTDUPL_MOVE_RECT), ptr(UINT))),
                "MapDesktopSurface": (hr, (ptr(DXGI_MAPPED_RECT),)),
                "UnMapDesktopSurface": (hr, ()),
                "ReleaseFrame": (hr, ()),
            },
        )
        duplication = ptr(ptr(self["IDXGIOutputDuplication"]))
        self._build(decl.IDXGIOutput, {"GetDesc": (hr, (ptr(DXGI_OUTPUT_DESC),))})
        device = ptr(self["IUnknown"])
        self._build(decl.IDXGIOutput1, {"DuplicateOutput": (hr, (device, duplication))})
        output = ptr(ptr(self["IDXGIOutput"]))
        self._build(decl.IDXGIAdapter, {"EnumOutputs": (hr, (UINT, output))})
        self._build(decl.IDXGIAdapter1, {})
        adapter = ptr(ptr(self["IDXGIAdapter1"]))
        self._build(decl.IDXGIFactory, {})
        self._build(decl.IDXGIFactory1, {"EnumAdapters1": (hr, (UINT, adapter))})

    def _build_d3d11(self) -> None:
        hr, ptr = ctypes.HRESULT, ctypes.POINTER
        self._build(decl.ID3D11DeviceChild, {})
        self._build(decl.ID3D11Resource, {})
        self._build(decl.ID3D11Texture2D, {"GetDesc": (None, (ptr(D3D11_TEXTURE2D_DESC),))})
        resource = ptr(self["ID3D11Resource"])
        self._build(decl.ID3D11DeviceContext, {"CopyResource": (None, (resource, resource))})
        texture = ptr(ptr(self["ID3D11Texture2D"]))
        create_texture = (ptr(D3D11_TEXTURE2D_DESC), ctypes.c_void_p, texture)
        self._build(decl.ID3D11Device, {"CreateTexture2D": (hr, create_texture)})

    def __getitem__(self, name: str) -> Any:
        return self.classes[name]

    def _build(self, declaration: ComInterface, signatures: dict[str, _Signature]) -> None:
        stray = set(signatures) - set(declaration.methods)
        assert not stray, f"{declaration.name} declares no {sorted(stray)}"
        assert declaration.parent is not None
        methods = []
        for name in declaration.methods:
            restype, argtypes = signatures.get(name, (ctypes.HRESULT, ()))
            methods.append(self.comtypes.STDMETHOD(restype, name, argtypes))
        namespace = {"_iid_": self.comtypes.GUID(declaration.iid), "_methods_": methods}
        built: Any = type(declaration.name, (self.classes[declaration.parent],), namespace)
        # The class's slots are the declaration's, in its order: the two cannot drift.
        assert [spec.name for spec in built._methods_] == list(declaration.methods)
        self.classes[declaration.name] = built


_interfaces: _Interfaces | None = None
_interfaces_lock = threading.Lock()


def _load() -> _Interfaces:
    global _interfaces
    comtypes = _com.import_comtypes()
    with _interfaces_lock:
        if _interfaces is None:
            _interfaces = _Interfaces(comtypes)
        return _interfaces


@dataclass(frozen=True, slots=True)
class OutputChoice:
    """An output attached to the desktop, as enumeration found it."""

    index: int
    adapter: Any
    output: Any
    device_name: str
    monitor: int
    placement: OutputPlacement


def find_output(output_index: int | None) -> list[OutputChoice]:
    """Every (adapter, output) pair showing the chosen monitor, first the one to try first.

    `output_index` counts the outputs attached to the desktop across all adapters, in
    enumeration order; None is the primary monitor (the one at the virtual-screen
    origin). Hybrid-GPU machines can list a monitor under more than one adapter, and
    only the one that scans it out can duplicate it, so every pair is returned.
    Raises `HResultError(DXGI_ERROR_NOT_FOUND)` when there is no such output."""
    com = _load()
    outputs = _enumerate_outputs(com)
    if output_index is None:
        chosen = next((o for o in outputs if (o.placement.left, o.placement.top) == (0, 0)), None)
    else:
        chosen = outputs[output_index] if 0 <= output_index < len(outputs) else None
    if chosen is None:
        raise HResultError(DXGI_ERROR_NOT_FOUND, f"finding output {output_index}")
    same = [o for o in outputs if o.monitor == chosen.monitor and o is not chosen]
    return [chosen, *same]


def _enumerate_outputs(com: _Interfaces) -> list[OutputChoice]:
    factory = ctypes.POINTER(com["IDXGIFactory1"])()
    iid = com.comtypes.GUID(decl.IDXGIFactory1.iid)
    result = com.create_factory(ctypes.byref(iid), ctypes.byref(factory))
    if result < 0:
        raise HResultError(result, "CreateDXGIFactory1")
    found: list[OutputChoice] = []
    for adapter in _enumerate(com, factory.EnumAdapters1, com["IDXGIAdapter1"], "EnumAdapters1"):
        for output in _enumerate(com, adapter.EnumOutputs, com["IDXGIOutput"], "EnumOutputs"):
            desc = DXGI_OUTPUT_DESC()
            _call(com, "IDXGIOutput::GetDesc", output.GetDesc, ctypes.byref(desc))
            if not desc.AttachedToDesktop:
                continue
            rect = desc.DesktopCoordinates
            placement = OutputPlacement(
                rect.left, rect.top, rect.right - rect.left, rect.bottom - rect.top
            )
            found.append(
                OutputChoice(
                    index=len(found),
                    adapter=adapter,
                    output=output,
                    device_name=utf16_name(desc.DeviceName),
                    monitor=int(desc.Monitor or 0),
                    placement=placement,
                )
            )
    return found


def _enumerate(
    com: _Interfaces, method: Callable[..., Any], interface: Any, name: str
) -> list[Any]:
    items: list[Any] = []
    while True:
        item = ctypes.POINTER(interface)()
        try:
            _call(com, name, method, len(items), ctypes.byref(item))
        except HResultError as error:
            if error.hresult == DXGI_ERROR_NOT_FOUND:
                return items
            raise
        items.append(item)


def _call(com: _Interfaces, operation: str, method: Callable[..., Any], *args: Any) -> Any:
    """A COM method call; a failing HRESULT raises `HResultError`."""
    try:
        return method(*args)
    except com.com_error as error:
        raise HResultError(int(getattr(error, "hresult", error.args[0])), operation) from error


class DxgiDuplication:
    """`DuplicationPort` for one output: its device, duplication and staging texture."""

    def __init__(self, output_index: int | None = None) -> None:
        if sys.platform != "win32":
            raise OSError("DXGI exists only on Windows")
        self._com = _load()
        self._output_index = output_index
        self._device: Any = None
        self._context: Any = None
        self._duplication: Any = None
        self._frame: Any = None
        self._staging: Any = None
        self._staging_surface: Any = None
        self._staging_size = (0, 0)
        self._desc: DuplicationDesc | None = None

    # -- life -----------------------------------------------------------------------------
    def create(self) -> DuplicationDesc:
        _com.ensure_mta()
        self._release()
        candidates = find_output(self._output_index)
        # Only the HRESULT and operation of the first failure are kept: the exception's
        # traceback holds `_open`'s frame, whose locals are the device and duplication
        # just made, and raising a kept exception again from here would tie that frame
        # into a cycle with this one; freed only by the cycle collector, the old
        # duplication makes every later DuplicateOutput fail with E_INVALIDARG.
        first_failure: tuple[int, str] | None = None
        for choice in candidates:
            try:
                return self._open(choice)
            except HResultError as error:
                if first_failure is None:
                    first_failure = (error.hresult, error.operation)
            # Past the handler the exception and its frames are gone; ours go too.
            self._release()
        assert first_failure is not None
        raise HResultError(*first_failure)

    def _open(self, choice: OutputChoice) -> DuplicationDesc:
        com = self._com
        device = ctypes.POINTER(com["ID3D11Device"])()
        context = ctypes.POINTER(com["ID3D11DeviceContext"])()
        levels = (UINT * len(_FEATURE_LEVELS))(*_FEATURE_LEVELS)
        obtained = UINT()
        # An explicit adapter requires D3D_DRIVER_TYPE_UNKNOWN, and duplication requires
        # the device to be on the adapter that owns the output.
        result = com.create_device(
            choice.adapter,
            D3D_DRIVER_TYPE_UNKNOWN,
            None,
            0,
            levels,
            len(_FEATURE_LEVELS),
            D3D11_SDK_VERSION,
            ctypes.byref(device),
            ctypes.byref(obtained),
            ctypes.byref(context),
        )
        if result < 0:
            raise HResultError(result, f"D3D11CreateDevice on {choice.device_name}")
        self._device, self._context = device, context
        output1 = self._query(choice.output, "IDXGIOutput1")
        duplication = ctypes.POINTER(com["IDXGIOutputDuplication"])()
        _call(com, DUPLICATE_OUTPUT, output1.DuplicateOutput, device, ctypes.byref(duplication))
        self._duplication = duplication
        desc = DXGI_OUTDUPL_DESC()
        duplication.GetDesc(ctypes.byref(desc))
        self._desc = DuplicationDesc(
            placement=choice.placement,
            rotation=int(desc.Rotation),
            desktop_image_in_system_memory=bool(desc.DesktopImageInSystemMemory),
        )
        return self._desc

    def close(self) -> None:
        self._release()

    def _release(self) -> None:
        # comtypes releases an interface when its last pointer object goes; the frame
        # first, then what depends on the device, then the device.
        self._frame = None
        self._staging_surface = None
        self._staging = None
        self._staging_size = (0, 0)
        self._duplication = None
        self._context = None
        self._device = None

    # -- frames ---------------------------------------------------------------------------
    def acquire_next_frame(self, timeout_ms: int) -> FrameInfo:
        _com.ensure_mta()
        info = DXGI_OUTDUPL_FRAME_INFO()
        resource = ctypes.POINTER(self._com["IDXGIResource"])()
        result = _call(
            self._com,
            "AcquireNextFrame",
            self._live().AcquireNextFrame,
            timeout_ms,
            ctypes.byref(info),
            ctypes.byref(resource),
        )
        if result == WAIT_ABANDONED:
            # A success code to COM, but the desktop's keyed mutex was abandoned (a
            # fullscreen game): no frame to trust.
            raise HResultError(WAIT_ABANDONED, "AcquireNextFrame")
        self._frame = resource
        return FrameInfo(
            last_present_time=int(info.LastPresentTime),
            total_metadata_bytes=int(info.TotalMetadataBufferSize),
            accumulated_frames=int(info.AccumulatedFrames),
            protected_content_masked_out=bool(info.ProtectedContentMaskedOut),
        )

    def frame_move_rects(self, capacity_bytes: int) -> bytes:
        method = self._live().GetFrameMoveRects
        return self._metadata("GetFrameMoveRects", method, DXGI_OUTDUPL_MOVE_RECT, capacity_bytes)

    def frame_dirty_rects(self, capacity_bytes: int) -> bytes:
        method = self._live().GetFrameDirtyRects
        return self._metadata("GetFrameDirtyRects", method, RECT, capacity_bytes)

    def _metadata(
        self, operation: str, method: Callable[..., Any], record: Any, capacity_bytes: int
    ) -> bytes:
        buffer = (ctypes.c_uint8 * capacity_bytes)()
        required = UINT()
        records = ctypes.cast(buffer, ctypes.POINTER(record))
        try:
            _call(self._com, operation, method, capacity_bytes, records, ctypes.byref(required))
        except HResultError as error:
            if error.hresult != DXGI_ERROR_MORE_DATA:
                raise
            raise HResultError(
                error.hresult, operation, required_bytes=int(required.value)
            ) from error
        return bytes(buffer[: min(int(required.value), capacity_bytes)])

    def copy_frame_to_staging(self) -> None:
        if self._frame is None:
            raise HResultError(DXGI_ERROR_NOT_FOUND, "copying a frame none was acquired")
        texture = self._query(self._frame, "ID3D11Texture2D")
        desc = D3D11_TEXTURE2D_DESC()
        texture.GetDesc(ctypes.byref(desc))
        if desc.Format != DXGI_FORMAT_B8G8R8A8_UNORM:
            raise HResultError(DXGI_ERROR_UNSUPPORTED, f"frame format {desc.Format}")
        self._ensure_staging(int(desc.Width), int(desc.Height))
        self._context.CopyResource(self._staging, texture)

    def _ensure_staging(self, width: int, height: int) -> None:
        if self._staging is not None and self._staging_size == (width, height):
            return
        self._staging_surface = None
        self._staging = None
        desc = D3D11_TEXTURE2D_DESC()
        desc.Width, desc.Height = width, height
        desc.MipLevels = desc.ArraySize = 1
        desc.Format = DXGI_FORMAT_B8G8R8A8_UNORM
        desc.SampleDesc.Count, desc.SampleDesc.Quality = 1, 0
        desc.Usage = D3D11_USAGE_STAGING
        desc.CPUAccessFlags = D3D11_CPU_ACCESS_READ
        staging = ctypes.POINTER(self._com["ID3D11Texture2D"])()
        _call(
            self._com,
            "CreateTexture2D",
            self._device.CreateTexture2D,
            ctypes.byref(desc),
            None,
            ctypes.byref(staging),
        )
        self._staging = staging
        self._staging_surface = self._query(staging, "IDXGISurface")
        self._staging_size = (width, height)

    def release_frame(self) -> None:
        self._frame = None
        _call(self._com, "ReleaseFrame", self._live().ReleaseFrame)

    def map_desktop_surface(self) -> MappedSurface:
        mapped = DXGI_MAPPED_RECT()
        _call(self._com, "MapDesktopSurface", self._live().MapDesktopSurface, ctypes.byref(mapped))
        desc = self._desc
        assert desc is not None
        width, height = surface_size(desc.placement.width, desc.placement.height, desc.rotation)
        return _mapped(mapped, width, height)

    def unmap_desktop_surface(self) -> None:
        _call(self._com, "UnMapDesktopSurface", self._live().UnMapDesktopSurface)

    def map_staging(self) -> MappedSurface:
        if self._staging_surface is None:
            raise HResultError(DXGI_ERROR_NOT_FOUND, "mapping a staging texture never filled")
        mapped = DXGI_MAPPED_RECT()
        _call(
            self._com,
            "IDXGISurface::Map",
            self._staging_surface.Map,
            ctypes.byref(mapped),
            DXGI_MAP_READ,
        )
        return _mapped(mapped, *self._staging_size)

    def unmap_staging(self) -> None:
        if self._staging_surface is not None:
            _call(self._com, "IDXGISurface::Unmap", self._staging_surface.Unmap)

    # -- inside ---------------------------------------------------------------------------
    def _live(self) -> Any:
        if self._duplication is None:
            # DXGI's own answer to a call out of order; the capture recreates.
            raise HResultError(DXGI_ERROR_INVALID_CALL, "no duplication")
        return self._duplication

    def _query(self, pointer: Any, interface: str) -> Any:
        return _call(
            self._com, f"QueryInterface({interface})", pointer.QueryInterface, self._com[interface]
        )


def _mapped(mapped: DXGI_MAPPED_RECT, width: int, height: int) -> MappedSurface:
    pitch = int(mapped.Pitch)
    if not mapped.pBits or pitch < width * 4:
        raise HResultError(DXGI_ERROR_UNSUPPORTED, f"mapped surface with pitch {pitch}")
    # A view over the mapping: the capture copies it out before the unmap.
    rows = (ctypes.c_uint8 * (pitch * height)).from_address(mapped.pBits)
    data = np.ctypeslib.as_array(rows)
    return MappedSurface(data=data, pitch=pitch, width=width, height=height)
