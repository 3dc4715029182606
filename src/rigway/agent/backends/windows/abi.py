"""What the Windows bindings declare about the platform's binary interface, in one place.

Every pure module that declares a struct, a constant, a COM interface or an interface id
used by the bindings exposes it as a module-level `ABI = AbiDeclarations(...)`, and lists
itself in `DECLARING_MODULES`. The binding modules build their ctypes and comtypes
objects from these same declarations (a COM interface's `_methods_` follow
`ComInterface.methods`), so what the ABI test checks is what runs.

The ABI test (`tests/agent/windows/test_abi.py`) turns the declarations into static
assertions and compiles them with the mingw-w64 cross compilers against their Windows
headers: struct sizes and field offsets, vtable slots and constant values (C), interface
ids and parents (C++, where mingw-w64 makes `__uuidof` a constant expression), checked
against headers nobody here wrote. A name those headers lack goes in
`absent_from_headers`, with why.

Naming: a struct class is named as its C typedef and its fields as the C fields; a
constant by its C macro or enumerator name; an interface by its C name, with its own
methods (not its parent's) in vtable order.
"""

from __future__ import annotations

import ctypes
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "DECLARING_MODULES",
    "IUNKNOWN",
    "AbiDeclarations",
    "ComInterface",
    "StructType",
    "collect",
    "vtable_slots",
]

# Pure modules of this package that expose `ABI`; the ABI test reads them all.
DECLARING_MODULES: tuple[str, ...] = (
    "_ctypes_types",
    "bootstrap",
    "uia_model",
    "dxgi_types",
    "gdi_types",
    "job_types",
    "sendinput",
    "keymap",
    "tray",
    "toplevel",
    "desktop_state",
    "notify_icon",
    "displays",
    "local_input",
    "ui_effects",
)

StructType = type[ctypes.Structure] | type[ctypes.Union]


@dataclass(frozen=True, slots=True)
class ComInterface:
    """One COM interface as the bindings use it.

    `iid` is the registry form, e.g. "{191CFAC3-A341-470D-B26E-A864F428319C}".
    `parent` is the C name of the interface it extends (None only for IUnknown).
    `methods` are this interface's own methods in vtable order, unused ones included
    (a binding may leave them without argument types, but never out of place)."""

    name: str
    iid: str
    parent: str | None
    methods: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class AbiDeclarations:
    structs: tuple[StructType, ...] = ()
    constants: Mapping[str, int] = field(default_factory=dict)
    interfaces: tuple[ComInterface, ...] = ()
    # Headers (as in `#include <...>`) that declare the above.
    headers: tuple[str, ...] = ("windows.h",)
    # Declared names (struct, constant or interface) the mingw-w64 headers lack, each
    # with why, e.g. {"IUIAutomation": "mingw-w64 10 declares no UIA client interface"}.
    # The ABI test cannot check them, and fails once the headers do declare them, so
    # an entry cannot outlive its reason.
    absent_from_headers: Mapping[str, str] = field(default_factory=dict)


IUNKNOWN = ComInterface(
    name="IUnknown",
    iid="{00000000-0000-0000-C000-000000000046}",
    parent=None,
    methods=("QueryInterface", "AddRef", "Release"),
)


def collect(module_names: tuple[str, ...] = DECLARING_MODULES) -> AbiDeclarations:
    """Every declaration of the named modules (of this package), merged."""
    structs: list[StructType] = []
    constants: dict[str, int] = {}
    interfaces: dict[str, ComInterface] = {IUNKNOWN.name: IUNKNOWN}
    headers: list[str] = []
    absent: dict[str, str] = {}
    for name in module_names:
        module = importlib.import_module(f"{__package__}.{name}")
        declared: AbiDeclarations = module.ABI
        structs.extend(s for s in declared.structs if s not in structs)
        for constant, value in declared.constants.items():
            if constants.get(constant, value) != value:
                raise ValueError(f"{constant} declared twice with different values")
            constants[constant] = value
        for interface in declared.interfaces:
            if interfaces.get(interface.name, interface) != interface:
                raise ValueError(f"{interface.name} declared twice, differently")
            interfaces[interface.name] = interface
        headers.extend(h for h in declared.headers if h not in headers)
        absent.update(declared.absent_from_headers)
    return AbiDeclarations(
        tuple(structs), constants, tuple(interfaces.values()), tuple(headers), absent
    )


def vtable_slots(interface: ComInterface, known: Mapping[str, ComInterface]) -> dict[str, int]:
    """Each of `interface`'s own methods → its slot index in the vtable (IUnknown's
    QueryInterface is 0), counting every ancestor's methods first."""
    base = 0
    parent = interface.parent
    while parent is not None:
        ancestor = known[parent]
        base += len(ancestor.methods)
        parent = ancestor.parent
    return {method: base + index for index, method in enumerate(interface.methods)}
