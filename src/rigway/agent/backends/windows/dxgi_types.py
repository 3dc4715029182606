"""The binary interface of DXGI 1.2 Desktop Duplication and the bits of D3D11 it needs.

Pure: importable and tested on Linux. Structs use the fixed-width types of
`_ctypes_types` (a LARGE_INTEGER is a c_int64, a WCHAR a c_uint16: ctypes' c_wchar is
4 bytes on Linux). HRESULTs are kept as C sees them, signed 32-bit values, which is also
what comtypes reports in `COMError.hresult`. Each COM interface lists its own methods
in vtable order, unused ones included, up to the last one `_dxgi.py` calls; the binding
builds its comtypes classes from these, and the ABI test checks them against the
mingw-w64 headers.
"""

from __future__ import annotations

import ctypes

from rigway.agent.backends.windows._ctypes_types import (
    BOOL,
    DWORD,
    LONG,
    POINT,
    RECT,
    UINT,
    hresult,
    utf16_name,
)
from rigway.agent.backends.windows.abi import AbiDeclarations, ComInterface

__all__ = [
    "ABI",
    "D3D11_TEXTURE2D_DESC",
    "DXGI_MAPPED_RECT",
    "DXGI_MODE_DESC",
    "DXGI_OUTDUPL_DESC",
    "DXGI_OUTDUPL_FRAME_INFO",
    "DXGI_OUTDUPL_MOVE_RECT",
    "DXGI_OUTDUPL_POINTER_POSITION",
    "DXGI_OUTPUT_DESC",
    "DXGI_RATIONAL",
    "DXGI_SAMPLE_DESC",
    "HRESULTS",
    "INTERFACES",
    "LUID",
    "hresult",
    "hresult_name",
    "utf16_name",
]


# --- HRESULTs (winerror.h; WAIT_ABANDONED from winbase.h) ------------------------------
S_OK = 0
DXGI_ERROR_INVALID_CALL = hresult(0x887A0001)
DXGI_ERROR_NOT_FOUND = hresult(0x887A0002)
DXGI_ERROR_MORE_DATA = hresult(0x887A0003)
DXGI_ERROR_UNSUPPORTED = hresult(0x887A0004)
DXGI_ERROR_DEVICE_REMOVED = hresult(0x887A0005)
DXGI_ERROR_DEVICE_RESET = hresult(0x887A0007)
DXGI_ERROR_NOT_CURRENTLY_AVAILABLE = hresult(0x887A0022)
DXGI_ERROR_ACCESS_LOST = hresult(0x887A0026)
DXGI_ERROR_WAIT_TIMEOUT = hresult(0x887A0027)
DXGI_ERROR_SESSION_DISCONNECTED = hresult(0x887A0028)
E_ACCESSDENIED = hresult(0x80070005)
E_INVALIDARG = hresult(0x80070057)
# A keyed mutex abandoned by a fullscreen game; AcquireNextFrame returns the Win32
# wait code itself, not an HRESULT built from it.
WAIT_ABANDONED = 0x00000080

HRESULTS: dict[str, int] = {
    "DXGI_ERROR_INVALID_CALL": DXGI_ERROR_INVALID_CALL,
    "DXGI_ERROR_NOT_FOUND": DXGI_ERROR_NOT_FOUND,
    "DXGI_ERROR_MORE_DATA": DXGI_ERROR_MORE_DATA,
    "DXGI_ERROR_UNSUPPORTED": DXGI_ERROR_UNSUPPORTED,
    "DXGI_ERROR_DEVICE_REMOVED": DXGI_ERROR_DEVICE_REMOVED,
    "DXGI_ERROR_DEVICE_RESET": DXGI_ERROR_DEVICE_RESET,
    "DXGI_ERROR_NOT_CURRENTLY_AVAILABLE": DXGI_ERROR_NOT_CURRENTLY_AVAILABLE,
    "DXGI_ERROR_ACCESS_LOST": DXGI_ERROR_ACCESS_LOST,
    "DXGI_ERROR_WAIT_TIMEOUT": DXGI_ERROR_WAIT_TIMEOUT,
    "DXGI_ERROR_SESSION_DISCONNECTED": DXGI_ERROR_SESSION_DISCONNECTED,
    "E_ACCESSDENIED": E_ACCESSDENIED,
    "E_INVALIDARG": E_INVALIDARG,
    "WAIT_ABANDONED": WAIT_ABANDONED,
}


def hresult_name(code: int) -> str:
    """ "DXGI_ERROR_ACCESS_LOST (0x887A0026)" for the known ones, the hex pattern otherwise."""
    signed = hresult(code)
    pattern = f"0x{signed & 0xFFFFFFFF:08X}"
    for name, value in HRESULTS.items():
        if value == signed:
            return f"{name} ({pattern})"
    return pattern


# --- enumerators and flags -------------------------------------------------------------
DXGI_FORMAT_B8G8R8A8_UNORM = 0x57  # dxgiformat.h
DXGI_MODE_ROTATION_UNSPECIFIED = 0  # dxgitype.h
DXGI_MODE_ROTATION_IDENTITY = 1
DXGI_MODE_ROTATION_ROTATE90 = 2
DXGI_MODE_ROTATION_ROTATE180 = 3
DXGI_MODE_ROTATION_ROTATE270 = 4
DXGI_MAP_READ = 0x1  # dxgi.h
D3D11_USAGE_STAGING = 3  # d3d11.h
D3D11_CPU_ACCESS_READ = 0x20000
D3D11_SDK_VERSION = 7
D3D_DRIVER_TYPE_UNKNOWN = 0  # d3dcommon.h
D3D_FEATURE_LEVEL_9_1 = 0x9100
D3D_FEATURE_LEVEL_9_2 = 0x9200
D3D_FEATURE_LEVEL_9_3 = 0x9300
D3D_FEATURE_LEVEL_10_0 = 0xA000
D3D_FEATURE_LEVEL_10_1 = 0xA100
D3D_FEATURE_LEVEL_11_0 = 0xB000

_FLAGS: dict[str, int] = {
    "DXGI_FORMAT_B8G8R8A8_UNORM": DXGI_FORMAT_B8G8R8A8_UNORM,
    "DXGI_MODE_ROTATION_UNSPECIFIED": DXGI_MODE_ROTATION_UNSPECIFIED,
    "DXGI_MODE_ROTATION_IDENTITY": DXGI_MODE_ROTATION_IDENTITY,
    "DXGI_MODE_ROTATION_ROTATE90": DXGI_MODE_ROTATION_ROTATE90,
    "DXGI_MODE_ROTATION_ROTATE180": DXGI_MODE_ROTATION_ROTATE180,
    "DXGI_MODE_ROTATION_ROTATE270": DXGI_MODE_ROTATION_ROTATE270,
    "DXGI_MAP_READ": DXGI_MAP_READ,
    "D3D11_USAGE_STAGING": D3D11_USAGE_STAGING,
    "D3D11_CPU_ACCESS_READ": D3D11_CPU_ACCESS_READ,
    "D3D11_SDK_VERSION": D3D11_SDK_VERSION,
    "D3D_DRIVER_TYPE_UNKNOWN": D3D_DRIVER_TYPE_UNKNOWN,
    "D3D_FEATURE_LEVEL_9_1": D3D_FEATURE_LEVEL_9_1,
    "D3D_FEATURE_LEVEL_9_2": D3D_FEATURE_LEVEL_9_2,
    "D3D_FEATURE_LEVEL_9_3": D3D_FEATURE_LEVEL_9_3,
    "D3D_FEATURE_LEVEL_10_0": D3D_FEATURE_LEVEL_10_0,
    "D3D_FEATURE_LEVEL_10_1": D3D_FEATURE_LEVEL_10_1,
    "D3D_FEATURE_LEVEL_11_0": D3D_FEATURE_LEVEL_11_0,
}


# --- structs ---------------------------------------------------------------------------
class LUID(ctypes.Structure):
    _fields_ = (("LowPart", DWORD), ("HighPart", LONG))


class DXGI_RATIONAL(ctypes.Structure):
    _fields_ = (("Numerator", UINT), ("Denominator", UINT))


class DXGI_MODE_DESC(ctypes.Structure):
    # Format, ScanlineOrdering and Scaling are C enums: 4 bytes.
    _fields_ = (
        ("Width", UINT),
        ("Height", UINT),
        ("RefreshRate", DXGI_RATIONAL),
        ("Format", UINT),
        ("ScanlineOrdering", UINT),
        ("Scaling", UINT),
    )


class DXGI_OUTDUPL_DESC(ctypes.Structure):
    _fields_ = (
        ("ModeDesc", DXGI_MODE_DESC),
        ("Rotation", UINT),
        ("DesktopImageInSystemMemory", BOOL),
    )


class DXGI_OUTDUPL_POINTER_POSITION(ctypes.Structure):
    _fields_ = (("Position", POINT), ("Visible", BOOL))


class DXGI_OUTDUPL_FRAME_INFO(ctypes.Structure):
    # LARGE_INTEGER is a union whose QuadPart is a 64-bit integer; it sets the 8-byte
    # alignment that makes this struct 48 bytes.
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


class DXGI_OUTDUPL_MOVE_RECT(ctypes.Structure):
    _fields_ = (("SourcePoint", POINT), ("DestinationRect", RECT))


class DXGI_OUTPUT_DESC(ctypes.Structure):
    _fields_ = (
        ("DeviceName", ctypes.c_uint16 * 32),
        ("DesktopCoordinates", RECT),
        ("AttachedToDesktop", BOOL),
        ("Rotation", UINT),
        ("Monitor", ctypes.c_void_p),
    )


class DXGI_MAPPED_RECT(ctypes.Structure):
    _fields_ = (("Pitch", ctypes.c_int32), ("pBits", ctypes.c_void_p))


class DXGI_SAMPLE_DESC(ctypes.Structure):
    _fields_ = (("Count", UINT), ("Quality", UINT))


class D3D11_TEXTURE2D_DESC(ctypes.Structure):
    _fields_ = (
        ("Width", UINT),
        ("Height", UINT),
        ("MipLevels", UINT),
        ("ArraySize", UINT),
        ("Format", UINT),
        ("SampleDesc", DXGI_SAMPLE_DESC),
        ("Usage", UINT),
        ("BindFlags", UINT),
        ("CPUAccessFlags", UINT),
        ("MiscFlags", UINT),
    )


# --- COM interfaces --------------------------------------------------------------------
IDXGIObject = ComInterface(
    "IDXGIObject",
    "{AEC22FB8-76F3-4639-9BE0-28EB43A67A2E}",
    "IUnknown",
    ("SetPrivateData", "SetPrivateDataInterface", "GetPrivateData", "GetParent"),
)
IDXGIFactory = ComInterface(
    "IDXGIFactory",
    "{7B7166EC-21C7-44AE-B21A-C9AE321AE369}",
    "IDXGIObject",
    (
        "EnumAdapters",
        "MakeWindowAssociation",
        "GetWindowAssociation",
        "CreateSwapChain",
        "CreateSoftwareAdapter",
    ),
)
IDXGIFactory1 = ComInterface(
    "IDXGIFactory1", "{770AAE78-F26F-4DBA-A829-253C83D1B387}", "IDXGIFactory", ("EnumAdapters1",)
)
IDXGIAdapter = ComInterface(
    "IDXGIAdapter",
    "{2411E7E1-12AC-4CCF-BD14-9798E8534DC0}",
    "IDXGIObject",
    ("EnumOutputs", "GetDesc", "CheckInterfaceSupport"),
)
IDXGIAdapter1 = ComInterface(
    "IDXGIAdapter1", "{29038F61-3839-4626-91FD-086879011A05}", "IDXGIAdapter", ("GetDesc1",)
)
IDXGIOutput = ComInterface(
    "IDXGIOutput",
    "{AE02EEDB-C735-4690-8D52-5A8DC20213AA}",
    "IDXGIObject",
    (
        "GetDesc",
        "GetDisplayModeList",
        "FindClosestMatchingMode",
        "WaitForVBlank",
        "TakeOwnership",
        "ReleaseOwnership",
        "GetGammaControlCapabilities",
        "SetGammaControl",
        "GetGammaControl",
        "SetDisplaySurface",
        "GetDisplaySurfaceData",
        "GetFrameStatistics",
    ),
)
IDXGIOutput1 = ComInterface(
    "IDXGIOutput1",
    "{00CDDEA8-939B-4B83-A340-A685226666CC}",
    "IDXGIOutput",
    (
        "GetDisplayModeList1",
        "FindClosestMatchingMode1",
        "GetDisplaySurfaceData1",
        "DuplicateOutput",
    ),
)
IDXGIOutputDuplication = ComInterface(
    "IDXGIOutputDuplication",
    "{191CFAC3-A341-470D-B26E-A864F428319C}",
    "IDXGIObject",
    (
        "GetDesc",
        "AcquireNextFrame",
        "GetFrameDirtyRects",
        "GetFrameMoveRects",
        "GetFramePointerShape",
        "MapDesktopSurface",
        "UnMapDesktopSurface",
        "ReleaseFrame",
    ),
)
IDXGIDeviceSubObject = ComInterface(
    "IDXGIDeviceSubObject", "{3D3E0379-F9DE-4D58-BB6C-18D62992F1A6}", "IDXGIObject", ("GetDevice",)
)
IDXGIResource = ComInterface(
    "IDXGIResource",
    "{035F3AB4-482E-4E50-B41F-8A7F8BD8960B}",
    "IDXGIDeviceSubObject",
    ("GetSharedHandle", "GetUsage", "SetEvictionPriority", "GetEvictionPriority"),
)
IDXGISurface = ComInterface(
    "IDXGISurface",
    "{CAFCB56C-6AC3-4889-BF47-9E23BBD260EC}",
    "IDXGIDeviceSubObject",
    ("GetDesc", "Map", "Unmap"),
)
ID3D11DeviceChild = ComInterface(
    "ID3D11DeviceChild",
    "{1841E5C8-16B0-489B-BCC8-44CFB0D5DEAE}",
    "IUnknown",
    ("GetDevice", "GetPrivateData", "SetPrivateData", "SetPrivateDataInterface"),
)
ID3D11Resource = ComInterface(
    "ID3D11Resource",
    "{DC8E63F3-D12B-4952-B47B-5E45026A862D}",
    "ID3D11DeviceChild",
    ("GetType", "SetEvictionPriority", "GetEvictionPriority"),
)
ID3D11Texture2D = ComInterface(
    "ID3D11Texture2D", "{6F15AAF2-D208-4E89-9AB4-489535D34F9C}", "ID3D11Resource", ("GetDesc",)
)
ID3D11Device = ComInterface(
    "ID3D11Device",
    "{DB6F6DDB-AC77-4E88-8253-819DF9BBF140}",
    "IUnknown",
    ("CreateBuffer", "CreateTexture1D", "CreateTexture2D"),
)
# Up to CopyResource: mapping goes through IDXGISurface::Map, so the context's own Map
# (and the rest of its very long vtable) is never called.
ID3D11DeviceContext = ComInterface(
    "ID3D11DeviceContext",
    "{C0BFA96C-E089-44FB-8EAF-26F8796190DA}",
    "ID3D11DeviceChild",
    (
        *("VSSetConstantBuffers", "PSSetShaderResources", "PSSetShader", "PSSetSamplers"),
        *("VSSetShader", "DrawIndexed", "Draw", "Map", "Unmap", "PSSetConstantBuffers"),
        *("IASetInputLayout", "IASetVertexBuffers", "IASetIndexBuffer"),
        *("DrawIndexedInstanced", "DrawInstanced", "GSSetConstantBuffers", "GSSetShader"),
        *("IASetPrimitiveTopology", "VSSetShaderResources", "VSSetSamplers", "Begin", "End"),
        *("GetData", "SetPredication", "GSSetShaderResources", "GSSetSamplers"),
        *("OMSetRenderTargets", "OMSetRenderTargetsAndUnorderedAccessViews"),
        *("OMSetBlendState", "OMSetDepthStencilState", "SOSetTargets", "DrawAuto"),
        *("DrawIndexedInstancedIndirect", "DrawInstancedIndirect", "Dispatch"),
        *("DispatchIndirect", "RSSetState", "RSSetViewports", "RSSetScissorRects"),
        *("CopySubresourceRegion", "CopyResource"),
    ),
)

INTERFACES: tuple[ComInterface, ...] = (
    IDXGIObject,
    IDXGIFactory,
    IDXGIFactory1,
    IDXGIAdapter,
    IDXGIAdapter1,
    IDXGIOutput,
    IDXGIOutput1,
    IDXGIOutputDuplication,
    IDXGIDeviceSubObject,
    IDXGIResource,
    IDXGISurface,
    ID3D11DeviceChild,
    ID3D11Resource,
    ID3D11Texture2D,
    ID3D11Device,
    ID3D11DeviceContext,
)

ABI = AbiDeclarations(
    structs=(
        LUID,
        DXGI_RATIONAL,
        DXGI_MODE_DESC,
        DXGI_OUTDUPL_DESC,
        DXGI_OUTDUPL_POINTER_POSITION,
        DXGI_OUTDUPL_FRAME_INFO,
        DXGI_OUTDUPL_MOVE_RECT,
        DXGI_OUTPUT_DESC,
        DXGI_MAPPED_RECT,
        DXGI_SAMPLE_DESC,
        D3D11_TEXTURE2D_DESC,
    ),
    constants={**HRESULTS, **_FLAGS},
    interfaces=INTERFACES,
    headers=("windows.h", "dxgi1_2.h", "d3d11.h"),
)
