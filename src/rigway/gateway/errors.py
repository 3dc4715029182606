"""Domain errors that carry their HTTP status and stable code, rendered by one handler.

Body: `{"error": "<code>"}` or `{"error": "<code>: <detail>"}` (docs/api.md, Errors).

    ApiError
    ├── InvalidRequest            400 invalid_request
    ├── InvalidApiKey             401 invalid_api_key
    ├── InvalidConsoleToken       401 invalid_console_token
    ├── ApiAccessDisabled         403 api_access_disabled
    ├── InsufficientScope         403 insufficient_scope
    ├── OwnerForbids              403 mode_not_allowed / recording_not_allowed (owner controls)
    ├── NotFound                  404 <thing>_not_found
    ├── Conflict                  409 rig_offline / rig_busy / webhook_limit / wake_unavailable
    │   │                             / key_limit_reached (50 active API keys already)
    │   │                             / desktop_unavailable: <state> (input refused, nothing ran)
    │   │                             / frame_expired (a frame id unknown or forgotten)
    │   ├── RigBusy               409 rig_busy (+ active_session_id)
    │   └── InputConflict         409 target_gone / expectation_failed / desktop_unavailable
    │                                 (+ events, stopped_at) / stale_frame (+ rects)
    ├── SessionEnded              410 session_ended
    ├── RateLimited               429 rate_limited / concurrency_limit (+ headers)
    ├── HostError                 502 host_error
    ├── ServiceUnavailable        503 unavailable (+ Retry-After)
    └── HostTimeout               504 host_timeout
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse


class ApiError(Exception):
    status: int = 500
    code: str = "internal_error"

    def __init__(self, detail: str = "", *, code: str | None = None) -> None:
        super().__init__(detail or self.code)
        self.detail = detail
        if code is not None:
            self.code = code
        self.headers: dict[str, str] = {}

    def body(self) -> dict[str, Any]:
        return {"error": f"{self.code}: {self.detail}" if self.detail else self.code}


class InvalidRequest(ApiError):
    status = 400
    code = "invalid_request"


class InvalidApiKey(ApiError):
    status = 401
    code = "invalid_api_key"


class InvalidConsoleToken(ApiError):
    status = 401
    code = "invalid_console_token"


class ApiAccessDisabled(ApiError):
    status = 403
    code = "api_access_disabled"


class InsufficientScope(ApiError):
    status = 403
    code = "insufficient_scope"


class OwnerForbids(ApiError):
    """The rig's owner does not allow what the session asks for."""

    status = 403
    code = "mode_not_allowed"


class NotFound(ApiError):
    status = 404
    code = "not_found"


class Conflict(ApiError):
    status = 409
    code = "conflict"


class InputConflict(Conflict):
    """A 409 of the input route that says more than its error: the receipts of what ran
    and where the batch stopped, or the rectangles that changed near its points."""

    def __init__(self, detail: str, *, code: str, extra: dict[str, Any]) -> None:
        super().__init__(detail, code=code)
        self.extra = extra

    def body(self) -> dict[str, Any]:
        return super().body() | self.extra


class RigBusy(Conflict):
    """409 `rig_busy`: the body names the rig's active session (`active_session_id`,
    null when it ended between the refusal and the look-up) so the caller can end it."""

    def __init__(self, active_session_id: str | None) -> None:
        if active_session_id is None:
            detail = "the rig already has an active session; start again once it has ended"
        else:
            detail = (
                f"the rig already has an active session, {active_session_id}; "
                f"end it with DELETE /v1/sessions/{active_session_id}, or wait for it to end"
            )
        super().__init__(detail, code="rig_busy")
        self.active_session_id = active_session_id

    def body(self) -> dict[str, Any]:
        return super().body() | {"active_session_id": self.active_session_id}


class SessionEnded(ApiError):
    status = 410
    code = "session_ended"


class RateLimited(ApiError):
    status = 429
    code = "rate_limited"

    def __init__(
        self, detail: str = "", *, code: str | None = None, headers: dict[str, str]
    ) -> None:
        super().__init__(detail, code=code)
        self.headers = headers


class HostError(ApiError):
    status = 502
    code = "host_error"


class ServiceUnavailable(ApiError):
    """A store the gateway needs is down; retrying later may work."""

    status = 503
    code = "unavailable"

    def __init__(self, detail: str = "", *, retry_after_s: int = 5) -> None:
        super().__init__(detail)
        self.headers = {"Retry-After": str(retry_after_s)}


class HostTimeout(ApiError):
    status = 504
    code = "host_timeout"


def rig_not_found() -> NotFound:
    return NotFound(code="rig_not_found")


def session_not_found() -> NotFound:
    return NotFound(code="session_not_found")


def desktop_unavailable(state: str) -> Conflict:
    """Input refused while the desktop is not "normal"; the detail is its state."""
    return Conflict(state, code="desktop_unavailable")


def human_in_control() -> Conflict:
    """API input while a person who took control of the session drives it (takeover):
    screenshots and observe still work; input again once they hand control back."""
    return Conflict("a person took control of this session", code="human_in_control")


def frame_expired(frame_id: str) -> Conflict:
    """A frame id this session was never shown, or one too old to be kept (the last
    frames of a session are): the caller takes a fresh screenshot or observe."""
    return Conflict(f"frame {frame_id} is unknown or no longer kept", code="frame_expired")


def input_stopped(
    code: str, detail: str, events: list[dict[str, Any]], stopped_at: int
) -> InputConflict:
    """A batch the host stopped part-way (target_gone, expectation_failed,
    desktop_unavailable): `events` are the receipts of what ran, the one at `stopped_at`
    (ok false) the event that stopped it."""
    return InputConflict(detail, code=code, extra={"events": events, "stopped_at": stopped_at})


def stale_frame(detail: str, rects: list[tuple[int, int, int, int]]) -> InputConflict:
    """The screen changed near the batch's points since its frame: nothing ran."""
    return InputConflict(detail, code="stale_frame", extra={"rects": [list(r) for r in rects]})


def api_error_response(exc: ApiError) -> JSONResponse:
    """The one rendering of an ApiError, for the app's handler."""
    return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers)


def internal_error_response() -> JSONResponse:
    """The one rendering of an unexpected error (logged by the caller), for the app's
    500 handler."""
    return JSONResponse({"error": "internal_error"}, status_code=500)
