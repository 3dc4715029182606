"""A scriptable UI Automation port: a tree of records, and a log of every request.

`FakeUiaPort` carries out each `CacheQuery` as UI Automation would: children in the
control view (control elements only), property conditions evaluated on the records,
and only the requested properties handed back. Every request is recorded with its
query and thread, so a test can prove what was asked and what never was. A call can be
made to block on an event, as a hung provider does.

`typical_window` builds a small sign-in window (a button, a text field, a password
field, a check box), and `fake_accessibility` the role over such ports, for tests and
for a conformance suite over the Windows backend.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from rigway.agent.backends.windows import uia_model as uia
from rigway.agent.backends.windows.geometry import OutputPlacement
from rigway.agent.backends.windows.uia_model import CacheQuery, UiaNode, UiaRecord
from rigway.agent.backends.windows.uia_walk import UiaAccessibility, UiaCallError

# A blocked call gives up after this long, so a test that forgets to release one does
# not leave a thread behind for the rest of the run.
BLOCK_LIMIT_S = 10.0

# The properties a record answers to (the fake hands back nothing else).
_RECORD_FIELDS: dict[int, str] = {
    uia.UIA_RuntimeIdPropertyId: "runtime_id",
    uia.UIA_BoundingRectanglePropertyId: "rect",
    uia.UIA_ProcessIdPropertyId: "pid",
    uia.UIA_ControlTypePropertyId: "control_type",
    uia.UIA_NamePropertyId: "name",
    uia.UIA_HasKeyboardFocusPropertyId: "focused",
    uia.UIA_IsKeyboardFocusablePropertyId: "keyboard_focusable",
    uia.UIA_IsEnabledPropertyId: "enabled",
    uia.UIA_AutomationIdPropertyId: "automation_id",
    uia.UIA_ClassNamePropertyId: "class_name",
    uia.UIA_IsControlElementPropertyId: "is_control",
    uia.UIA_IsPasswordPropertyId: "is_password",
    uia.UIA_NativeWindowHandlePropertyId: "native_window_handle",
    uia.UIA_IsOffscreenPropertyId: "offscreen",
    uia.UIA_FrameworkIdPropertyId: "framework_id",
    uia.UIA_IsValuePatternAvailablePropertyId: "value_available",
    uia.UIA_ToggleToggleStatePropertyId: "toggle_state",
}


@dataclass(eq=False)
class FakeElement:
    """One element of the fake tree. `value` is what its Value pattern would say (a
    password field has one too: the walk must never ask for it)."""

    record: UiaRecord
    children: list[FakeElement] = field(default_factory=list)
    value: str | None = None

    def subtree(self) -> Iterator[FakeElement]:
        yield self
        for child in self.children:
            yield from child.subtree()


@dataclass(frozen=True, slots=True)
class FakeRequest:
    method: str  # "foreground_root" | "children" | "values" | "set_call_timeout"
    target: FakeElement | None
    query: CacheQuery | None
    thread_id: int
    timeout_s: float | None = None


@dataclass
class Block:
    """Makes the port's `method` call on `target` (any target when None) wait for
    `release`; `entered` is set when a call starts waiting."""

    method: str
    target: FakeElement | None = None
    release: threading.Event = field(default_factory=threading.Event)
    entered: threading.Event = field(default_factory=threading.Event)


class FakeClock:
    def __init__(self, now_s: float = 0.0) -> None:
        self.now_s = now_s

    def __call__(self) -> float:
        return self.now_s

    def advance(self, seconds: float) -> None:
        self.now_s += seconds


class FakeUiaPort:
    """`UiaPort` over a tree of `FakeElement`s (see the module docstring)."""

    def __init__(
        self,
        root: FakeElement | None,
        *,
        clock: FakeClock | None = None,
        seconds_per_call: float = 0.0,
        block: Block | None = None,
        failures: dict[tuple[str, int], UiaCallError] | None = None,
        honour_value_condition: bool = True,
    ) -> None:
        self.root = root
        self.clock = clock
        self.seconds_per_call = seconds_per_call
        self.block = block
        # (method, id(target)) → the error that call raises.
        self.failures = dict(failures or {})
        # False: `values` answers for every element, as a provider that ignored the
        # condition would; the walk must still never report a password's value.
        self.honour_value_condition = honour_value_condition
        self.requests: list[FakeRequest] = []
        self.created_on = threading.get_ident()
        self.created_thread = threading.current_thread()
        self.closed = threading.Event()
        self.closed_on: int | None = None

    # -- UiaPort -------------------------------------------------------------------------
    def set_call_timeout(self, timeout_s: float) -> None:
        self._record("set_call_timeout", None, None, timeout_s=timeout_s)

    def foreground_root(self, query: CacheQuery) -> UiaNode | None:
        self._call("foreground_root", self.root, query)
        return None if self.root is None else _node(self.root, query)

    def children(self, parent: object, query: CacheQuery) -> list[UiaNode]:
        element = _element(parent)
        self._call("children", element, query)
        return [_node(child, query) for child in self._found(element, query)]

    def values(self, root: object, query: CacheQuery) -> dict[tuple[int, ...], str]:
        element = _element(root)
        self._call("values", element, query)
        answer: dict[tuple[int, ...], str] = {}
        for found in self._found(element, query):
            if found.value is not None and found.record.runtime_id:
                answer[found.record.runtime_id] = found.value
        return answer

    def close(self) -> None:
        self.closed_on = threading.get_ident()
        self.closed.set()

    # -- what was asked ------------------------------------------------------------------
    def requests_of(self, method: str) -> list[FakeRequest]:
        return [request for request in self.requests if request.method == method]

    def queried_property_ids(self) -> set[int]:
        return {pid for r in self.requests if r.query is not None for pid in r.query.property_ids}

    # -- internals -----------------------------------------------------------------------
    def _call(self, method: str, target: FakeElement | None, query: CacheQuery) -> None:
        self._record(method, target, query)
        if self.clock is not None:
            self.clock.advance(self.seconds_per_call)
        block = self.block
        if block is not None and block.method == method and block.target in (None, target):
            block.entered.set()
            block.release.wait(BLOCK_LIMIT_S)
        error = self.failures.get((method, id(target)))
        if error is not None:
            raise error

    def _record(
        self,
        method: str,
        target: FakeElement | None,
        query: CacheQuery | None,
        *,
        timeout_s: float | None = None,
    ) -> None:
        self.requests.append(FakeRequest(method, target, query, threading.get_ident(), timeout_s))

    def _found(self, element: FakeElement, query: CacheQuery) -> list[FakeElement]:
        if query.scope == uia.TreeScope_Children:
            scope = list(element.children)
        elif query.scope == uia.TreeScope_Subtree:
            scope = list(element.subtree())
        else:
            raise AssertionError(f"the walk does not search with scope {query.scope}")
        return [found for found in scope if self._matches(found.record, query)]

    def _matches(self, record: UiaRecord, query: CacheQuery) -> bool:
        if query.control_view and not record.is_control:
            return False
        if query.property_ids == uia.VALUE_QUERY.property_ids and not self.honour_value_condition:
            return True
        return all(
            getattr(record, _RECORD_FIELDS[condition.property_id]) == condition.value
            for condition in query.conditions
        )


class FakePortFactory:
    """Hands out the given ports in order (then fresh empty ones), noting the thread
    each was created on."""

    def __init__(self, *ports: FakeUiaPort) -> None:
        self._ports = list(ports)
        self.created: list[FakeUiaPort] = []

    def __call__(self) -> FakeUiaPort:
        port = self._ports.pop(0) if self._ports else FakeUiaPort(None)
        port.created_on = threading.get_ident()
        port.created_thread = threading.current_thread()
        self.created.append(port)
        return port


def _element(handle: object) -> FakeElement:
    assert isinstance(handle, FakeElement), f"not a handle this port gave out: {handle!r}"
    return handle


def _node(element: FakeElement, query: CacheQuery) -> UiaNode:
    """The element with only the queried properties cached (others at their defaults,
    as an unrequested property cannot be read from a cache)."""
    requested = {
        _RECORD_FIELDS[pid]: getattr(element.record, _RECORD_FIELDS[pid])
        for pid in query.property_ids
        if pid in _RECORD_FIELDS
    }
    record = UiaRecord(
        runtime_id=requested.pop("runtime_id", ()),
        rect=requested.pop("rect", (0, 0, 0, 0)),
        control_type=requested.pop("control_type", 0),
        **requested,
    )
    return UiaNode(element, record)


# --- Building trees ---------------------------------------------------------------------
_runtime_ids = itertools.count(1)

WINDOW_PID = 4242
WINDOW_RECT = (100, 50, 400, 300)


def record(
    control_type_name: str,
    rect: tuple[int, int, int, int],
    name: str = "",
    **changes: Any,
) -> UiaRecord:
    """A record of control type `UIA_<name>ControlTypeId` with a fresh RuntimeId;
    `changes` set any other field of `UiaRecord`."""
    base = UiaRecord(
        runtime_id=(42, WINDOW_PID, next(_runtime_ids)),
        rect=rect,
        control_type=uia.CONTROL_TYPE_IDS[f"UIA_{control_type_name}ControlTypeId"],
        name=name,
        pid=WINDOW_PID,
    )
    return dataclasses.replace(base, **changes)


def element(
    control_type_name: str,
    rect: tuple[int, int, int, int],
    name: str = "",
    *,
    children: list[FakeElement] | None = None,
    value: str | None = None,
    **changes: Any,
) -> FakeElement:
    return FakeElement(record(control_type_name, rect, name, **changes), children or [], value)


@dataclass(frozen=True)
class TypicalWindow:
    root: FakeElement
    button: FakeElement
    text_field: FakeElement
    password_field: FakeElement
    check_box: FakeElement
    # What the password field holds: must never appear in any snapshot.
    hidden_text: str


def typical_window(hidden_text: str = "hunter2-never-shown") -> TypicalWindow:
    """A sign-in window at (100, 50), 400x300 on the virtual screen: a text field with
    "alice", a password field holding `hidden_text`, a checked check box and a button."""
    text_field = element(
        "Edit", (120, 80, 200, 24), "Username", keyboard_focusable=True, focused=True,
        value_available=True, value="alice", automation_id="username",
    )  # fmt: skip
    password_field = element(
        "Edit", (120, 120, 200, 24), "Password", keyboard_focusable=True, is_password=True,
        value_available=True, value=hidden_text, automation_id="password",
    )  # fmt: skip
    check_box = element(
        "CheckBox", (120, 160, 120, 20), "Remember me", keyboard_focusable=True,
        toggle_state=uia.ToggleState_On,
    )  # fmt: skip
    button = element("Button", (120, 200, 80, 30), "Sign in", keyboard_focusable=True)
    root = element(
        "Window", WINDOW_RECT, "Sign in", class_name="SignInDialog",
        children=[text_field, password_field, check_box, button],
    )  # fmt: skip
    return TypicalWindow(root, button, text_field, password_field, check_box, hidden_text)


def fake_accessibility(
    *ports: FakeUiaPort,
    placement: OutputPlacement = OutputPlacement(left=0, top=0, width=1920, height=1080),
    grace_s: float = 0.5,
) -> tuple[UiaAccessibility, FakePortFactory]:
    """The accessibility role over these ports (one per worker it starts), capturing
    the output at `placement`; close the role when done."""
    factory = FakePortFactory(*ports)
    role = UiaAccessibility(
        factory,
        lambda: placement,
        lambda: (placement.width, placement.height),
        grace_s=grace_s,
    )
    return role, factory


def wide_tree(levels: int, per_parent: int) -> FakeElement:
    """A window whose every element has `per_parent` buttons below it, `levels` deep,
    all on screen (rectangles shrink but keep an area)."""

    def build(depth: int, left: int, top: int) -> list[FakeElement]:
        if depth == levels:
            return []
        return [
            element(
                "Button",
                (left + 2 * i, top + 2 * depth, 10, 10),
                f"b{depth}.{i}",
                children=build(depth + 1, left + 2 * i, top),
            )
            for i in range(per_parent)
        ]

    return element("Window", WINDOW_RECT, "Wide", children=build(0, 110, 60))
