"""Typed text a recording keeps: `[redacted]` while the focus is on a masked target, as
the targets the recorder last saw place it."""

from __future__ import annotations

from typing import Any

from rigway.gateway.recordings.redaction import redact_events

USER = {"id": "t_user", "x": 100, "y": 100, "w": 200, "h": 30, "focused": True, "masked": False}
PASSWORD = {"id": "t_pass", "x": 100, "y": 150, "w": 200, "h": 30, "focused": False, "masked": True}
PANE = {"id": "t_pane", "x": 0, "y": 0, "w": 800, "h": 600, "focused": False, "masked": False}
TARGETS = [PANE, USER, PASSWORD]


def _typed(events: list[dict[str, Any]], targets: list[dict[str, Any]]) -> list[Any]:
    return [e.get("text", e.get("key")) for e in redact_events(events, targets) if "x" not in e]


def test_text_into_a_focused_plain_field_is_kept() -> None:
    assert _typed([{"type": "type_text", "text": "alice"}], TARGETS) == ["alice"]


def test_text_into_a_focused_masked_field_is_redacted() -> None:
    focused_password = [PANE, {**USER, "focused": False}, {**PASSWORD, "focused": True}]
    assert _typed([{"type": "type_text", "text": "s3cret"}], focused_password) == ["[redacted]"]


def test_a_click_on_the_masked_field_redacts_what_follows_it() -> None:
    events: list[dict[str, Any]] = [
        {"type": "type_text", "text": "alice"},
        {"type": "mouse_click", "x": 150, "y": 160},
        {"type": "type_text", "text": "s3cret"},
        {"type": "key_press", "key": "x"},
        {"type": "key_press", "key": "enter"},
    ]
    assert _typed(events, TARGETS) == ["alice", "[redacted]", "[redacted]", "enter"]


def test_a_press_aimed_at_a_plain_target_by_id_ends_the_redaction() -> None:
    events = [
        {"type": "mouse_click", "target": "t_pass"},
        {"type": "type_text", "text": "s3cret"},
        {"type": "mouse_down", "target": "t_user"},
        {"type": "type_text", "text": "bob"},
    ]
    kept = redact_events(events, TARGETS)
    assert [e.get("text") for e in kept if e["type"] == "type_text"] == ["[redacted]", "bob"]


def test_a_press_on_no_known_target_keeps_the_focus_where_it_was() -> None:
    events: list[dict[str, Any]] = [
        {"type": "mouse_click", "x": 150, "y": 160},
        {"type": "mouse_click", "x": 1500, "y": 900},  # off every target
        {"type": "type_text", "text": "s3cret"},
    ]
    assert redact_events(events, TARGETS)[2]["text"] == "[redacted]"


def test_the_smallest_target_under_a_point_is_the_one_pressed() -> None:
    events: list[dict[str, Any]] = [
        {"type": "mouse_click", "x": 110, "y": 110},
        {"type": "type_text", "text": "x"},
    ]
    masked_pane = [{**PANE, "masked": True}, USER]
    assert redact_events(events, masked_pane)[1]["text"] == "x"


def test_without_targets_nothing_is_redacted() -> None:
    assert _typed([{"type": "type_text", "text": "alice"}], []) == ["alice"]


def test_the_events_given_are_left_unchanged() -> None:
    events = [{"type": "mouse_click", "target": "t_pass"}, {"type": "type_text", "text": "pw"}]
    redact_events(events, TARGETS)
    assert events[1]["text"] == "pw"
