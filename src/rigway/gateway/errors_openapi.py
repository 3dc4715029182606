"""OpenAPI declarations of the error responses, so the schema tells clients (and
schemathesis) what a route can answer: each status with its codes, an example body per
code, and the headers that come with it. The words follow `docs/api.md` (Errors)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class ErrorOut(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"error": "session_ended"}]},
    )
    error: str = Field(
        description=(
            'A stable code, then optionally ": " and a detail for people: split on the '
            "first `: ` to read the code."
        )
    )


_DESCRIPTIONS = {
    400: (
        "invalid_request: malformed JSON, a wrong type, a field out of bounds, an unknown "
        "field or event type, a point outside the desktop, an unknown key name"
    ),
    401: "invalid_api_key / invalid_console_token: the credential is missing, malformed, "
    "unknown or revoked",
    403: "api_access_disabled (the rig's owner turned API access off) / insufficient_scope "
    "(the key lacks the operation's scope)",
    404: "not found: an unknown id, or another account's (existence is never revealed)",
    409: (
        "conflict: rig_offline / rig_busy / webhook_limit / key_limit_reached / "
        "wake_unavailable / "
        "desktop_unavailable: <state> (input while the desktop is locked, …) / "
        "frame_expired (a frame id unknown or no longer kept) / "
        "human_in_control (input, or a second takeover, while a person drives the session)"
    ),
    410: "session_ended: the session ended or failed; do not retry",
    413: "invalid_request: the body is over the route's limit (64 KiB by default)",
    429: "rate_limited / concurrency_limit: retry after `Retry-After` seconds",
    502: "host_error: the host answered with an error, or is not connected",
    503: "unavailable: a store the gateway needs is down (retry after Retry-After)",
    504: "host_timeout: the host did not answer in time",
}

# One example body per code a status may carry; their names are the codes.
_EXAMPLES: dict[int, dict[str, str]] = {
    400: {"invalid_request": "invalid_request: quality: Input should be less than or equal to 100"},
    401: {"invalid_api_key": "invalid_api_key", "invalid_console_token": "invalid_console_token"},
    403: {
        "api_access_disabled": "api_access_disabled",
        "insufficient_scope": "insufficient_scope: this key lacks the 'input' scope",
    },
    404: {
        "session_not_found": "session_not_found",
        "rig_not_found": "rig_not_found",
        "not_found": "not_found: Not Found",
    },
    409: {
        "rig_offline": "rig_offline",
        "rig_busy": "rig_busy: the rig already has an active session, …",
        "desktop_unavailable": "desktop_unavailable: locked",
        "frame_expired": "frame_expired: take a fresh screenshot or observe",
        "webhook_limit": "webhook_limit",
        "key_limit_reached": "key_limit_reached",
        "wake_unavailable": "wake_unavailable",
        "human_in_control": "human_in_control: a person took control of this session",
    },
    410: {"session_ended": "session_ended"},
    413: {"invalid_request": "invalid_request: request body too large"},
    429: {
        "rate_limited": "rate_limited: request quota of 1200/minute",
        "concurrency_limit": "concurrency_limit",
    },
    502: {"host_error": "host_error: the host is not connected"},
    503: {"unavailable": "unavailable"},
    504: {"host_timeout": "host_timeout"},
}


def _integer_header(description: str) -> dict[str, Any]:
    return {"description": description, "schema": {"type": "integer"}}


RETRY_AFTER = {"Retry-After": _integer_header("Seconds until a call of the same cost fits again")}
RATE_LIMIT_HEADERS = {
    **RETRY_AFTER,
    "RateLimit-Limit": _integer_header("The quota that refused the call, per its window"),
    "RateLimit-Remaining": _integer_header("What remains of that quota now"),
    "RateLimit-Reset": _integer_header("Seconds until the quota has room again"),
}
_HEADERS: dict[int, dict[str, Any]] = {429: RATE_LIMIT_HEADERS, 503: RETRY_AFTER}


def _error_response(
    status: int, model: type[BaseModel], description: str, examples: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    response: dict[str, Any] = {
        "model": model,
        "description": description,
        "content": {
            "application/json": {
                "examples": {
                    name: {"summary": name, "value": value} for name, value in examples.items()
                }
            }
        },
    }
    if status in _HEADERS:
        response["headers"] = _HEADERS[status]
    return response


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    # 400 and 413 can follow from any body or query parameter, so every route has them.
    return {
        status: _error_response(
            status,
            ErrorOut,
            _DESCRIPTIONS[status],
            {name: {"error": text} for name, text in _EXAMPLES[status].items()},
        )
        for status in sorted({400, 413, *statuses})
    }


_INPUT_CONFLICTS = (
    "desktop_unavailable: <state> (nothing ran, or + events, stopped_at when it stopped "
    "part-way) / human_in_control (a person took control; nothing ran) / "
    "frame_expired (nothing ran) / stale_frame (+ rects; nothing ran) / "
    "target_gone / expectation_failed (+ events, stopped_at: the receipts of what ran)"
)
_RECEIPT = {
    "index": 0,
    "type": "mouse_click",
    "ok": True,
    "at_ms": 0,
    "x": 960,
    "y": 396,
    "changed": False,
}
_INPUT_CONFLICT_EXAMPLES: dict[str, dict[str, Any]] = {
    "desktop_unavailable": {"error": "desktop_unavailable: locked", "events": [], "stopped_at": 0},
    "frame_expired": {"error": "frame_expired: take a fresh screenshot or observe"},
    "human_in_control": {"error": "human_in_control: a person took control of this session"},
    "stale_frame": {
        "error": "stale_frame: the screen changed near the batch's points",
        "rects": [[900, 380, 120, 32]],
    },
    "target_gone": {
        "error": "target_gone: t_3f9a01c2de",
        "events": [{**_RECEIPT, "changed": True}, {**_RECEIPT, "index": 1, "ok": False}],
        "stopped_at": 1,
    },
    "expectation_failed": {
        "error": "expectation_failed: the screen did not change",
        "events": [{**_RECEIPT, "ok": False, "changed": False}],
        "stopped_at": 0,
    },
}


class RigConflictOut(ErrorOut):
    """A 409 of starting a session: `rig_offline`, or `rig_busy` naming the session
    that holds the rig."""

    active_session_id: str | None = Field(
        default=None,
        description=(
            "rig_busy: the rig's active session (end it with `DELETE "
            "/v1/sessions/{session_id}`); null when it ended meanwhile."
        ),
    )


_BUSY_SESSION = "ses_0f3c6a2b9d1e4f5a6b7c8d9e"
_RIG_CONFLICT_EXAMPLES: dict[str, dict[str, Any]] = {
    "rig_offline": {"error": "rig_offline"},
    "rig_busy": {
        "error": (
            f"rig_busy: the rig already has an active session, {_BUSY_SESSION}; end it with "
            f"DELETE /v1/sessions/{_BUSY_SESSION}, or wait for it to end"
        ),
        "active_session_id": _BUSY_SESSION,
    },
}


def session_start_error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """Starting a session's errors: its 409 `rig_busy` names the active session."""
    responses = error_responses(409, *statuses)
    responses[409] = _error_response(
        409,
        RigConflictOut,
        "rig_offline / rig_busy (+ active_session_id: the session holding the rig)",
        _RIG_CONFLICT_EXAMPLES,
    )
    return responses


def input_error_responses(
    conflict_model: type[BaseModel], *statuses: int
) -> dict[int | str, dict[str, Any]]:
    """The input route's errors: its 409 bodies may carry receipts or rectangles beside
    `error`, so they get a model of their own."""
    responses = error_responses(409, *statuses)
    responses[409] = _error_response(
        409, conflict_model, _INPUT_CONFLICTS, _INPUT_CONFLICT_EXAMPLES
    )
    return responses
