"""Binding for `uia_tree` and `uia_walk`: the `UiaPort` over UI Automation's COM client,
via comtypes.

comtypes generates the client's interfaces from the type library in
UIAutomationCore.dll (`GetModule`), so no vtable is declared by hand here; before the
first call, the generated ids are compared with the declarations of `uia_model` (its
ABI constants and `GUIDS`), and any difference stops the port from being created.
The DLL is named by its absolute path in System32 (GetSystemDirectoryW, read when it
is loaded): given a relative name, comtypes looks in the calling module's directory and
the current directory first, where a planted file would be loaded instead.

- The generated code goes to a directory the agent owns (`gen_dir`), behind a
  cross-process lock: concurrent first-run generation into comtypes' shared cache has
  corrupted it and crashed start-up (https://github.com/CursorTouch/Windows-MCP/issues/357).
  A module left half-written fails to import, and comtypes then writes it again.
- `CUIAutomation8`/`IUIAutomation2` (Windows 8+) when the type library has them, for
  the connection and transaction timeouts the walk sets from its budget; otherwise
  `CUIAutomation`/`IUIAutomation`, without them.
- Each port belongs to the thread that created it (a multithreaded apartment, joined by
  `_com.import_comtypes`), as UI Automation asks of clients
  (https://learn.microsoft.com/en-us/windows/win32/winauto/uiauto-threading).
- The root is `ElementFromHandleBuildCache(GetForegroundWindow())`, skipping our own
  windows and the desktop. UWP apps in a CoreWindow can give an element with no
  children; then the desktop's children of the same process are tried instead (the
  first on screen that is not that same empty window).
- comtypes is untyped: `Any` stays inside this module, behind typed functions.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import logging
import msvcrt
import os
import sys
import threading
from collections.abc import Callable, Iterator
from functools import reduce
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from rigway.agent.backends.windows import _com
from rigway.agent.backends.windows.uia_model import (
    DESKTOP_WINDOW_CLASSES,
    CacheQuery,
    TreeScope_Children,
    TreeScope_Element,
    UIA_ProcessIdPropertyId,
    UIA_RuntimeIdPropertyId,
    UIA_ValueValuePropertyId,
    UiaNode,
    UiaRecord,
    pick_fallback_root,
    record_from_cached,
    runtime_id_of,
    typelib_differences,
)
from rigway.agent.backends.windows.uia_tree import UiaCallError, UiaPort

assert sys.platform == "win32"

__all__ = ["ComUiaPort", "load_uia_module", "pregenerate", "uia_port_factory"]

logger = logging.getLogger(__name__)
T = TypeVar("T")

_TYPELIB = "UIAutomationCore.dll"
_LOCK_FILE = ".rigway-generate.lock"
_WINDOW_CLASS_CHARS = 256
# MAX_PATH: the system directory is never longer.
_SYSTEM_DIRECTORY_CHARS = 260

_kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
_kernel32.GetSystemDirectoryW.argtypes = (ctypes.c_wchar_p, ctypes.c_uint32)
_kernel32.GetSystemDirectoryW.restype = ctypes.c_uint32

_user32 = ctypes.WinDLL("user32", use_last_error=True)
_user32.GetForegroundWindow.argtypes = ()
_user32.GetForegroundWindow.restype = ctypes.c_void_p
_user32.GetWindowThreadProcessId.argtypes = (ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint32))
_user32.GetWindowThreadProcessId.restype = ctypes.c_uint32
_user32.GetClassNameW.argtypes = (ctypes.c_void_p, ctypes.c_wchar_p, ctypes.c_int32)
_user32.GetClassNameW.restype = ctypes.c_int32

_module_lock = threading.Lock()
_module: ModuleType | None = None


# --- user32 ------------------------------------------------------------------------------
def _foreground_window() -> int:
    hwnd: int | None = _user32.GetForegroundWindow()
    return 0 if hwnd is None else hwnd


def _window_pid(hwnd: int) -> int:
    pid = ctypes.c_uint32()
    _user32.GetWindowThreadProcessId(ctypes.c_void_p(hwnd), ctypes.byref(pid))
    return pid.value


def _window_class(hwnd: int) -> str:
    buffer = ctypes.create_unicode_buffer(_WINDOW_CLASS_CHARS)
    length: int = _user32.GetClassNameW(ctypes.c_void_p(hwnd), buffer, _WINDOW_CLASS_CHARS)
    return buffer.value if length > 0 else ""


def _system_typelib_path() -> str:
    """UIAutomationCore.dll in this Windows' system directory, as an absolute path."""
    buffer = ctypes.create_unicode_buffer(_SYSTEM_DIRECTORY_CHARS)
    length: int = _kernel32.GetSystemDirectoryW(buffer, _SYSTEM_DIRECTORY_CHARS)
    if length == 0 or length >= _SYSTEM_DIRECTORY_CHARS:
        raise ctypes.WinError(ctypes.get_last_error())
    return os.path.join(buffer.value, _TYPELIB)


# --- The generated module ----------------------------------------------------------------
def load_uia_module(gen_dir: Path) -> ModuleType:
    """comtypes' wrapper of UIAutomationCore.dll's type library, generated into
    `gen_dir` on first use (once per process), checked against `uia_model`.

    Joins the calling thread to the multithreaded apartment."""
    global _module
    _com.import_comtypes()
    with _module_lock:
        if _module is None:
            module = _generate(gen_dir)
            _check_against_declarations(module)
            _module = module
        return _module


def pregenerate(gen_dir: Path) -> None:
    """Generate the wrapper ahead of use (an installer may), on a thread of its own (so
    the calling thread's COM apartment is left as it is). Raises what generation
    raised. The agent itself needs no call: its accessibility role makes its first port
    when the desktop opens (`UiaAccessibility.warm_up`)."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            load_uia_module(gen_dir)
        except BaseException as error:
            failures.append(error)
        finally:
            _com.leave_mta()

    thread = threading.Thread(target=run, name="rigway-uia-generate")
    thread.start()
    thread.join()
    if failures:
        raise failures[0]


def _generate(gen_dir: Path) -> ModuleType:
    client: Any = importlib.import_module("comtypes.client")
    gen_package: Any = importlib.import_module("comtypes.gen")
    gen_dir.mkdir(parents=True, exist_ok=True)
    # Only our directory is searched and written: a module another process left
    # half-written in the shared cache is never imported.
    client.gen_dir = str(gen_dir)
    gen_package.__path__ = [str(gen_dir)]
    with _generation_lock(gen_dir):
        module: ModuleType = client.GetModule(_system_typelib_path())
    return module


@contextlib.contextmanager
def _generation_lock(gen_dir: Path) -> Iterator[None]:
    """Another agent process (or an installer) generating into the same directory
    waits here. `LK_LOCK` retries for about ten seconds, then raises OSError."""
    with open(gen_dir / _LOCK_FILE, "a+b") as handle:
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_LOCK, 1)
        try:
            yield
        finally:
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)


def _check_against_declarations(module: ModuleType) -> None:
    differences = typelib_differences(vars(module))
    if differences:
        raise UiaCallError("UIAutomationCore's type library differs: " + "; ".join(differences))


# --- The port ------------------------------------------------------------------------------
def uia_port_factory(gen_dir: Path) -> Callable[[], UiaPort]:
    """The `port_factory` of `UiaAccessibility`: called on a worker thread, it joins
    that thread to the multithreaded apartment and creates that thread's port."""

    def create() -> UiaPort:
        return ComUiaPort(load_uia_module(gen_dir))

    return create


class ComUiaPort:
    """`UiaPort` over one IUIAutomation object, for the thread that created it."""

    def __init__(self, module: ModuleType) -> None:
        comtypes: Any = importlib.import_module("comtypes")
        self._com_error: type[Exception] = comtypes.COMError
        self._own_pid = os.getpid()
        self._automation, self._has_timeouts = self._guard(
            "creating the UI Automation client", lambda: _create_automation(module)
        )
        self._control_view: Any = self._guard(
            "ControlViewCondition", lambda: self._automation.ControlViewCondition
        )
        self._requests: dict[tuple[int, ...], Any] = {}
        self._conditions: dict[CacheQuery, Any] = {}

    def set_call_timeout(self, timeout_s: float) -> None:
        if not self._has_timeouts:
            return
        timeout_ms = max(1, int(timeout_s * 1000))

        def apply() -> None:
            self._automation.ConnectionTimeout = timeout_ms
            self._automation.TransactionTimeout = timeout_ms

        self._guard("setting timeouts", apply)

    def foreground_root(self, query: CacheQuery) -> UiaNode | None:
        hwnd = _foreground_window()
        if hwnd == 0:
            return None
        pid = _window_pid(hwnd)
        if pid == self._own_pid or _window_class(hwnd) in DESKTOP_WINDOW_CLASSES:
            return None
        request = self._request(query)

        def find() -> UiaNode | None:
            element = self._automation.ElementFromHandleBuildCache(hwnd, request)
            return UiaNode(element, _record_of(element, query.property_ids)) if element else None

        root = self._guard("the foreground window", find)
        if root is None or self._has_children(root.handle):
            return root
        fallback = self._same_process_window(pid, hwnd, query)
        return root if fallback is None else fallback

    def children(self, parent: object, query: CacheQuery) -> list[UiaNode]:
        element: Any = parent
        condition, request = self._condition(query), self._request(query)

        def find() -> list[UiaNode]:
            found = element.FindAllBuildCache(query.scope, condition, request)
            return [UiaNode(e, _record_of(e, query.property_ids)) for e in _elements(found)]

        return self._guard("children", find)

    def values(self, root: object, query: CacheQuery) -> dict[tuple[int, ...], str]:
        element: Any = root
        condition, request = self._condition(query), self._request(query)

        def find() -> dict[tuple[int, ...], str]:
            values: dict[tuple[int, ...], str] = {}
            for item in _elements(element.FindAllBuildCache(query.scope, condition, request)):
                runtime_id = runtime_id_of(item.GetCachedPropertyValue(UIA_RuntimeIdPropertyId))
                value = item.GetCachedPropertyValue(UIA_ValueValuePropertyId)
                if runtime_id and isinstance(value, str):
                    values[runtime_id] = value
            return values

        return self._guard("values", find)

    def close(self) -> None:
        # References are dropped here, on the port's thread, before the worker leaves
        # the multithreaded apartment (the role's worker-exit hook): a pointer released
        # after CoUninitialize would crash.
        self._requests.clear()
        self._conditions.clear()
        self._control_view = None
        self._automation = None

    # -- internals -----------------------------------------------------------------------
    def _has_children(self, handle: object) -> bool:
        element: Any = handle
        first = self._guard(
            "the first child",
            lambda: element.FindFirst(TreeScope_Children, self._control_view),
        )
        return bool(first)

    def _same_process_window(self, pid: int, hwnd: int, query: CacheQuery) -> UiaNode | None:
        """UWP CoreWindow apps: the desktop's children of process `pid`."""
        request = self._request(query)

        def find() -> list[UiaNode]:
            desktop = self._automation.GetRootElement()
            same_process = self._automation.CreatePropertyCondition(UIA_ProcessIdPropertyId, pid)
            found = desktop.FindAllBuildCache(TreeScope_Children, same_process, request)
            return [UiaNode(e, _record_of(e, query.property_ids)) for e in _elements(found)]

        return pick_fallback_root(self._guard("the desktop's windows", find), hwnd)

    def _request(self, query: CacheQuery) -> Any:
        """One cache request per set of properties: exactly those, for each found
        element itself, in the control view."""
        request = self._requests.get(query.property_ids)
        if request is None:

            def build() -> Any:
                built = self._automation.CreateCacheRequest()
                for property_id in query.property_ids:
                    built.AddProperty(property_id)
                built.TreeScope = TreeScope_Element
                built.TreeFilter = self._control_view
                return built

            request = self._guard("a cache request", build)
            self._requests[query.property_ids] = request
        return request

    def _condition(self, query: CacheQuery) -> Any:
        condition = self._conditions.get(query)
        if condition is None:

            def build() -> Any:
                parts = [self._control_view] if query.control_view else []
                parts += [
                    self._automation.CreatePropertyCondition(c.property_id, c.value)
                    for c in query.conditions
                ]
                if not parts:
                    return self._automation.CreateTrueCondition()
                return reduce(self._automation.CreateAndCondition, parts)

            condition = self._guard("a condition", build)
            self._conditions[query] = condition
        return condition

    def _guard(self, what: str, call: Callable[[], T]) -> T:
        """`call()`, its COM and Windows errors raised as UiaCallError."""
        try:
            return call()
        except self._com_error as error:
            hresult = getattr(error, "hresult", None)
            raise UiaCallError(f"{what}: {error}", hresult) from error
        except OSError as error:
            raise UiaCallError(f"{what}: {error}", getattr(error, "winerror", None)) from error


def _create_automation(module: ModuleType) -> tuple[Any, bool]:
    """IUIAutomation2 when this Windows has it (its timeouts bound each call), else
    IUIAutomation; and whether the timeouts can be set."""
    client: Any = importlib.import_module("comtypes.client")
    automation8 = getattr(module, "CUIAutomation8", None)
    interface2 = getattr(module, "IUIAutomation2", None)
    if automation8 is not None and interface2 is not None:
        try:
            return client.CreateObject(automation8, interface=interface2), True
        except Exception as error:  # COMError or OSError: class not registered
            logger.info("CUIAutomation8 unavailable (%s): using CUIAutomation", error)
    generated: Any = module
    return client.CreateObject(generated.CUIAutomation, interface=generated.IUIAutomation), False


def _record_of(element: Any, property_ids: tuple[int, ...]) -> UiaRecord:
    """Only the cached properties are read: reading any other raises."""
    return record_from_cached({pid: element.GetCachedPropertyValue(pid) for pid in property_ids})


def _elements(array: Any) -> list[Any]:
    """The elements of an IUIAutomationElementArray (a NULL one when nothing matched)."""
    if not array:
        return []
    return [array.GetElement(index) for index in range(array.Length)]
