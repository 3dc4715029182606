"""The budgeted UI Automation walk and the role that runs it on its own worker threads."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, WalkBudget
from rigway.agent.backends.windows import uia_model as uia
from rigway.agent.backends.windows.geometry import OutputPlacement
from rigway.agent.backends.windows.uia_walk import (
    UiaAccessibility,
    UiaCallError,
    WalkResults,
    walk_foreground,
)
from tests.agent.windows.fake_uia import (
    BLOCK_LIMIT_S,
    WINDOW_PID,
    WINDOW_RECT,
    Block,
    FakeClock,
    FakePortFactory,
    FakeUiaPort,
    element,
    fake_accessibility,
    typical_window,
    wide_tree,
)

PRIMARY = OutputPlacement(left=0, top=0, width=1920, height=1080)
CAPTURE = (1920, 1080)
BUDGET = WalkBudget(max_elements=500, deadline_s=1.5)
# A test of an abandoned walk takes deadline + grace. The grace leaves the worker ample
# time to reach the blocked call on a loaded machine; the walk's own deadline runs on a
# fake clock that only the fake port moves.
QUICK = WalkBudget(max_elements=500, deadline_s=0.05)
QUICK_GRACE_S = 0.5


def _walk(
    port: FakeUiaPort, budget: WalkBudget = BUDGET, clock: FakeClock | None = None
) -> AccessibilitySnapshot:
    results = WalkResults()
    walk_foreground(port, budget, PRIMARY, CAPTURE, results, clock or FakeClock())
    return results.snapshot()


def _names(snapshot: AccessibilitySnapshot) -> list[str]:
    return [e.name for e in snapshot.elements]


# --- The walk ---------------------------------------------------------------------------
def test_typical_window_maps_every_control() -> None:
    window = typical_window()
    snapshot = _walk(FakeUiaPort(window.root))
    assert snapshot.window_title == "Sign in"
    assert snapshot.window_role == "window"
    assert snapshot.window_pid == WINDOW_PID  # an app session shows only its own apps'
    assert _names(snapshot) == ["Username", "Password", "Remember me", "Sign in"]
    assert [e.role for e in snapshot.elements] == [
        "text",
        "password text",
        "check box",
        "push button",
    ]
    assert not snapshot.truncated


def test_values_are_joined_by_runtime_id() -> None:
    window = typical_window()
    by_name = {e.name: e for e in _walk(FakeUiaPort(window.root)).elements}
    assert by_name["Username"].value == "alice"
    assert by_name["Remember me"].value == "checked"
    assert by_name["Username"].key == uia.element_key(window.text_field.record)


def test_password_value_is_never_requested_nor_reported() -> None:
    window = typical_window()
    port = FakeUiaPort(window.root)
    snapshot = _walk(port)
    password = next(e for e in snapshot.elements if e.name == "Password")
    assert password.masked
    assert password.value is None
    assert window.hidden_text not in repr(snapshot)
    (value_request,) = port.requests_of("values")
    assert value_request.query is not None
    assert uia.PropertyCondition(uia.UIA_IsPasswordPropertyId, False) in (
        value_request.query.conditions
    )


def test_walk_never_caches_a_value_with_the_element_properties() -> None:
    port = FakeUiaPort(typical_window().root)
    _walk(port)
    for request in port.requests_of("children") + port.requests_of("foreground_root"):
        assert request.query is not None
        assert uia.UIA_ValueValuePropertyId not in request.query.property_ids


def test_password_value_from_a_provider_ignoring_the_condition_is_dropped() -> None:
    window = typical_window()
    port = FakeUiaPort(window.root, honour_value_condition=False)
    snapshot = _walk(port)
    password = next(e for e in snapshot.elements if e.name == "Password")
    assert password.value is None
    assert window.hidden_text not in repr(snapshot)


def test_children_are_asked_once_per_parent() -> None:
    window = typical_window()
    port = FakeUiaPort(window.root)
    _walk(port)
    targets = [request.target for request in port.requests_of("children")]
    assert targets[0] is window.root
    assert len(targets) == len({id(t) for t in targets}) == 5


def test_a_window_whose_process_id_is_unknown_has_no_pid() -> None:
    window = typical_window()
    root = dataclasses.replace(window.root, record=dataclasses.replace(window.root.record, pid=0))
    assert _walk(FakeUiaPort(root)).window_pid is None


def test_no_foreground_window_gives_an_empty_snapshot() -> None:
    snapshot = _walk(FakeUiaPort(None))
    assert snapshot == AccessibilitySnapshot("", "", [], truncated=False)


def test_call_timeout_is_set_from_the_budget() -> None:
    port = FakeUiaPort(typical_window().root)
    _walk(port, WalkBudget(max_elements=10, deadline_s=0.8))
    assert port.requests[0].method == "set_call_timeout"
    assert port.requests[0].timeout_s == 0.8


def test_every_call_is_bounded_by_the_time_left() -> None:
    clock = FakeClock()
    port = FakeUiaPort(typical_window().root, clock=clock, seconds_per_call=0.1)
    _walk(port, WalkBudget(max_elements=10, deadline_s=1.0), clock)
    calls = [r for r in port.requests if r.method != "set_call_timeout"]
    timeouts = [r.timeout_s for r in port.requests_of("set_call_timeout")]
    assert len(timeouts) == len(calls)
    # Each call costs 0.1 s of the fake clock: each timeout is what was left before it.
    assert timeouts == pytest.approx([1.0 - 0.1 * n for n in range(len(calls))])
    for before, call in zip(port.requests[:-1], port.requests[1:], strict=True):
        if call.method != "set_call_timeout":
            assert before.method == "set_call_timeout"


def test_values_are_asked_of_the_parents_of_collected_elements_only() -> None:
    inner = element("Edit", (150, 100, 40, 20), "inner", value_available=True, value="x")
    group = element("Group", (140, 90, 100, 60), "group", children=[inner])
    outer = element("Edit", (120, 60, 40, 20), "outer", value_available=True, value="y")
    plain = element("Button", (200, 60, 40, 20), "plain")
    root = element("Window", WINDOW_RECT, "w", children=[outer, group, plain])
    port = FakeUiaPort(root)
    snapshot = _walk(port)
    assert [r.target for r in port.requests_of("values")] == [root, group]
    assert all(
        r.query is not None and r.query.scope == uia.TreeScope_Children
        for r in port.requests_of("values")
    )
    assert {e.name: e.value for e in snapshot.elements}["inner"] == "x"


def test_values_beyond_the_element_cap_are_never_asked() -> None:
    deep_field = element("Edit", (150, 100, 40, 20), "deep", value_available=True, value="z")
    group = element("Group", (140, 90, 100, 60), "group", children=[deep_field])
    field = element("Edit", (120, 60, 40, 20), "field", value_available=True, value="y")
    port = FakeUiaPort(element("Window", WINDOW_RECT, "w", children=[field, group]))
    snapshot = _walk(port, WalkBudget(max_elements=2, deadline_s=1.5))
    assert snapshot.truncated
    assert [r.target for r in port.requests_of("values")] == [port.root]


def test_value_queries_stop_at_the_deadline_keeping_those_read() -> None:
    clock = FakeClock()
    fields = [
        element("Edit", (110 + 30 * i, 60, 10, 10), f"f{i}", value_available=True, value=f"v{i}")
        for i in range(4)
    ]
    groups = [
        element("Group", (110 + 30 * i, 60, 20, 20), f"g{i}", children=[field])
        for i, field in enumerate(fields)
    ]
    root = element("Window", WINDOW_RECT, "w", children=groups)
    port = FakeUiaPort(root, clock=clock, seconds_per_call=0.125)
    # 1/8 s a call: the walk's share (0.75 s) ends after six calls, before the fields'
    # children are asked for; the values of g0 and g1 are read by 1.0 s, the deadline.
    snapshot = _walk(port, WalkBudget(max_elements=50, deadline_s=1.0), clock)
    assert snapshot.truncated
    assert [r.target for r in port.requests_of("values")] == groups[:2]
    assert [e.value for e in snapshot.elements if e.name in ("f0", "f1")] == ["v0", "v1"]


def test_element_cap_sets_truncated_and_keeps_top_level_elements() -> None:
    port = FakeUiaPort(wide_tree(levels=3, per_parent=4))
    snapshot = _walk(port, WalkBudget(max_elements=6, deadline_s=1.5))
    assert snapshot.truncated
    assert len(snapshot.elements) == 6
    # Breadth first: all four of the first level, then the first children of the first.
    assert _names(snapshot)[:4] == ["b0.0", "b0.1", "b0.2", "b0.3"]


def test_tree_exactly_at_the_cap_is_not_truncated() -> None:
    snapshot = _walk(FakeUiaPort(typical_window().root), WalkBudget(max_elements=4))
    assert len(snapshot.elements) == 4
    assert not snapshot.truncated


def test_deadline_stops_the_walk_and_sets_truncated() -> None:
    clock = FakeClock()
    port = FakeUiaPort(wide_tree(levels=4, per_parent=3), clock=clock, seconds_per_call=0.1)
    snapshot = _walk(port, WalkBudget(max_elements=500, deadline_s=0.35), clock)
    assert snapshot.truncated
    # The root (found at 0.1 s) and the first child (at 0.2 s) were asked for their
    # children before the walk's share of the deadline (0.2625 s) ran out.
    assert len(port.requests_of("children")) == 2
    assert _names(snapshot)[:3] == ["b0.0", "b0.1", "b0.2"]


def test_offscreen_subtree_is_not_walked() -> None:
    hidden_child = element("Button", (120, 60, 10, 10), "hidden child")
    menu = element("Menu", (110, 60, 50, 50), "menu", offscreen=True, children=[hidden_child])
    port = FakeUiaPort(element("Window", WINDOW_RECT, "w", children=[menu]))
    snapshot = _walk(port)
    assert snapshot.elements == []
    assert all(r.target is not menu for r in port.requests_of("children"))


def test_non_control_children_are_not_reported() -> None:
    decoration = element("Image", (110, 60, 10, 10), "decoration", is_control=False)
    port = FakeUiaPort(element("Window", WINDOW_RECT, "w", children=[decoration]))
    assert _walk(port).elements == []


def test_element_gone_mid_walk_skips_its_subtree_only() -> None:
    window = typical_window()
    gone = UiaCallError("gone", uia.UIA_E_ELEMENTNOTAVAILABLE)
    port = FakeUiaPort(window.root, failures={("children", id(window.text_field)): gone})
    snapshot = _walk(port)
    assert len(snapshot.elements) == 4
    assert not snapshot.truncated


def test_uia_timeout_stops_the_walk_as_truncated() -> None:
    window = typical_window()
    timeout = UiaCallError("timeout", uia.UIA_E_TIMEOUT)
    port = FakeUiaPort(window.root, failures={("children", id(window.text_field)): timeout})
    snapshot = _walk(port)
    assert snapshot.truncated
    assert len(port.requests_of("children")) == 2
    assert port.requests_of("values") == []


def test_failed_value_query_keeps_the_elements() -> None:
    window = typical_window()
    failure = UiaCallError("E_FAIL", uia.hresult(0x80004005))
    port = FakeUiaPort(window.root, failures={("values", id(window.root)): failure})
    snapshot = _walk(port)
    assert len(snapshot.elements) == 4
    assert next(e for e in snapshot.elements if e.name == "Username").value is None


# --- The role: worker threads -----------------------------------------------------------
@pytest.fixture
def roles() -> Iterator[list[UiaAccessibility]]:
    made: list[UiaAccessibility] = []
    yield made
    for role in made:
        role.close()


def _role(
    made: list[UiaAccessibility], factory: FakePortFactory, max_leaked_workers: int = 2
) -> UiaAccessibility:
    role = UiaAccessibility(
        factory,
        lambda: PRIMARY,
        lambda: CAPTURE,
        grace_s=QUICK_GRACE_S,
        max_leaked_workers=max_leaked_workers,
        clock=FakeClock(),
    )
    made.append(role)
    return role


def test_snapshot_walks_on_a_worker_thread_that_owns_the_port(
    roles: list[UiaAccessibility],
) -> None:
    port = FakeUiaPort(typical_window().root)
    role = _role(roles, FakePortFactory(port))
    snapshot = role.snapshot(BUDGET)
    assert len(snapshot.elements) == 4
    assert port.created_on != threading.get_ident()
    assert {r.thread_id for r in port.requests} == {port.created_on}


def test_worker_and_port_are_reused_between_snapshots(roles: list[UiaAccessibility]) -> None:
    factory = FakePortFactory(FakeUiaPort(typical_window().root))
    role = _role(roles, factory)
    role.snapshot(BUDGET)
    role.snapshot(BUDGET)
    assert len(factory.created) == 1
    assert len(factory.created[0].requests_of("foreground_root")) == 2


def test_blocked_walk_returns_partial_result_and_next_walk_uses_a_fresh_port(
    roles: list[UiaAccessibility],
) -> None:
    window = typical_window()
    block = Block("values")
    hung = FakeUiaPort(window.root, block=block)
    fresh = FakeUiaPort(typical_window().root)
    factory = FakePortFactory(hung, fresh)
    role = _role(roles, factory)

    started = time.monotonic()
    partial = role.snapshot(QUICK)
    # Well before the fake's own limit on a blocked call: the caller did not wait for it.
    assert time.monotonic() - started < BLOCK_LIMIT_S / 2
    assert block.entered.is_set()
    assert partial.truncated
    assert _names(partial) == ["Username", "Password", "Remember me", "Sign in"]
    assert role.leaked_workers == 1

    after = role.snapshot(QUICK)
    assert factory.created == [hung, fresh]
    assert fresh.created_on != hung.created_on
    assert not after.truncated
    assert len(after.elements) == 4
    block.release.set()


def test_abandoned_worker_closes_its_port_on_its_own_thread_once_released(
    roles: list[UiaAccessibility],
) -> None:
    block = Block("children")
    hung = FakeUiaPort(typical_window().root, block=block)
    role = _role(roles, FakePortFactory(hung))
    role.snapshot(QUICK)
    block.release.set()
    assert hung.closed.wait(5.0)
    assert hung.closed_on == hung.created_on
    hung.created_thread.join(5.0)
    assert role.leaked_workers == 0


def test_leaked_worker_cap_gives_empty_truncated_snapshots_without_new_ports(
    roles: list[UiaAccessibility],
) -> None:
    block = Block("children")
    hung = FakeUiaPort(typical_window().root, block=block)
    factory = FakePortFactory(hung)
    role = _role(roles, factory, max_leaked_workers=1)
    role.snapshot(QUICK)

    refused = role.snapshot(QUICK)
    assert refused == AccessibilitySnapshot("", "", [], truncated=True)
    assert factory.created == [hung]

    block.release.set()
    hung.created_thread.join(5.0)
    recovered = role.snapshot(QUICK)
    assert len(factory.created) == 2
    assert not recovered.truncated


def test_port_that_cannot_be_created_gives_an_empty_snapshot_and_is_retried(
    roles: list[UiaAccessibility],
) -> None:
    attempts: list[int] = []
    working = FakeUiaPort(typical_window().root)

    def factory() -> FakeUiaPort:
        attempts.append(threading.get_ident())
        if len(attempts) == 1:
            raise OSError("UIAutomationCore.dll could not be loaded")
        return working

    role = UiaAccessibility(factory, lambda: PRIMARY, lambda: CAPTURE, grace_s=QUICK_GRACE_S)
    roles.append(role)
    assert role.snapshot(BUDGET).elements == []
    assert len(role.snapshot(BUDGET).elements) == 4
    assert len(attempts) == 2


def test_port_that_raises_unexpectedly_is_replaced(roles: list[UiaAccessibility]) -> None:
    class BrokenPort(FakeUiaPort):
        def foreground_root(self, query: uia.CacheQuery) -> uia.UiaNode | None:
            raise RuntimeError("RPC server unavailable")

    broken = BrokenPort(None)
    working = FakeUiaPort(typical_window().root)
    factory = FakePortFactory(broken, working)
    role = _role(roles, factory)
    assert role.snapshot(BUDGET).elements == []
    assert broken.closed.is_set()
    assert len(role.snapshot(BUDGET).elements) == 4


def test_close_closes_the_port_on_its_worker_thread(roles: list[UiaAccessibility]) -> None:
    port = FakeUiaPort(typical_window().root)
    role = _role(roles, FakePortFactory(port))
    role.snapshot(BUDGET)
    role.close()
    assert port.closed.wait(5.0)
    assert port.closed_on == port.created_on


def test_snapshot_after_close_is_empty(roles: list[UiaAccessibility]) -> None:
    factory = FakePortFactory(FakeUiaPort(typical_window().root))
    role = _role(roles, factory)
    role.close()
    assert role.snapshot(BUDGET).elements == []
    assert factory.created == []


def test_rects_are_mapped_through_the_placement_read_at_each_snapshot(
    roles: list[UiaAccessibility],
) -> None:
    placements = [PRIMARY, OutputPlacement(left=100, top=50, width=1920, height=1080)]
    factory = FakePortFactory(FakeUiaPort(typical_window().root))
    role = UiaAccessibility(factory, lambda: placements[0], lambda: CAPTURE)
    roles.append(role)
    before = role.snapshot(BUDGET).elements[0]
    placements.pop(0)
    after = role.snapshot(BUDGET).elements[0]
    assert (after.x, after.y) == (before.x - 100, before.y - 50)


class SlowFactory:
    """Hands out `port` once `release` is set, as comtypes' first generation does."""

    def __init__(self, port: FakeUiaPort) -> None:
        self.port = port
        self.entered = threading.Event()
        self.release = threading.Event()
        self.created_on: list[int] = []

    def __call__(self) -> FakeUiaPort:
        self.entered.set()
        self.release.wait(BLOCK_LIMIT_S)
        self.created_on.append(threading.get_ident())
        self.port.created_on = threading.get_ident()
        self.port.created_thread = threading.current_thread()
        return self.port


def test_warm_up_makes_the_port_on_the_worker_before_any_snapshot(
    roles: list[UiaAccessibility],
) -> None:
    factory = SlowFactory(FakeUiaPort(typical_window().root))
    role = UiaAccessibility(factory, lambda: PRIMARY, lambda: CAPTURE, grace_s=QUICK_GRACE_S)
    roles.append(role)
    role.warm_up()  # returns at once: the factory is still held
    assert factory.entered.wait(5.0)
    assert factory.created_on == []
    factory.release.set()
    assert len(role.snapshot(BUDGET).elements) == 4
    (worker,) = factory.created_on
    assert worker != threading.get_ident()
    assert {r.thread_id for r in factory.port.requests} == {worker}


def test_a_snapshot_during_a_slow_warm_up_is_empty_and_keeps_the_worker(
    roles: list[UiaAccessibility],
) -> None:
    factory = SlowFactory(FakeUiaPort(typical_window().root))
    role = UiaAccessibility(factory, lambda: PRIMARY, lambda: CAPTURE, grace_s=QUICK_GRACE_S)
    roles.append(role)
    role.warm_up()
    assert factory.entered.wait(5.0)
    assert role.snapshot(QUICK) == AccessibilitySnapshot("", "", [], truncated=True)
    assert role.leaked_workers == 0
    factory.release.set()
    assert len(role.snapshot(BUDGET).elements) == 4
    assert len(factory.created_on) == 1


def test_a_worker_leaves_on_its_own_thread_after_closing_its_port(
    roles: list[UiaAccessibility],
) -> None:
    port = FakeUiaPort(typical_window().root)
    exits: list[tuple[int, bool]] = []
    role = UiaAccessibility(
        FakePortFactory(port),
        lambda: PRIMARY,
        lambda: CAPTURE,
        grace_s=QUICK_GRACE_S,
        on_worker_exit=lambda: exits.append((threading.get_ident(), port.closed.is_set())),
    )
    roles.append(role)
    role.snapshot(BUDGET)
    role.close()
    port.created_thread.join(5.0)
    assert exits == [(port.created_on, True)]


def test_an_abandoned_worker_leaves_too_once_its_call_returns(
    roles: list[UiaAccessibility],
) -> None:
    block = Block("children")
    hung = FakeUiaPort(typical_window().root, block=block)
    exits: list[int] = []
    role = UiaAccessibility(
        FakePortFactory(hung),
        lambda: PRIMARY,
        lambda: CAPTURE,
        grace_s=QUICK_GRACE_S,
        clock=FakeClock(),
        on_worker_exit=lambda: exits.append(threading.get_ident()),
    )
    roles.append(role)
    role.snapshot(QUICK)
    block.release.set()
    hung.created_thread.join(5.0)
    assert exits == [hung.created_on]


def test_fake_accessibility_over_the_typical_window_reports_it() -> None:
    window = typical_window()
    role, factory = fake_accessibility(FakeUiaPort(window.root))
    try:
        snapshot = role.snapshot(BUDGET)
    finally:
        role.close()
    assert snapshot.window_title == "Sign in"
    assert {e.role for e in snapshot.elements} == {
        "text",
        "password text",
        "check box",
        "push button",
    }
    assert len(factory.created) == 1
