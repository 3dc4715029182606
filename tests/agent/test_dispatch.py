from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import psutil
import pytest
import simplejpeg

from rigway.agent import apps as apps_module
from rigway.agent import dispatch as dispatch_module
from rigway.agent.accessibility import AccessibilityService
from rigway.agent.apps import AppTracker
from rigway.agent.backends.base import Rect, WalkBudget
from rigway.agent.dispatch import Dispatcher, HostOpError
from rigway.agent.safety import InputGuard
from rigway.agent.screen import ScreenService
from rigway.agent.stream import StreamControl
from rigway.agent.worker import SerialWorker
from rigway.protocol import ops
from tests.agent.assembly import dispatcher_over
from tests.agent.fakes import FakeApps, FakeDesktop, element


@dataclass
class Rig:
    desktop: FakeDesktop
    apps: FakeApps
    guard: InputGuard
    dispatcher: Dispatcher

    async def call(self, op: str, **body: Any) -> dict[str, Any]:
        reply, _ = await self.dispatcher.handle(op, body)
        return reply

    async def error(self, op: str, **body: Any) -> HostOpError:
        with pytest.raises(HostOpError) as caught:
            await self.dispatcher.handle(op, body)
        return caught.value


@pytest.fixture
async def rig(
    screen_worker: SerialWorker,
    a11y_worker: SerialWorker,
    input_worker: SerialWorker,
) -> AsyncIterator[Rig]:
    desktop = FakeDesktop()
    apps = FakeApps()
    guard = InputGuard(desktop)
    dispatcher = dispatcher_over(desktop, apps, screen_worker, a11y_worker, input_worker, guard)
    yield Rig(desktop, apps, guard, dispatcher)
    await dispatcher.close()


@pytest.fixture
async def started(rig: Rig) -> Rig:
    await rig.call(ops.SESSION_START, session_id="s1", mode="desktop")
    return rig


async def test_start_answers_native_size_and_mode(rig: Rig) -> None:
    reply = await rig.call(ops.SESSION_START, session_id="s1")
    assert reply == {"native_width": 320, "native_height": 200, "capture_mode": "fake"}
    assert rig.dispatcher.active_session_id == "s1"


async def test_start_is_idempotent(started: Rig) -> None:
    pid = (await started.call(ops.APP_LAUNCH, session_id="s1", path="/bin/app"))["pid"]
    started.desktop.open_window(7, pid)  # opened during the session: not a new baseline
    await started.call(ops.SESSION_START, session_id="s1")
    await started.call(ops.SESSION_END, session_id="s1", reason="done")
    assert started.desktop.closed_windows == [frozenset({7})]


async def test_start_of_another_session_ends_the_old_one_first(started: Rig) -> None:
    await started.call(ops.INPUT_BATCH, session_id="s1", events=[{"type": "key_down", "key": "a"}])
    await started.call(ops.SESSION_START, session_id="s2")
    assert started.dispatcher.active_session_id == "s2"
    assert started.apps.kill_all_calls == 1
    assert ("key", "a", False) in started.desktop.calls


async def test_ops_of_another_session_are_refused(started: Rig) -> None:
    error = await started.error(ops.SCREEN_DIRTY, session_id="other")
    assert error.code == ops.ERROR_SESSION_MISMATCH


async def test_ops_without_a_session_are_refused(rig: Rig) -> None:
    error = await rig.error(ops.A11Y_TARGETS, session_id="s1")
    assert error.code == ops.ERROR_SESSION_MISMATCH


@pytest.mark.parametrize(
    ("op", "body"),
    [
        (ops.SESSION_START, {}),
        (ops.SCREEN_CAPTURE, {"session_id": "s1", "quality": 10}),
        (ops.SCREEN_CAPTURE, {"session_id": "s1", "region": {"x": 0, "y": 0, "w": 0, "h": 1}}),
        (ops.INPUT_BATCH, {"session_id": "s1", "events": []}),
        (ops.INPUT_BATCH, {"session_id": "s1", "events": [{"type": "teleport"}]}),
        (ops.APP_LAUNCH, {"session_id": "s1", "path": ""}),
        (ops.SCREEN_DIRTY, {"session_id": "s1", "extra": True}),
        (ops.SCREEN_DIRTY_RETURN, {"session_id": "s1", "rects": []}),
        (ops.SCREEN_DIRTY_RETURN, {"session_id": "s1", "rects": [[0, 0, 0, 5]]}),
        (ops.SCREEN_DIRTY_RETURN, {"session_id": "s1", "rects": [[-1, 0, 5, 5]]}),
        (ops.SCREEN_DIRTY_RETURN, {"session_id": "s1", "rects": [[0, 0, 5, 5]] * 65}),
    ],
)
async def test_invalid_bodies_are_invalid_request(
    started: Rig, op: str, body: dict[str, Any]
) -> None:
    error = await started.error(op, **body)
    assert error.code == ops.ERROR_INVALID_REQUEST
    assert error.detail


async def test_dirty_handed_back_is_taken_again(started: Rig) -> None:
    started.desktop.damage(Rect(5, 5, 10, 10))
    taken = await started.call(ops.SCREEN_DIRTY, session_id="s1")
    assert await started.call(ops.SCREEN_DIRTY_RETURN, session_id="s1", rects=taken["rects"]) == {}
    again = await started.call(ops.SCREEN_DIRTY, session_id="s1")
    assert again["rects"] == [(5, 5, 10, 10)]


async def test_dirty_return_for_another_session_is_refused(started: Rig) -> None:
    error = await started.error(ops.SCREEN_DIRTY_RETURN, session_id="old", rects=[[0, 0, 5, 5]])
    assert error.code == ops.ERROR_SESSION_MISMATCH
    assert (await started.call(ops.SCREEN_DIRTY, session_id="s1"))["rects"] == []


async def test_unknown_op(started: Rig) -> None:
    error = await started.error("screen/teleport", session_id="s1")
    assert error.code == ops.ERROR_UNKNOWN_OP


async def test_end_releases_kills_and_closes_new_windows(started: Rig) -> None:
    pid = (await started.call(ops.APP_LAUNCH, session_id="s1", path="/bin/app"))["pid"]
    await started.call(
        ops.INPUT_BATCH,
        session_id="s1",
        events=[{"type": "key_down", "key": "ctrl"}, {"type": "key_down", "key": "x"}],
    )
    started.desktop.open_window(42, pid)
    reply = await started.call(ops.SESSION_END, session_id="s1", reason="done")
    assert reply == {"released_inputs": ["x", "ctrl"], "killed_pids": [pid]}
    assert started.desktop.closed_windows == [frozenset({42})]
    assert started.dispatcher.active_session_id is None


async def test_end_is_idempotent(started: Rig) -> None:
    await started.call(ops.SESSION_END, session_id="s1", reason="done")
    again = await started.call(ops.SESSION_END, session_id="s1", reason="done")
    assert again == {"released_inputs": [], "killed_pids": []}
    assert started.apps.kill_all_calls == 1


async def test_end_of_another_session_leaves_the_active_one(started: Rig) -> None:
    reply = await started.call(ops.SESSION_END, session_id="old", reason="done")
    assert reply == {"released_inputs": [], "killed_pids": []}
    assert started.dispatcher.active_session_id == "s1"


async def test_capture_returns_body_and_jpeg(started: Rig) -> None:
    body, jpeg = await started.dispatcher.handle(
        ops.SCREEN_CAPTURE, {"session_id": "s1", "quality": 70, "max_width": 160}
    )
    assert jpeg is not None
    assert simplejpeg.decode_jpeg_header(jpeg)[:2] == (100, 160)
    captured = ops.ScreenCaptured.model_validate(body)
    assert (captured.width, captured.native_width, captured.marked) == (160, 320, False)


class RecordingResponder:
    """Notes each answer and the thread it came from."""

    def __init__(self) -> None:
        self.answers: list[tuple[dict[str, Any], bytes, str]] = []

    def answer(self, body: dict[str, Any], payload: bytes) -> None:
        self.answers.append((body, payload, threading.current_thread().name))


async def test_capture_answers_from_the_screen_worker_before_returning(started: Rig) -> None:
    responder = RecordingResponder()
    body, jpeg = await started.dispatcher.handle(
        ops.SCREEN_CAPTURE, {"session_id": "s1", "max_width": 160}, responder
    )
    # The same reply, handed over on the screen worker: the link has sent it by now.
    assert responder.answers == [(body, jpeg, "test-screen")]


async def test_errors_and_other_ops_do_not_answer_early(started: Rig) -> None:
    responder = RecordingResponder()
    outside = {"session_id": "s1", "region": {"x": 300, "y": 0, "w": 100, "h": 10}}
    with pytest.raises(HostOpError):
        await started.dispatcher.handle(ops.SCREEN_CAPTURE, outside, responder)
    await started.dispatcher.handle(ops.SCREEN_DIRTY, {"session_id": "s1"}, responder)
    assert responder.answers == []


async def test_start_has_a_capture_on_the_screen_worker_before_it_returns(
    started: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    grabbing = threading.Event()
    grab = started.desktop.grab

    def noting_grab() -> Any:
        grabbing.set()
        return grab()

    monkeypatch.setattr(started.desktop, "grab", noting_grab)
    reply = started.dispatcher.start(ops.SCREEN_CAPTURE, {"session_id": "s1", "max_width": 160})
    # The loop has not run a step since: only the worker could have begun the grab.
    assert grabbing.wait(timeout=5)
    body, jpeg = await reply
    assert body["width"] == 160
    assert jpeg is not None
    assert jpeg[:2] == b"\xff\xd8"


async def test_start_never_raises_its_awaitable_does(started: Rig) -> None:
    unknown = started.dispatcher.start("screen/nonsense", {})
    mismatch = started.dispatcher.start(ops.SCREEN_CAPTURE, {"session_id": "s2"})
    invalid = started.dispatcher.start(ops.SCREEN_CAPTURE, {"session_id": "s1", "quality": 1})
    codes = []
    for reply in (unknown, mismatch, invalid):
        with pytest.raises(HostOpError) as caught:
            await reply
        codes.append(caught.value.code)
    assert codes == [ops.ERROR_UNKNOWN_OP, ops.ERROR_SESSION_MISMATCH, ops.ERROR_INVALID_REQUEST]


async def test_capture_region_outside_is_invalid_request(started: Rig) -> None:
    error = await started.error(
        ops.SCREEN_CAPTURE, session_id="s1", region={"x": 300, "y": 0, "w": 100, "h": 10}
    )
    assert error.code == ops.ERROR_INVALID_REQUEST


async def test_marked_capture_shares_the_walk_with_targets(started: Rig) -> None:
    started.desktop.elements = [element("ok", x=20, y=20)]
    started.desktop.walk_gate = threading.Event()
    targets = asyncio.create_task(started.call(ops.A11Y_TARGETS, session_id="s1"))
    await asyncio.to_thread(started.desktop.walk_started.wait, 5.0)
    capture = asyncio.create_task(started.call(ops.SCREEN_CAPTURE, session_id="s1", mark=True))
    # One turn of the loop runs the capture task's first step, in which it joins the walk
    # in flight (nothing before the join waits); no time needs to pass.
    await asyncio.sleep(0)
    started.desktop.walk_gate.set()
    target_reply, capture_reply = await asyncio.gather(targets, capture)
    assert started.desktop.walk_count == 1
    assert capture_reply["marked"] is True
    assert target_reply["targets"][0]["id"].startswith("t_")


async def test_mark_with_no_targets_is_unmarked(started: Rig) -> None:
    reply = await started.call(ops.SCREEN_CAPTURE, session_id="s1", mark=True)
    assert reply["marked"] is False


async def test_input_failure_is_host_error_naming_the_event(started: Rig) -> None:
    started.desktop.fail_keys.add("b")
    error = await started.error(
        ops.INPUT_BATCH,
        session_id="s1",
        events=[{"type": "key_press", "key": "a"}, {"type": "key_press", "key": "ctrl+b"}],
    )
    assert error.code == ops.ERROR_HOST
    assert "event 1" in error.detail
    assert started.guard.held_keys == ()


async def test_input_counts_events(started: Rig) -> None:
    reply = await started.call(
        ops.INPUT_BATCH, session_id="s1", events=[{"type": "mouse_click", "x": 0, "y": 0}] * 3
    )
    assert reply["count"] == 3
    assert [(e["index"], e["type"], e["ok"], e["x"], e["y"]) for e in reply["events"]] == [
        (i, "mouse_click", True, 0, 0) for i in range(3)
    ]
    assert reply["settle"] is None


async def test_launch_error_is_invalid_request(started: Rig) -> None:
    error = await started.error(ops.APP_LAUNCH, session_id="s1", path="nowhere")
    assert error.code == ops.ERROR_INVALID_REQUEST
    assert "nowhere" in error.detail


async def test_kill_of_a_foreign_pid_is_app_not_found(started: Rig) -> None:
    error = await started.error(ops.APP_KILL, session_id="s1", pid=1)
    assert error.code == ops.ERROR_APP_NOT_FOUND


async def test_kill_without_pid_kills_all(started: Rig) -> None:
    first = (await started.call(ops.APP_LAUNCH, session_id="s1", path="/a"))["pid"]
    second = (await started.call(ops.APP_LAUNCH, session_id="s1", path="/b", args=["-x"]))["pid"]
    assert await started.call(ops.APP_KILL, session_id="s1") == {"killed": [first, second]}


async def test_link_loss_releases_held_input_but_keeps_the_session(started: Rig) -> None:
    await started.call(
        ops.INPUT_BATCH,
        session_id="s1",
        events=[{"type": "key_down", "key": "shift"}, {"type": "mouse_move", "x": 1, "y": 1}],
    )
    released = await started.dispatcher.on_link_lost()
    assert released == ["shift"]
    assert started.dispatcher.active_session_id == "s1"
    assert started.apps.kill_all_calls == 0


async def test_local_end_after_grace_restores(started: Rig) -> None:
    assert not await started.dispatcher.end_local_session("link_lost", "other")
    assert await started.dispatcher.end_local_session("link_lost")
    assert started.apps.kill_all_calls == 1
    assert started.dispatcher.active_session_id is None
    assert not await started.dispatcher.end_local_session("link_lost")


async def test_end_stops_a_running_batch(started: Rig) -> None:
    batch = asyncio.create_task(
        started.call(
            ops.INPUT_BATCH,
            session_id="s1",
            events=[
                {"type": "key_down", "key": "ctrl", "delay_ms": 5000},
                {"type": "type_text", "text": "never"},
            ],
        )
    )
    # Once ctrl is down the batch is in its 5 s pause.
    assert await asyncio.to_thread(started.desktop.key_pressed.wait, 5.0)
    reply = await started.call(ops.SESSION_END, session_id="s1", reason="done")
    with pytest.raises(HostOpError, match="interrupted"):
        await batch
    assert reply["released_inputs"] == ["ctrl"]
    assert ("type", "never") not in started.desktop.calls


def _one_worker_dispatcher(
    apps: AppTracker, worker: SerialWorker, *, streams: StreamControl | None = None
) -> Dispatcher:
    """A dispatcher over a fake desktop whose screen and accessibility share `worker`."""
    desktop = FakeDesktop()
    return Dispatcher(
        desktop,
        ScreenService(desktop, worker),
        AccessibilityService(desktop, worker, WalkBudget()),
        InputGuard(desktop),
        apps,
        streams=streams,
    )


async def test_an_app_whose_launch_outlasts_its_session_is_killed(
    monkeypatch: pytest.MonkeyPatch, screen_worker: SerialWorker
) -> None:
    """The end's restore ran while the process was still starting: it knew no pid to
    kill, so the launch itself must not leave one behind."""
    resolve = apps_module.resolve_executable
    resolving, session_ended = threading.Event(), threading.Event()

    def slow_resolve(path: str, search_path: str | None = None) -> str:
        # e.g. a PATH entry on a slow mount: the lookup outlasts the session's end.
        resolving.set()
        session_ended.wait(5)
        return resolve(path, search_path)

    monkeypatch.setattr(apps_module, "resolve_executable", slow_resolve)
    tracker = apps_module.ProcessTracker()
    dispatcher = _one_worker_dispatcher(tracker, screen_worker)
    try:
        await dispatcher.handle(ops.SESSION_START, {"session_id": "s1"})
        launch = asyncio.create_task(
            dispatcher.handle(
                ops.APP_LAUNCH, {"session_id": "s1", "path": "sleep", "args": ["300"]}
            )
        )
        assert await asyncio.to_thread(resolving.wait, 5)
        await dispatcher.handle(ops.SESSION_END, {"session_id": "s1", "reason": "client"})
        session_ended.set()
        with pytest.raises(HostOpError) as refused:
            await launch
        assert refused.value.code == ops.ERROR_SESSION_MISMATCH
        survivors = [
            p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", "300"]
        ]
        assert [p for p in survivors if p.ppid() == os.getpid()] == []
    finally:
        tracker.kill_all()
        await dispatcher.close()


class HungStreams:
    """A publisher whose close never returns (a grab stuck on the screen worker)."""

    def __init__(self) -> None:
        self.close_started = asyncio.Event()

    async def offer(self, request: ops.StreamOffer) -> ops.StreamAnswer:
        raise AssertionError("not used")

    async def add_candidate(self, request: ops.StreamCandidate) -> None:
        raise AssertionError("not used")

    async def close(self, session_id: str, viewer_id: str | None = None) -> int:
        self.close_started.set()
        await asyncio.Event().wait()
        return 0

    async def close_all(self) -> None:
        return None


async def test_a_hung_stream_close_neither_holds_input_nor_blocks_the_end(
    monkeypatch: pytest.MonkeyPatch, screen_worker: SerialWorker
) -> None:
    monkeypatch.setattr(dispatch_module, "_STREAM_CLOSE_TIMEOUT_S", 0.2)
    streams = HungStreams()
    dispatcher = _one_worker_dispatcher(FakeApps(), screen_worker, streams=streams)
    try:
        await dispatcher.handle(ops.SESSION_START, {"session_id": "s1"})
        down = [{"type": "key_down", "key": "shift"}]
        await dispatcher.handle(ops.INPUT_BATCH, {"session_id": "s1", "events": down})
        async with asyncio.timeout(3):
            reply, _ = await dispatcher.handle(
                ops.SESSION_END, {"session_id": "s1", "reason": "client"}
            )
        assert reply["released_inputs"] == ["shift"]
        assert streams.close_started.is_set()
    finally:
        async with asyncio.timeout(3):  # a regression fails here instead of hanging
            await dispatcher.close()
