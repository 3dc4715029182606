"""OpenAPI declarations of the error responses, so the schema tells clients (and
schemathesis) what a route can answer."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel


class ErrorOut(BaseModel):
    error: str


_DESCRIPTIONS = {
    400: "invalid_request",
    401: "invalid_api_key / invalid_console_token",
    403: "api_access_disabled / insufficient_scope",
    404: "not found (or another account's)",
    409: (
        "conflict: rig_offline / rig_busy / webhook_limit / key_limit_reached / "
        "wake_unavailable / "
        "desktop_unavailable: <state> (input while the desktop is locked, …) / "
        "frame_expired (a frame id unknown or no longer kept)"
    ),
    410: "session_ended",
    413: "request body too large",
    429: "rate_limited / concurrency_limit",
    502: "host_error",
    503: "unavailable: a store the gateway needs is down (retry after Retry-After)",
    504: "host_timeout",
}


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    # 400 and 413 can follow from any body or query parameter, so every route has them.
    return {
        status: {"model": ErrorOut, "description": _DESCRIPTIONS[status]}
        for status in sorted({400, 413, *statuses})
    }


_INPUT_CONFLICTS = (
    "desktop_unavailable: <state> (nothing ran, or + events, stopped_at when it stopped "
    "part-way) / frame_expired (nothing ran) / stale_frame (+ rects; nothing ran) / "
    "target_gone / expectation_failed (+ events, stopped_at: the receipts of what ran)"
)


def input_error_responses(
    conflict_model: type[BaseModel], *statuses: int
) -> dict[int | str, dict[str, Any]]:
    """The input route's errors: its 409 bodies may carry receipts or rectangles beside
    `error`, so they get a model of their own."""
    responses = error_responses(409, *statuses)
    responses[409] = {"model": conflict_model, "description": _INPUT_CONFLICTS}
    return responses
