"""Act and see in one round trip: `act`, `drag`, `wait_for`, frames, and the batch's
409s, against a fake gateway (sync; `test_act_async.py` covers the async handle)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from rigway.client import (
    ActResult,
    ConflictError,
    DesktopUnavailableError,
    ExpectationFailedError,
    FrameExpiredError,
    InputEvent,
    InputStoppedError,
    ObserveOptions,
    OwnerActiveError,
    Region,
    Rigway,
    SessionHandle,
    Settle,
    StaleFrameError,
    TargetGoneError,
    WaitTarget,
)

from .conftest import FakeGateway, body_of, error, ok

INPUT = "/v1/sessions/ses_1/input"
WAIT = "/v1/sessions/ses_1/wait"
SAVE = {"id": "t_save", "x": 100, "y": 40, "w": 80, "h": 20, "role": "button", "name": "Save"}
NAME = {"id": "t_name", "x": 300, "y": 200, "w": 200, "h": 30, "role": "edit", "name": "Name"}


def receipt(index: int, kind: str, *, ok: bool = True, x: int | None = None) -> dict[str, Any]:
    return {
        "index": index,
        "type": kind,
        "ok": ok,
        "at_ms": 3 * index,
        "x": x,
        "y": x,
        "changed": True,
    }


def observe_json(**overrides: Any) -> dict[str, Any]:
    result: dict[str, Any] = {
        "width": 960,
        "height": 540,
        "native_width": 1920,
        "native_height": 1080,
        "jpeg_base64": None,
        "changed": True,
        "targets": [SAVE, NAME],
        "frame_id": "frm_after",
    }
    result.update(overrides)
    return result


@pytest.fixture
def session(client: Rigway, session_gateway: FakeGateway) -> SessionHandle:
    return client.sessions.create(rig_id="rig_1")


def answer_with(**extra: Any) -> Any:
    def reply(request: httpx2.Request) -> httpx2.Response:
        events = body_of(request)["events"]
        receipts = [receipt(i, e["type"]) for i, e in enumerate(events)]
        return ok({"ok": True, "count": len(events), "events": receipts, **extra})

    return reply


def test_act_sends_every_option_and_returns_receipts_settle_and_observe(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on(
        "POST",
        INPUT,
        answer_with(settle={"settled": True, "waited_ms": 140}, observe=observe_json()),
    )

    result = session.act(
        [InputEvent.mouse_click(10, 20), InputEvent.type_text("hi").expecting_change(800)],
        settle=Settle(quiet_ms=50),
        observe=ObserveOptions(max_width=960, mark=True),
        frame_id="frm_1",
        coords="image",
        require_unchanged=True,
    )

    assert body_of(session_gateway.last) == {
        "events": [
            {"type": "mouse_click", "x": 10, "y": 20, "button": "left"},
            {"type": "type_text", "text": "hi", "expect": "change", "expect_timeout_ms": 800},
        ],
        "settle": {"quiet_ms": 50},
        "observe": {"max_width": 960, "mark": 1},
        "frame_id": "frm_1",
        "coords": "image",
        "require_unchanged": True,
    }
    assert isinstance(result, ActResult)
    assert result.count == 2
    assert [(r.index, r.type, r.ok) for r in result.receipts] == [
        (0, "mouse_click", True),
        (1, "type_text", True),
    ]
    assert (result.settled, result.settle and result.settle.waited_ms) == (True, 140)
    assert result.observe is not None
    assert result.observe.frame_id == "frm_after"
    assert [t.id for t in session.latest_targets] == ["t_save", "t_name"]


def test_act_without_options_sends_the_events_only(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    result = session.act([{"type": "key_press", "key": "enter"}], settle=False, observe=None)

    assert body_of(session_gateway.last) == {"events": [{"type": "key_press", "key": "enter"}]}
    assert (result.settle, result.observe, result.settled) == (None, None, None)


def test_true_settle_and_observe_ask_for_the_gateway_defaults(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session.key("tab", settle=True, observe=True)
    sent = body_of(session_gateway.last)
    assert (sent["settle"], sent["observe"]) == ({}, {})


def test_observe_mapping_booleans_go_as_zero_or_one(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session.key("tab", observe={"image": False, "mark": True, "max_width": 640})
    assert body_of(session_gateway.last)["observe"] == {"image": 0, "mark": 1, "max_width": 640}


def test_observe_region_maps_the_answer_back_to_native(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("POST", INPUT, answer_with(observe=observe_json(width=400, height=300)))
    result = session.key(
        "tab", observe=ObserveOptions(region=Region(100, 200, 800, 600), max_width=400)
    )
    sent = body_of(session_gateway.last)["observe"]
    assert sent == {"max_width": 400, "x": 100, "y": 200, "w": 800, "h": 600}
    assert result.observe is not None
    assert result.observe.to_native(200, 150) == (501, 501)


def test_frame_id_is_read_off_a_screenshot(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    headers = {
        "X-Screenshot-Width": "960",
        "X-Screenshot-Height": "540",
        "X-Screenshot-Native-Width": "1920",
        "X-Screenshot-Native-Height": "1080",
        "X-Frame-Id": "frm_shot",
    }
    session_gateway.on(
        "GET", "/v1/sessions/ses_1/screenshot", httpx2.Response(200, content=b"j", headers=headers)
    )
    shot = session.screenshot(max_width=960)

    session.click(480, 270, frame_id=shot, coords="image")

    assert shot.frame_id == "frm_shot"
    sent = body_of(session_gateway.last)
    assert (sent["frame_id"], sent["coords"], sent["events"][0]["x"]) == ("frm_shot", "image", 480)


def test_image_coords_or_require_unchanged_without_a_frame_send_nothing(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    with pytest.raises(ValueError, match="frame_id"):
        session.click(1, 2, coords="image")
    with pytest.raises(ValueError, match="frame_id"):
        session.click(1, 2, require_unchanged=True)
    assert session_gateway.calls("POST", INPUT) == []


def test_settle_and_observe_lengthen_the_read_timeout(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session.key("tab")
    plain = session_gateway.last.extensions["timeout"]["read"]
    session.key("tab", settle=Settle(timeout_ms=10_000), observe=True)
    waited = session_gateway.last.extensions["timeout"]["read"]
    assert waited == plain + 10 + 5


# --------------------------------------------------------------------------- drag


def test_drag_presses_moves_and_releases_in_one_settled_batch(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session.drag([(10, 20), (50, 60), (90, 100)], button="right")
    assert body_of(session_gateway.last) == {
        "events": [
            {"type": "mouse_down", "x": 10, "y": 20, "button": "right"},
            {"type": "mouse_move", "x": 50, "y": 60},
            {"type": "mouse_move", "x": 90, "y": 100},
            {"type": "mouse_up", "x": 90, "y": 100, "button": "right"},
        ],
        "settle": {},
    }


def test_drag_settle_can_be_turned_off(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session.drag([(1, 1), (2, 2)], settle=False)
    assert "settle" not in body_of(session_gateway.last)


def test_drag_needs_two_points(session: SessionHandle, session_gateway: FakeGateway) -> None:
    with pytest.raises(ValueError, match="two points"):
        session.drag([(1, 1)])
    assert session_gateway.calls("POST", INPUT) == []


# ------------------------------------------------------------------------ events


def test_pointer_events_take_a_target_instead_of_a_point() -> None:
    assert InputEvent.mouse_down(target="t_1").to_json() == {
        "type": "mouse_down",
        "target": "t_1",
        "button": "left",
    }
    assert InputEvent.mouse_up().to_json() == {"type": "mouse_up", "button": "left"}
    assert InputEvent.mouse_move(target="t_1").to_json() == {"type": "mouse_move", "target": "t_1"}
    with pytest.raises(ValueError, match="not both"):
        InputEvent.mouse_click(1, 2, target="t_1")
    with pytest.raises(ValueError, match="needs"):
        InputEvent.mouse_move()


# ------------------------------------------------------------------------- waits


def test_wait_for_a_target_sends_the_match_and_remembers_what_appeared(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("POST", WAIT, ok({"met": True, "waited_ms": 420, "target": SAVE}))

    result = session.wait_for("target", target=WaitTarget(name="save", role="button"))
    session.click(target="t_save")

    assert body_of(session_gateway.calls("POST", WAIT)[0]) == {
        "until": "target",
        "timeout_ms": 10_000,
        "target": {"name": "save", "role": "button"},
    }
    assert (result.met, result.waited_ms, result.target and result.target.id) == (
        True,
        420,
        "t_save",
    )
    assert body_of(session_gateway.last)["events"][0] == {
        "type": "mouse_click",
        "x": 140,
        "y": 50,
        "button": "left",
    }
    assert session_gateway.calls("GET", "/v1/sessions/ses_1/targets") == []


def test_wait_not_met_is_a_result_not_an_error(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("POST", WAIT, ok({"met": False, "waited_ms": 300, "target": None}))

    result = session.wait_for("quiet", timeout_ms=300, quiet_ms=150)

    assert body_of(session_gateway.last) == {"until": "quiet", "timeout_ms": 300, "quiet_ms": 150}
    assert (result.met, result.target) == (False, None)


def test_wait_timeout_extends_the_read_timeout(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("POST", WAIT, ok({"met": True, "waited_ms": 1, "target": None}))
    session.wait_for("change", timeout_ms=30_000)
    assert session_gateway.last.extensions["timeout"]["read"] == 30.0 + 30.0


def test_wait_name_shorthand_and_missing_target(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("POST", WAIT, ok({"met": False, "waited_ms": 5}))
    session.wait_for("target", target="Save", timeout_ms=5)
    assert body_of(session_gateway.last)["target"] == {"name": "Save"}
    with pytest.raises(ValueError, match="needs a target"):
        session.wait_for("target")
    assert len(session_gateway.calls("POST", WAIT)) == 1


# -------------------------------------------------------------------- batch 409s


def test_target_gone_carries_the_receipts_and_where_it_stopped(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    body = {
        "error": "target_gone: event 1: target t_x is gone",
        "events": [receipt(0, "mouse_move", x=5), receipt(1, "mouse_click", ok=False)],
        "stopped_at": 1,
    }
    session_gateway.on("POST", INPUT, httpx2.Response(409, json=body))

    with pytest.raises(TargetGoneError) as caught:
        session.act([InputEvent.mouse_move(5, 5), InputEvent.mouse_click(target="t_x")])

    error_ = caught.value
    assert isinstance(error_, ConflictError)
    assert (error_.code, error_.status, error_.stopped_at) == ("target_gone", 409, 1)
    assert [(r.index, r.ok) for r in error_.receipts] == [(0, True), (1, False)]
    assert error_.detail == "event 1: target t_x is gone"
    assert len(session_gateway.calls("POST", INPUT)) == 1  # a 409 is never retried


def test_stale_frame_carries_the_changed_rectangles(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    body = {"error": "stale_frame: changed near 10,20", "rects": [[0, 0, 40, 40], [5, 6, 7, 8]]}
    session_gateway.on("POST", INPUT, httpx2.Response(409, json=body))

    with pytest.raises(StaleFrameError) as caught:
        session.click(10, 20, frame_id="frm_1", require_unchanged=True)

    assert caught.value.rects == [(0, 0, 40, 40), (5, 6, 7, 8)]
    assert (caught.value.receipts, caught.value.stopped_at) == ([], None)


@pytest.mark.parametrize(
    ("code", "error_class"),
    [
        ("frame_expired", FrameExpiredError),
        ("expectation_failed", ExpectationFailedError),
        ("desktop_unavailable", DesktopUnavailableError),
        ("owner_active", OwnerActiveError),
    ],
)
def test_each_batch_code_has_its_error_class(
    session: SessionHandle,
    session_gateway: FakeGateway,
    code: str,
    error_class: type[InputStoppedError],
) -> None:
    session_gateway.on("POST", INPUT, error(409, f"{code}: why"))
    with pytest.raises(error_class) as caught:
        session.key("tab")
    assert (caught.value.code, caught.value.detail) == (code, "why")


def test_malformed_extras_still_give_the_typed_error(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    body = {"error": "stale_frame", "rects": [[1, 2]], "events": "nope", "stopped_at": "x"}
    session_gateway.on("POST", INPUT, httpx2.Response(409, json=body))
    with pytest.raises(StaleFrameError) as caught:
        session.key("tab")
    assert (caught.value.rects, caught.value.receipts, caught.value.stopped_at) == ([], [], None)


def test_other_conflicts_stay_plain(session: SessionHandle, session_gateway: FakeGateway) -> None:
    session_gateway.on("POST", INPUT, error(409, "rig_busy"))
    with pytest.raises(ConflictError) as caught:
        session.key("tab")
    assert not isinstance(caught.value, InputStoppedError)


def test_an_observation_names_its_frame_and_so_does_its_screenshot(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    jpeg = "/9g="  # any base64
    session_gateway.on(
        "GET", "/v1/sessions/ses_1/observe", ok(observe_json(jpeg_base64=jpeg, frame_id="frm_o"))
    )
    result = session.observe()
    shot = result.screenshot()
    assert result.frame_id == "frm_o"
    assert shot is not None
    assert shot.frame_id == "frm_o"
