"""UI Automation's ids, and what one cached element becomes in a snapshot.

Pure: importable and tested on Linux. The walk (`uia_walk.py`) asks the binding
(`_uia.py`) for elements with their properties prefetched in one cache request, as
`UiaRecord`s; `to_element` turns one into the `AccessibleElement` the agent reports, in
capture pixels, or drops it.

Values never come from the main cache request: it holds no `ValueValue`, so a password
field's text is not fetched with the rest. Values come from a second query that
excludes password elements by condition (`VALUE_QUERY`), and `to_element` forces a
password element's value to None whatever it is handed.

The ids are C names from uiautomationclient.h / uiautomationcoreapi.h. The mingw-w64 10
headers the ABI test compiles against declare the property ids and error codes only;
control type ids, TreeScope and ToggleState are named in `ABI.absent_from_headers`, and
`_uia.py` compares them, and the class and interface ids of `GUIDS`, with the type
library that comtypes generates from UIAutomationCore.dll before any call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from rigway.agent.backends.base import AccessibleElement
from rigway.agent.backends.windows._ctypes_types import hresult
from rigway.agent.backends.windows.abi import AbiDeclarations
from rigway.agent.backends.windows.geometry import OutputPlacement

__all__ = [
    "ABI",
    "CHILDREN_QUERY",
    "CONTROL_TYPE_IDS",
    "DESKTOP_WINDOW_CLASSES",
    "GUIDS",
    "MASKED_ROLE",
    "MAX_VALUE_CHARS",
    "PROPERTY_IDS",
    "RECORD_PROPERTY_IDS",
    "ROLE_NAMES",
    "ROOT_QUERY",
    "VALUE_QUERY",
    "CacheQuery",
    "PropertyCondition",
    "UiaNode",
    "UiaRecord",
    "element_key",
    "hresult",
    "pick_fallback_root",
    "record_from_cached",
    "role_name",
    "runtime_id_of",
    "to_element",
    "typelib_differences",
]


# --- Property ids (uiautomationclient.h) -------------------------------------------------
UIA_RuntimeIdPropertyId = 30000
UIA_BoundingRectanglePropertyId = 30001
UIA_ProcessIdPropertyId = 30002
UIA_ControlTypePropertyId = 30003
UIA_NamePropertyId = 30005
UIA_HasKeyboardFocusPropertyId = 30008
UIA_IsKeyboardFocusablePropertyId = 30009
UIA_IsEnabledPropertyId = 30010
UIA_AutomationIdPropertyId = 30011
UIA_ClassNamePropertyId = 30012
UIA_IsControlElementPropertyId = 30016
UIA_IsPasswordPropertyId = 30019
UIA_NativeWindowHandlePropertyId = 30020
UIA_IsOffscreenPropertyId = 30022
UIA_FrameworkIdPropertyId = 30024
UIA_IsValuePatternAvailablePropertyId = 30043
UIA_ValueValuePropertyId = 30045
UIA_ToggleToggleStatePropertyId = 30086

PROPERTY_IDS: dict[str, int] = {
    "UIA_RuntimeIdPropertyId": UIA_RuntimeIdPropertyId,
    "UIA_BoundingRectanglePropertyId": UIA_BoundingRectanglePropertyId,
    "UIA_ProcessIdPropertyId": UIA_ProcessIdPropertyId,
    "UIA_ControlTypePropertyId": UIA_ControlTypePropertyId,
    "UIA_NamePropertyId": UIA_NamePropertyId,
    "UIA_HasKeyboardFocusPropertyId": UIA_HasKeyboardFocusPropertyId,
    "UIA_IsKeyboardFocusablePropertyId": UIA_IsKeyboardFocusablePropertyId,
    "UIA_IsEnabledPropertyId": UIA_IsEnabledPropertyId,
    "UIA_AutomationIdPropertyId": UIA_AutomationIdPropertyId,
    "UIA_ClassNamePropertyId": UIA_ClassNamePropertyId,
    "UIA_IsControlElementPropertyId": UIA_IsControlElementPropertyId,
    "UIA_IsPasswordPropertyId": UIA_IsPasswordPropertyId,
    "UIA_NativeWindowHandlePropertyId": UIA_NativeWindowHandlePropertyId,
    "UIA_IsOffscreenPropertyId": UIA_IsOffscreenPropertyId,
    "UIA_FrameworkIdPropertyId": UIA_FrameworkIdPropertyId,
    "UIA_IsValuePatternAvailablePropertyId": UIA_IsValuePatternAvailablePropertyId,
    "UIA_ValueValuePropertyId": UIA_ValueValuePropertyId,
    "UIA_ToggleToggleStatePropertyId": UIA_ToggleToggleStatePropertyId,
}

# --- Error codes (uiautomationcoreapi.h) -------------------------------------------------
# The element went away between two calls: its subtree is skipped, not an error.
UIA_E_ELEMENTNOTAVAILABLE = hresult(0x80040201)
# A call ran past IUIAutomation2's ConnectionTimeout or TransactionTimeout.
UIA_E_TIMEOUT = hresult(0x80131505)

# --- Scopes, toggle states (enums of uiautomationclient.h) -------------------------------
TreeScope_Element = 0x1
TreeScope_Children = 0x2
TreeScope_Descendants = 0x4
TreeScope_Subtree = 0x7
ToggleState_Off = 0
ToggleState_On = 1
ToggleState_Indeterminate = 2

# --- Control type ids (uiautomationclient.h), 50000..50040, and their role names --------
# In id order: (UIA name, role). Role names are those the x11 backend (AT-SPI) and the
# sim report where the two overlap (a UIA Edit is what GTK calls "text", a Text is a
# "label", a Pane a "panel"); the rest are UIA's own names, lower case and spaced.
_CONTROL_TYPES: tuple[tuple[str, str], ...] = (
    ("Button", "push button"), ("Calendar", "calendar"), ("CheckBox", "check box"),
    ("ComboBox", "combo box"), ("Edit", "text"), ("Hyperlink", "link"),
    ("Image", "image"), ("ListItem", "list item"), ("List", "list"), ("Menu", "menu"),
    ("MenuBar", "menu bar"), ("MenuItem", "menu item"), ("ProgressBar", "progress bar"),
    ("RadioButton", "radio button"), ("ScrollBar", "scroll bar"), ("Slider", "slider"),
    ("Spinner", "spin button"), ("StatusBar", "status bar"), ("Tab", "page tab list"),
    ("TabItem", "page tab"), ("Text", "label"), ("ToolBar", "tool bar"),
    ("ToolTip", "tool tip"), ("Tree", "tree"), ("TreeItem", "tree item"),
    ("Custom", "custom"), ("Group", "grouping"), ("Thumb", "thumb"),
    ("DataGrid", "data grid"), ("DataItem", "data item"), ("Document", "document text"),
    ("SplitButton", "push button menu"), ("Window", "window"), ("Pane", "panel"),
    ("Header", "header"), ("HeaderItem", "table column header"), ("Table", "table"),
    ("TitleBar", "title bar"), ("Separator", "separator"),
    ("SemanticZoom", "semantic zoom"), ("AppBar", "app bar"),
)  # fmt: skip
CONTROL_TYPE_IDS: dict[str, int] = {
    f"UIA_{name}ControlTypeId": 50000 + offset for offset, (name, _) in enumerate(_CONTROL_TYPES)
}
ROLE_NAMES: dict[int, str] = {
    50000 + offset: role for offset, (_, role) in enumerate(_CONTROL_TYPES)
}
UIA_EditControlTypeId = CONTROL_TYPE_IDS["UIA_EditControlTypeId"]
UIA_PaneControlTypeId = CONTROL_TYPE_IDS["UIA_PaneControlTypeId"]
# What a password element is called, whatever its control type (as in AT-SPI).
MASKED_ROLE = "password text"

# --- Class and interface ids (uiautomationclient.h) ---------------------------------------
GUIDS: dict[str, str] = {
    "CLSID_CUIAutomation": "{FF48DBA4-60EF-4201-AA87-54103EEF594E}",
    "CLSID_CUIAutomation8": "{E22AD333-B25F-460C-83D0-0581107395C9}",
    "IID_IUIAutomation": "{30CBE57D-D9D0-452A-AB13-7AC5AC4825EE}",
    "IID_IUIAutomation2": "{34723AFF-0C9D-49D0-9896-7AB52DF8CD8A}",
    "IID_IUIAutomationElement": "{D22108AA-8AC5-49A5-837B-37BBB3D7591E}",
    "IID_IUIAutomationElementArray": "{14314595-B4BC-4055-95F2-58F2E42C9855}",
    "IID_IUIAutomationCacheRequest": "{B32A92B5-BC25-4078-9C08-D7EE95C48E03}",
    "IID_IUIAutomationCondition": "{352FFBA8-0973-437C-A61F-F64CAFD81DF9}",
}

_ENUMS: dict[str, int] = {
    "TreeScope_Element": TreeScope_Element,
    "TreeScope_Children": TreeScope_Children,
    "TreeScope_Descendants": TreeScope_Descendants,
    "TreeScope_Subtree": TreeScope_Subtree,
    "ToggleState_Off": ToggleState_Off,
    "ToggleState_On": ToggleState_On,
    "ToggleState_Indeterminate": ToggleState_Indeterminate,
}
_NOT_IN_MINGW = "mingw-w64 10's uiautomationclient.h declares property ids only"

ABI = AbiDeclarations(
    constants={
        **PROPERTY_IDS,
        "UIA_E_ELEMENTNOTAVAILABLE": UIA_E_ELEMENTNOTAVAILABLE,
        "UIA_E_TIMEOUT": UIA_E_TIMEOUT,
        **_ENUMS,
        **CONTROL_TYPE_IDS,
    },
    headers=("uiautomation.h",),
    absent_from_headers={name: _NOT_IN_MINGW for name in (*_ENUMS, *CONTROL_TYPE_IDS)},
)


# --- What the walk asks for --------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PropertyCondition:
    """`CreatePropertyCondition(property_id, value)` for a boolean property."""

    property_id: int
    value: bool


@dataclass(frozen=True, slots=True)
class CacheQuery:
    """One `FindAllBuildCache` (or `ElementFromHandleBuildCache` for the root): the
    search scope, its condition (ControlViewCondition when `control_view`, AND-ed with
    each of `conditions`), and the properties the cache request prefetches."""

    scope: int
    control_view: bool
    conditions: tuple[PropertyCondition, ...]
    property_ids: tuple[int, ...]


# Everything a `UiaRecord` holds. Never UIA_ValueValuePropertyId: that would fetch the
# text of password fields along with the rest.
RECORD_PROPERTY_IDS: tuple[int, ...] = (
    UIA_RuntimeIdPropertyId,
    UIA_BoundingRectanglePropertyId,
    UIA_ProcessIdPropertyId,
    UIA_ControlTypePropertyId,
    UIA_NamePropertyId,
    UIA_HasKeyboardFocusPropertyId,
    UIA_IsKeyboardFocusablePropertyId,
    UIA_IsEnabledPropertyId,
    UIA_AutomationIdPropertyId,
    UIA_ClassNamePropertyId,
    UIA_IsControlElementPropertyId,
    UIA_IsPasswordPropertyId,
    UIA_NativeWindowHandlePropertyId,
    UIA_IsOffscreenPropertyId,
    UIA_FrameworkIdPropertyId,
    UIA_IsValuePatternAvailablePropertyId,
    UIA_ToggleToggleStatePropertyId,
)
ROOT_QUERY = CacheQuery(TreeScope_Element, False, (), RECORD_PROPERTY_IDS)
CHILDREN_QUERY = CacheQuery(TreeScope_Children, True, (), RECORD_PROPERTY_IDS)
# The one query that reads values, asked of each parent whose children have a Value
# pattern (never of a whole subtree: its cost would have no bound). Password elements
# are excluded by the condition, so the provider is never asked for their text.
VALUE_QUERY = CacheQuery(
    TreeScope_Children,
    True,
    (
        PropertyCondition(UIA_IsPasswordPropertyId, False),
        PropertyCondition(UIA_IsValuePatternAvailablePropertyId, True),
    ),
    (UIA_RuntimeIdPropertyId, UIA_ValueValuePropertyId),
)

# The desktop itself (and its icon view after a wallpaper change): no window to walk.
DESKTOP_WINDOW_CLASSES: frozenset[str] = frozenset({"Progman", "WorkerW"})
MAX_VALUE_CHARS = 10_000


@dataclass(frozen=True, slots=True)
class UiaRecord:
    """One element's cached properties. `rect` is (left, top, width, height) in
    virtual-screen pixels (physical: the process is per-monitor DPI aware v2);
    `toggle_state` is None when the element has no Toggle pattern."""

    runtime_id: tuple[int, ...]
    rect: tuple[int, int, int, int]
    control_type: int
    name: str = ""
    focused: bool = False
    keyboard_focusable: bool = False
    enabled: bool = True
    is_control: bool = True
    is_password: bool = False
    offscreen: bool = False
    pid: int = 0
    automation_id: str = ""
    class_name: str = ""
    value_available: bool = False
    toggle_state: int | None = None
    native_window_handle: int = 0
    framework_id: str = ""


@dataclass(frozen=True, slots=True)
class UiaNode:
    """An element as the port hands it out: `handle` is the port's own reference to
    it (the walk only passes it back), `record` its cached properties."""

    handle: object
    record: UiaRecord


def role_name(record: UiaRecord) -> str:
    if record.is_password:
        return MASKED_ROLE
    return ROLE_NAMES.get(record.control_type, f"control type {record.control_type}")


def element_key(record: UiaRecord, bfs_path: tuple[int, ...] = ()) -> str:
    """ "uia:" + the RuntimeId; when the provider gives none, the process, AutomationId,
    control type and the element's path of child indices from the walk's root (stable
    while the window's layout is)."""
    if record.runtime_id:
        return "uia:" + ".".join(str(part) for part in record.runtime_id)
    path = ".".join(str(index) for index in bfs_path)
    return f"uia:{record.pid}:{record.automation_id}:{record.control_type}:{path}"


def to_element(
    record: UiaRecord,
    value: str | None,
    placement: OutputPlacement,
    capture_size: tuple[int, int],
    bfs_path: tuple[int, ...] = (),
) -> AccessibleElement | None:
    """The element as the agent reports it, in capture pixels; None when it is
    offscreen, has no area on the capture, or is a disabled pane that takes no focus
    (a layout container, not a control).

    `value` is the Value pattern's text from `VALUE_QUERY`; a toggle's state stands in
    when there is none. A password element is masked and its value is always None."""
    if record.offscreen or _is_inert_pane(record):
        return None
    box = _clip(record.rect, placement, capture_size)
    if box is None:
        return None
    x, y, w, h = box
    return AccessibleElement(
        key=element_key(record, bfs_path),
        role=role_name(record),
        name=record.name,
        x=x,
        y=y,
        w=w,
        h=h,
        focused=record.focused,
        masked=record.is_password,
        value=None if record.is_password else _value_of(record, value),
    )


def pick_fallback_root(candidates: list[UiaNode], empty_hwnd: int) -> UiaNode | None:
    """For a foreground window whose element has no children (UWP CoreWindow apps can
    give an empty wrapper): the first of the desktop's children of the same process
    that is on screen, has an area and is not that same empty window; None if none."""
    for node in candidates:
        record = node.record
        _, _, width, height = record.rect
        if empty_hwnd != 0 and record.native_window_handle == empty_hwnd:
            continue
        if not record.offscreen and width > 0 and height > 0:
            return node
    return None


def _is_inert_pane(record: UiaRecord) -> bool:
    return (
        record.control_type == UIA_PaneControlTypeId
        and not record.enabled
        and not record.keyboard_focusable
    )


def _clip(
    rect: tuple[int, int, int, int], placement: OutputPlacement, capture_size: tuple[int, int]
) -> tuple[int, int, int, int] | None:
    left, top, width, height = rect
    if width <= 0 or height <= 0:
        return None
    x, y = placement.from_screen(left, top)
    capture_w, capture_h = capture_size
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(capture_w, x + width), min(capture_h, y + height)
    if x1 <= x0 or y1 <= y0:
        return None
    return x0, y0, x1 - x0, y1 - y0


def _value_of(record: UiaRecord, value: str | None) -> str | None:
    if value is not None:
        return value[:MAX_VALUE_CHARS]
    if record.toggle_state is None:
        return None
    if record.toggle_state == ToggleState_On:
        return "checked"
    if record.toggle_state == ToggleState_Indeterminate:
        return "mixed"
    return "unchecked"


# --- Reading what the binding got back ---------------------------------------------------
def record_from_cached(cached: Mapping[int, object]) -> UiaRecord:
    """A record from cached property values (property id → the VARIANT as comtypes
    converts it). A property missing, or one the provider does not support (UIA hands
    back a sentinel object then), takes the record's default."""
    return UiaRecord(
        runtime_id=runtime_id_of(cached.get(UIA_RuntimeIdPropertyId)),
        rect=_rect_of(cached.get(UIA_BoundingRectanglePropertyId)),
        control_type=_int_of(cached.get(UIA_ControlTypePropertyId)),
        name=_str_of(cached.get(UIA_NamePropertyId)),
        focused=_bool_of(cached.get(UIA_HasKeyboardFocusPropertyId), default=False),
        keyboard_focusable=_bool_of(cached.get(UIA_IsKeyboardFocusablePropertyId), default=False),
        enabled=_bool_of(cached.get(UIA_IsEnabledPropertyId), default=True),
        is_control=_bool_of(cached.get(UIA_IsControlElementPropertyId), default=True),
        is_password=_bool_of(cached.get(UIA_IsPasswordPropertyId), default=False),
        offscreen=_bool_of(cached.get(UIA_IsOffscreenPropertyId), default=False),
        pid=_int_of(cached.get(UIA_ProcessIdPropertyId)),
        automation_id=_str_of(cached.get(UIA_AutomationIdPropertyId)),
        class_name=_str_of(cached.get(UIA_ClassNamePropertyId)),
        value_available=_bool_of(cached.get(UIA_IsValuePatternAvailablePropertyId), default=False),
        toggle_state=_optional_int_of(cached.get(UIA_ToggleToggleStatePropertyId)),
        native_window_handle=_int_of(cached.get(UIA_NativeWindowHandlePropertyId)),
        framework_id=_str_of(cached.get(UIA_FrameworkIdPropertyId)),
    )


def runtime_id_of(value: object) -> tuple[int, ...]:
    """A RuntimeId (a SAFEARRAY of ints, a tuple once converted); () for anything else."""
    if not isinstance(value, tuple | list):
        return ()
    parts = tuple(value)
    if not all(isinstance(part, int) and not isinstance(part, bool) for part in parts):
        return ()
    return parts


def typelib_differences(namespace: Mapping[str, object]) -> list[str]:
    """Where the module comtypes generated from the type library (`namespace`: its
    names) disagrees with what this module declares: constant values, and the
    `_reg_clsid_`/`_iid_` of the classes and interfaces of `GUIDS`. Names the type
    library lacks (error codes; interfaces newer than the running Windows) are not
    compared: the calls that need them fail on their own."""
    differences: list[str] = []
    for name, value in ABI.constants.items():
        generated = namespace.get(name)
        if isinstance(generated, int) and generated != value:
            differences.append(f"{name} is {generated}, declared {value}")
    for name, guid in GUIDS.items():
        kind, _, type_name = name.partition("_")
        generated_type = namespace.get(type_name)
        if generated_type is None:
            continue
        generated_id = getattr(generated_type, "_reg_clsid_" if kind == "CLSID" else "_iid_", None)
        if str(generated_id).upper() != guid:
            differences.append(f"{name} is {generated_id}, declared {guid}")
    return differences


def _bool_of(value: object, *, default: bool) -> bool:
    return value if isinstance(value, bool) else default


def _optional_int_of(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _int_of(value: object) -> int:
    number = _optional_int_of(value)
    return 0 if number is None else number


def _str_of(value: object) -> str:
    return value if isinstance(value, str) else ""


def _rect_of(value: object) -> tuple[int, int, int, int]:
    """BoundingRectangle's VARIANT: four doubles, left, top, width, height. Providers
    answer infinities for elements with no place on screen (and a NaN is possible):
    such a rectangle has no area, like a malformed one."""
    if not isinstance(value, tuple | list) or len(value) != 4:
        return (0, 0, 0, 0)
    if not all(isinstance(part, int | float) and not isinstance(part, bool) for part in value):
        return (0, 0, 0, 0)
    if not all(math.isfinite(part) for part in value):
        return (0, 0, 0, 0)
    left, top, width, height = (round(part) for part in value)
    return (left, top, width, height)
