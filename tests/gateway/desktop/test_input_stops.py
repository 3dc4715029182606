"""A batch refused or stopped on the host, as its 409: what the failed reply's body
says reaches the caller, and a malformed body leaves the error alone."""

from __future__ import annotations

from typing import Any

from rigway.gateway.desktop.input_stops import input_conflict
from rigway.gateway.hostlink.connection import HostOpError
from rigway.protocol import ops


def _receipt(index: int, *, ok: bool) -> dict[str, Any]:
    return ops.EventReceipt(
        index=index, type="mouse_click", ok=ok, at_ms=12.6, x=3, y=4, changed=ok
    ).model_dump()


def _body(code: str, detail: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    return input_conflict(HostOpError(code, detail, body), "locked").body()


def test_stopped_part_way_carries_the_receipts_of_what_ran() -> None:
    stopped = {"events": [_receipt(0, ok=True), _receipt(1, ok=False)], "stopped_at": 1}
    body = _body(ops.ERROR_TARGET_GONE, "event 1: target t_1 is gone", stopped)
    assert body == {
        "error": "target_gone: event 1: target t_1 is gone",
        "events": [
            {
                "index": 0,
                "type": "mouse_click",
                "ok": True,
                "at_ms": 13,
                "x": 3,
                "y": 4,
                "changed": True,
            },
            {
                "index": 1,
                "type": "mouse_click",
                "ok": False,
                "at_ms": 13,
                "x": 3,
                "y": 4,
                "changed": False,
            },
        ],
        "stopped_at": 1,
    }


def test_expectation_failed_is_a_409_of_its_own_code() -> None:
    stopped = {"events": [_receipt(0, ok=False)], "stopped_at": 0}
    error = input_conflict(
        HostOpError(ops.ERROR_EXPECTATION_FAILED, "no change", stopped), "normal"
    )
    assert (error.status, error.code) == (409, "expectation_failed")
    assert error.body()["stopped_at"] == 0


def test_stale_frame_carries_its_rectangles() -> None:
    body = _body(ops.ERROR_STALE_FRAME, "changed near", {"rects": [[1, 2, 3, 4]]})
    assert body == {"error": "stale_frame: changed near", "rects": [[1, 2, 3, 4]]}


def test_desktop_unavailable_names_the_state_not_the_hosts_text() -> None:
    stopped = {"events": [], "stopped_at": 0}
    body = _body(ops.ERROR_DESKTOP_UNAVAILABLE, "<b>locked</b>", stopped)
    assert body == {"error": "desktop_unavailable: locked", "events": [], "stopped_at": 0}


def test_without_a_body_the_error_stands_alone() -> None:
    assert _body(ops.ERROR_DESKTOP_UNAVAILABLE, "locked") == {
        "error": "desktop_unavailable: locked"
    }
    assert _body(ops.ERROR_TARGET_GONE, "gone") == {"error": "target_gone: gone"}
    assert _body(ops.ERROR_STALE_FRAME, "changed") == {"error": "stale_frame: changed", "rects": []}


def test_a_malformed_body_leaves_the_error_alone() -> None:
    malformed = {"events": [{"index": -1}], "stopped_at": "first"}
    assert _body(ops.ERROR_EXPECTATION_FAILED, "no change", malformed) == {
        "error": "expectation_failed: no change"
    }
