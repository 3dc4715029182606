"""The public input batch, checked whole before anything reaches the host: the new
pointer events, target-bound and expecting events, a batch's frame, coords, settle and
observe; and the `input/batch` the gateway builds from it (points mapped through the
frame, the frame's damage mark, a deadline covering the batch's own waits)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import ValidationError

from rigway.gateway.desktop.frames import Frame, FrameRegistry
from rigway.gateway.desktop.input_batch import STALE_RADIUS_PX, TARGET_LOOKUP_S, prepare
from rigway.gateway.desktop.schemas import InputBatchIn
from rigway.gateway.errors import Conflict, InvalidRequest
from rigway.gateway.sessions.live import LiveSession
from rigway.protocol import ops

SESSION = "ses_1"
MARGIN_S = 10.0
CLICK = {"type": "mouse_click", "x": 10, "y": 20}


def _batch(**fields: Any) -> InputBatchIn:
    # From JSON text, as the route parses it (strict: JSON has no tuples or bytes).
    return InputBatchIn.model_validate_json(json.dumps({"events": [CLICK], **fields}))


def _live(width: int = 1920, height: int = 1080) -> LiveSession:
    now = datetime.now(UTC)
    return LiveSession(
        id=SESSION,
        account_id="acc_1",
        rig_id="rig_1",
        api_key_id=None,
        mode="desktop",
        idle_timeout_s=600,
        started_at=now,
        last_activity_at=now,
        action_count=0,
        native_width=width,
        native_height=height,
        capture_mode="sim",
    )


def _downscaled(frames: FrameRegistry) -> Frame:
    """A 960x540 image of the whole 1920x1080 desktop, grabbed at damage mark 7."""
    return frames.remember(
        SESSION, region=(0, 0, 1920, 1080), image_width=960, image_height=540, damage_mark=7
    )


# ---- the public schema ----------------------------------------------------------------------

GOOD: dict[str, dict[str, Any]] = {
    "down_up_with_points": {
        "events": [
            {"type": "mouse_down", "x": 1, "y": 2},
            {"type": "mouse_move", "x": 50, "y": 2},
            {"type": "mouse_up", "x": 90, "y": 2, "button": "left"},
        ]
    },
    "down_up_where_the_pointer_is": {
        "events": [{"type": "mouse_down", "button": "right"}, {"type": "mouse_up"}]
    },
    "target_bound_click_and_move": {
        "events": [
            {"type": "mouse_move", "target": "t_0123456789"},
            {"type": "mouse_click", "target": "t_0123456789", "button": "middle"},
            {"type": "mouse_scroll", "target": "t_0123456789", "dy": -3},
        ]
    },
    "expect_on_any_event": {
        "events": [
            {"type": "key_press", "key": "enter", "expect": "change"},
            {"type": "type_text", "text": "a", "expect": "change", "expect_timeout_ms": 5000},
            {"type": "mouse_click", "x": 1, "y": 1, "expect": "change", "expect_timeout_ms": 1},
        ]
    },
    "frame_with_native_points": {"events": [CLICK], "frame_id": "frm_x"},
    "frame_with_image_points": {"events": [CLICK], "frame_id": "frm_x", "coords": "image"},
    "require_unchanged": {"events": [CLICK], "frame_id": "frm_x", "require_unchanged": True},
    "require_unchanged_false_without_frame": {"events": [CLICK], "require_unchanged": False},
    "settle_defaults": {"events": [CLICK], "settle": {}},
    "settle_bounds": {"events": [CLICK], "settle": {"quiet_ms": 2000, "timeout_ms": 2000}},
    "settle_lowest": {"events": [CLICK], "settle": {"quiet_ms": 20, "timeout_ms": 50}},
    "observe_defaults": {"events": [CLICK], "observe": {}},
    "observe_every_parameter": {
        "events": [CLICK],
        "observe": {
            "image": 1,
            "mark": 1,
            "max_width": 640,
            "quality": 40,
            "x": 0,
            "y": 0,
            "w": 100,
            "h": 100,
        },
    },
    "observe_without_image": {"events": [CLICK], "observe": {"image": 0}},
}


@pytest.mark.parametrize("body", GOOD.values(), ids=GOOD.keys())
def test_valid_batch_parses(body: dict[str, Any]) -> None:
    InputBatchIn.model_validate_json(json.dumps(body))


def _bad_event(**event: Any) -> dict[str, Any]:
    return {"events": [event]}


def _bad_batch(**fields: Any) -> dict[str, Any]:
    return {"events": [CLICK], **fields}


BAD: dict[str, dict[str, Any]] = {
    "target_with_x_y": _bad_event(type="mouse_click", x=1, y=1, target="t_1"),
    "target_on_a_key_event": _bad_event(type="key_press", key="a", target="t_1"),
    "target_on_type_text": _bad_event(type="type_text", text="a", target="t_1"),
    "target_empty": _bad_event(type="mouse_click", target=""),
    "target_65_chars": _bad_event(type="mouse_click", target="t" * 65),
    "target_number": _bad_event(type="mouse_click", target=5),
    "move_nowhere": _bad_event(type="mouse_move"),
    "move_x_only": _bad_event(type="mouse_move", x=1),
    "down_y_only": _bad_event(type="mouse_down", y=1),
    "up_unknown_button": _bad_event(type="mouse_up", button="thumb"),
    "down_extra_field": _bad_event(type="mouse_down", dx=1),
    "expect_unknown": _bad_event(type="key_press", key="a", expect="appear"),
    "expect_true": _bad_event(type="key_press", key="a", expect=True),
    "expect_timeout_0": _bad_event(type="key_press", key="a", expect="change", expect_timeout_ms=0),
    "expect_timeout_5001": _bad_event(
        type="key_press", key="a", expect="change", expect_timeout_ms=5001
    ),
    "expect_timeout_float": _bad_event(
        type="key_press", key="a", expect="change", expect_timeout_ms=10.0
    ),
    "expect_timeout_without_expect": _bad_event(type="key_press", key="a", expect_timeout_ms=10),
    "image_coords_without_frame": _bad_batch(coords="image"),
    "coords_unknown": _bad_batch(frame_id="frm_x", coords="screen"),
    "require_unchanged_without_frame": _bad_batch(require_unchanged=True),
    "require_unchanged_one": _bad_batch(frame_id="frm_x", require_unchanged=1),
    "frame_id_empty": _bad_batch(frame_id=""),
    "frame_id_65_chars": _bad_batch(frame_id="f" * 65),
    "frame_id_number": _bad_batch(frame_id=7),
    "settle_quiet_over_timeout": _bad_batch(settle={"quiet_ms": 600, "timeout_ms": 500}),
    "settle_default_quiet_over_timeout": _bad_batch(settle={"timeout_ms": 50}),
    "settle_quiet_19": _bad_batch(settle={"quiet_ms": 19}),
    "settle_quiet_2001": _bad_batch(settle={"quiet_ms": 2001, "timeout_ms": 10000}),
    "settle_timeout_49": _bad_batch(settle={"quiet_ms": 20, "timeout_ms": 49}),
    "settle_timeout_10001": _bad_batch(settle={"timeout_ms": 10001}),
    "settle_extra_field": _bad_batch(settle={"until": "quiet"}),
    "settle_true": _bad_batch(settle=True),
    "observe_image_2": _bad_batch(observe={"image": 2}),
    "observe_image_true": _bad_batch(observe={"image": True}),
    "observe_mark_string": _bad_batch(observe={"mark": "1"}),
    "observe_quality_39": _bad_batch(observe={"quality": 39}),
    "observe_max_width_15": _bad_batch(observe={"max_width": 15}),
    "observe_partial_region": _bad_batch(observe={"x": 0, "y": 0, "w": 10}),
    "observe_w_0": _bad_batch(observe={"x": 0, "y": 0, "w": 0, "h": 10}),
    "observe_unknown_parameter": _bad_batch(observe={"targets": 0}),
}


@pytest.mark.parametrize("body", BAD.values(), ids=BAD.keys())
def test_invalid_batch_refused(body: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        InputBatchIn.model_validate_json(json.dumps(body))


def test_refusal_names_what_is_wrong() -> None:
    with pytest.raises(ValidationError, match="x,y or a target, not both"):
        InputBatchIn.model_validate_json(json.dumps(BAD["target_with_x_y"]))
    with pytest.raises(ValidationError, match="needs a frame_id"):
        InputBatchIn.model_validate_json(json.dumps(BAD["image_coords_without_frame"]))
    with pytest.raises(ValidationError, match="quiet_ms cannot exceed timeout_ms"):
        InputBatchIn.model_validate_json(json.dumps(BAD["settle_quiet_over_timeout"]))


# ---- the batch the host gets ----------------------------------------------------------------


def test_native_points_go_as_given_with_no_field_the_batch_does_not_use() -> None:
    prepared = prepare(_live(), _batch(), FrameRegistry(), MARGIN_S)
    # An agent that predates the new fields still takes a batch that uses none.
    assert prepared.body == {
        "events": [{"type": "mouse_click", "x": 10, "y": 20, "button": "left"}]
    }
    assert prepared.timeout_s == MARGIN_S
    ops.InputBatch.model_validate({"session_id": SESSION, **prepared.body})


def test_image_points_are_mapped_through_the_frame() -> None:
    frames = FrameRegistry()
    frame = _downscaled(frames)
    batch = _batch(frame_id=frame.frame_id, coords="image")
    prepared = prepare(_live(), batch, frames, MARGIN_S)
    sent = prepared.body["events"][0]
    # Image pixel 10,20 of a half-size image covers native 20..21, 40..41; the frame
    # says which of them.
    assert (sent["x"], sent["y"]) == frame.to_native(10, 20)
    assert sent["x"] in (20, 21)
    assert sent["y"] in (40, 41)
    assert "require_unchanged" not in prepared.body


def test_a_frame_with_native_coords_leaves_points_native() -> None:
    frames = FrameRegistry()
    frame = _downscaled(frames)
    prepared = prepare(_live(), _batch(frame_id=frame.frame_id), frames, MARGIN_S)
    assert (prepared.body["events"][0]["x"], prepared.body["events"][0]["y"]) == (10, 20)


def test_an_image_point_outside_the_frame_image_is_refused() -> None:
    frames = FrameRegistry()
    frame = _downscaled(frames)
    body = {"events": [{"type": "mouse_click", "x": 960, "y": 10}]}
    batch = InputBatchIn.model_validate_json(
        json.dumps(body | {"frame_id": frame.frame_id, "coords": "image"})
    )
    with pytest.raises(InvalidRequest, match="outside the 960x540 image"):
        prepare(_live(), batch, frames, MARGIN_S)


def test_an_unknown_frame_is_409_frame_expired() -> None:
    frames = FrameRegistry()
    _downscaled(frames)
    with pytest.raises(Conflict) as refused:
        prepare(_live(), _batch(frame_id="frm_unknown"), frames, MARGIN_S)
    assert refused.value.code == "frame_expired"


def test_another_sessions_frame_is_409_frame_expired() -> None:
    frames = FrameRegistry()
    other = frames.remember(
        "ses_2", region=(0, 0, 100, 100), image_width=100, image_height=100, damage_mark=1
    )
    with pytest.raises(Conflict, match="frame"):
        prepare(_live(), _batch(frame_id=other.frame_id), frames, MARGIN_S)


def test_a_native_point_outside_the_desktop_is_refused() -> None:
    batch = InputBatchIn.model_validate_json(
        json.dumps({"events": [CLICK, {"type": "mouse_down", "x": 1920, "y": 0}]})
    )
    with pytest.raises(InvalidRequest, match="event 1: point 1920,0 lies outside"):
        prepare(_live(), batch, FrameRegistry(), MARGIN_S)


def test_require_unchanged_sends_the_frames_damage_mark() -> None:
    frames = FrameRegistry()
    frame = _downscaled(frames)
    batch = _batch(frame_id=frame.frame_id, require_unchanged=True)
    prepared = prepare(_live(), batch, frames, MARGIN_S)
    assert prepared.body["require_unchanged"] == {"damage_mark": 7}  # radius: the default
    sent = ops.InputBatch.model_validate({"session_id": SESSION, **prepared.body})
    assert sent.require_unchanged == ops.RequireUnchanged(damage_mark=7, radius_px=STALE_RADIUS_PX)


def test_the_deadline_covers_delays_expectations_settle_and_target_lookups() -> None:
    events = [
        {"type": "mouse_click", "target": "t_1", "delay_ms": 300},
        {"type": "key_press", "key": "a", "expect": "change", "expect_timeout_ms": 2500},
        {"type": "key_press", "key": "b", "expect": "change"},
        {"type": "key_press", "key": "c", "expect_timeout_ms": 4000, "expect": "change"},
    ]
    body = {"events": events, "settle": {"quiet_ms": 100, "timeout_ms": 3000}}
    prepared = prepare(
        _live(), InputBatchIn.model_validate_json(json.dumps(body)), FrameRegistry(), 10.0
    )
    assert prepared.timeout_s == pytest.approx(10.0 + 0.3 + 2.5 + 1.0 + 4.0 + 3.0 + TARGET_LOOKUP_S)
    sent = ops.InputBatch.model_validate({"session_id": SESSION, **prepared.body})
    assert [e.expect_timeout_ms for e in sent.events[1:]] == [2500, 1000, 4000]
    assert sent.events[0].target == "t_1"
    assert sent.settle == ops.Settle(quiet_ms=100, timeout_ms=3000)


def test_an_observe_region_outside_the_desktop_is_refused_before_anything_runs() -> None:
    batch = _batch(observe={"x": 1900, "y": 0, "w": 100, "h": 10})
    with pytest.raises(InvalidRequest, match="observe: region"):
        prepare(_live(), batch, FrameRegistry(), MARGIN_S)


def test_observe_params_are_those_of_get_observe() -> None:
    batch = _batch(observe={"max_width": 640, "quality": 50, "x": 0, "y": 0, "w": 800, "h": 600})
    prepared = prepare(_live(), batch, FrameRegistry(), MARGIN_S)
    assert prepared.observe_params is not None
    assert prepared.observe_params.quality == 50
    assert prepared.observe_params.max_width == 640
    assert prepared.observe_params.region == ops.Region(x=0, y=0, w=800, h=600)
    assert "observe" not in prepared.body  # the gateway's own, after the host answered
