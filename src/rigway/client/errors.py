"""Errors raised by the Rigway SDK: one class per condition.

Every error carries the same five attributes, so a handler never has to know which
subclass it caught to log it: `code` (the gateway's stable snake_case code, or an SDK
code such as `connection_error`), `status` (the HTTP status, None without a response),
`request_id` (the `X-Request-Id` response header, when the gateway sent one), `detail`
(the human sentence after the code, or None) and `message`.

The gateway's error body is `{"error": "<code>"}` or `{"error": "<code>: <detail>"}`;
the SDK splits it on the first `": "` (docs/api.md, Errors).

```
RigwayError                         base of everything this SDK raises
├── APIStatusError                  the gateway answered with an error status
│   ├── BadRequestError             400 invalid_request
│   ├── AuthenticationError         401 invalid_api_key / invalid_console_token   STOP
│   ├── PermissionDeniedError       403 api_access_disabled / insufficient_scope   STOP
│   ├── NotFoundError               404 rig_not_found, session_not_found, …
│   ├── ConflictError               409 rig_offline, rig_busy, wake_unavailable, …
│   │   ├── RigBusyError            409 rig_busy: the rig has a session (.active_session_id)
│   │   └── InputStoppedError       409 an input batch stopped or was refused
│   │       ├── TargetGoneError         target_gone: a target-bound event's control is gone
│   │       ├── ExpectationFailedError  expectation_failed: `expect: "change"` saw none
│   │       ├── StaleFrameError         stale_frame: the screen changed near the points
│   │       ├── FrameExpiredError       frame_expired: the frame id is unknown or forgotten
│   │       ├── DesktopUnavailableError desktop_unavailable: locked, secure desktop, …
│   │       └── OwnerActiveError        owner_active: the rig's owner uses its own input
│   ├── SessionEndedError           410 session_ended                              STOP
│   ├── RateLimitError              429 rate_limited / concurrency_limit (.retry_after)
│   ├── HostError                   502 host_error
│   ├── HostTimeoutError            504 host_timeout
│   └── InternalServerError         any other 5xx
├── APIConnectionError              no response: DNS, refused, reset, TLS
│   └── APITimeoutError             the request timed out on the client side
├── APIResponseValidationError      a 2xx whose body does not have the documented shape
├── TargetNotFoundError             `click(target="…")` names a target the SDK has not seen
├── AmbiguousTargetError            `click(target="name")` matches several targets
├── NoRigAvailableError             `sessions.create()` without a rig: no rig can take one
├── AmbiguousRigError               `sessions.create()` without a rig: several could
└── UnsupportedActionError          a computer-use action the Rigway input API cannot do
```

The STOP errors are never retried by the SDK (retrying cannot succeed: the key is bad,
the owner switched API access off, or the session is over). 429, 502, 503, 504 and
connection failures are retried with backoff before they surface here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import httpx2

if TYPE_CHECKING:
    from ._input_models import EventReceipt
    from ._screen_models import Target
    from .models import Rig

__all__ = [
    "APIConnectionError",
    "APIResponseValidationError",
    "APIStatusError",
    "APITimeoutError",
    "AmbiguousRigError",
    "AmbiguousTargetError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "DesktopUnavailableError",
    "ExpectationFailedError",
    "FrameExpiredError",
    "HostError",
    "HostTimeoutError",
    "InputStoppedError",
    "InternalServerError",
    "NoRigAvailableError",
    "NotFoundError",
    "OwnerActiveError",
    "PermissionDeniedError",
    "RateLimitError",
    "RigBusyError",
    "RigwayError",
    "SessionEndedError",
    "StaleFrameError",
    "TargetGoneError",
    "TargetNotFoundError",
    "UnsupportedActionError",
]


class RigwayError(Exception):
    """Base class of every error the SDK raises.

    Attributes:
        code: stable snake_case code (the gateway's, or an SDK one).
        status: HTTP status of the response, None when there was none.
        request_id: the gateway's `X-Request-Id` for this response, when present.
        detail: the human sentence after the code, None when the gateway sent none.
        message: the whole human-readable message.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        status: int | None = None,
        request_id: str | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status
        self.request_id = request_id
        self.detail = detail

    def __str__(self) -> str:
        if self.request_id is None:
            return self.message
        return f"{self.message} (request id {self.request_id})"


class APIStatusError(RigwayError):
    """The gateway answered with a non-2xx status; `response` is the raw response."""

    def __init__(
        self,
        message: str,
        *,
        code: str,
        response: httpx2.Response,
        request_id: str | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(
            message,
            code=code,
            status=response.status_code,
            request_id=request_id,
            detail=detail,
        )
        self.response = response


class BadRequestError(APIStatusError):
    """400: the request was malformed or out of bounds (`invalid_request`); fix and resend."""


class AuthenticationError(APIStatusError):
    """401: the API key or console token is missing, malformed, unknown or revoked. Stop."""


class PermissionDeniedError(APIStatusError):
    """403: the rig's owner has not enabled API access, or the key lacks a scope. Stop."""


class NotFoundError(APIStatusError):
    """404: unknown id, or one that belongs to another account."""


class ConflictError(APIStatusError):
    """409: the rig is offline or busy, the webhook limit is reached, wake is unavailable,
    or an input batch stopped or was refused (`InputStoppedError` and its subclasses)."""


class RigBusyError(ConflictError):
    """409 rig_busy: the rig already has an active session, so no other can start.

    Attributes:
        active_session_id: the session holding the rig (None when it ended between the
            refusal and the gateway's look-up: then simply try again). If it is yours,
            `client.sessions.end(active_session_id)` ends it; the message says so.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        response: httpx2.Response,
        request_id: str | None = None,
        detail: str | None = None,
        active_session_id: str | None = None,
    ) -> None:
        if active_session_id is not None:
            message = (
                f"{message} (to end it: client.sessions.end({active_session_id!r}), "
                f"or `rigway sessions end {active_session_id}`)"
            )
        super().__init__(
            message, code=code, response=response, request_id=request_id, detail=detail
        )
        self.active_session_id = active_session_id


class InputStoppedError(ConflictError):
    """409: an input batch stopped on the host, or was refused before anything ran.

    Attributes:
        receipts: what each event that ran did (`EventReceipt`s, in order); the event
            at `stopped_at` has its own receipt with `ok` False. Empty when nothing ran.
        stopped_at: index of the event the batch stopped at; None when it was refused
            whole (stale_frame, frame_expired, and desktop_unavailable before any event).
        rects: for stale_frame, the native `(x, y, w, h)` rectangles that changed near
            the batch's points since the frame (it may over-report, never under-report).
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        response: httpx2.Response,
        request_id: str | None = None,
        detail: str | None = None,
        receipts: Sequence[EventReceipt] = (),
        stopped_at: int | None = None,
        rects: Sequence[tuple[int, int, int, int]] = (),
    ) -> None:
        super().__init__(
            message, code=code, response=response, request_id=request_id, detail=detail
        )
        self.receipts: list[EventReceipt] = list(receipts)
        self.stopped_at = stopped_at
        self.rects: list[tuple[int, int, int, int]] = list(rects)


class TargetGoneError(InputStoppedError):
    """409 target_gone: a target-bound event's control was not in the host's fresh
    accessibility snapshot; the batch stopped there (`stopped_at`)."""


class ExpectationFailedError(InputStoppedError):
    """409 expectation_failed: an event with `expect: "change"` saw no change within its
    `expect_timeout_ms`; the batch stopped there (`stopped_at`)."""


class StaleFrameError(InputStoppedError):
    """409 stale_frame: with `require_unchanged`, the screen changed near the batch's
    points since its frame; nothing ran. `rects` says where: look again, then act."""


class FrameExpiredError(InputStoppedError):
    """409 frame_expired: the batch's `frame_id` is unknown or forgotten (the gateway
    keeps at least the last 16 frames of a session); nothing ran. Take a new frame."""


class DesktopUnavailableError(InputStoppedError):
    """409 desktop_unavailable: the desktop cannot take input now (`detail` is its
    state: locked, secure_desktop, screensaver, …); what ran before is in `receipts`."""


class OwnerActiveError(InputStoppedError):
    """409 owner_active: someone uses the rig's own keyboard or mouse; nothing ran. API
    input is accepted again once the rig rested for the owner's delay (the session's
    `owner_active` reads false)."""


class SessionEndedError(APIStatusError):
    """410: the session has ended or failed; start a new one. Stop."""


class RateLimitError(APIStatusError):
    """429: a request, input-event or concurrent-session quota is exhausted.

    Raised only after the SDK's own retries, or at once when the gateway asks for a wait
    longer than the SDK is willing to sleep silently.

    Attributes:
        retry_after: seconds the gateway asked to wait (`Retry-After`), or None.
        limit: the quota (`RateLimit-Limit`), or None.
        remaining: what is left of it (`RateLimit-Remaining`), or None.
        reset: seconds until it resets (`RateLimit-Reset`), or None.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str,
        response: httpx2.Response,
        request_id: str | None = None,
        detail: str | None = None,
        retry_after: float | None = None,
        limit: int | None = None,
        remaining: int | None = None,
        reset: int | None = None,
    ) -> None:
        super().__init__(
            message, code=code, response=response, request_id=request_id, detail=detail
        )
        self.retry_after = retry_after
        self.limit = limit
        self.remaining = remaining
        self.reset = reset


class HostError(APIStatusError):
    """502: the rig's host agent answered with an error (`detail` says which)."""


class HostTimeoutError(APIStatusError):
    """504: the rig's host agent did not answer in time (5 s for screens, 10 s otherwise)."""


class InternalServerError(APIStatusError):
    """Any other 5xx: the gateway (or a proxy in front of it) failed."""


class APIConnectionError(RigwayError):
    """No response arrived: the connection could not be made or broke mid-request."""

    def __init__(self, message: str, *, code: str = "connection_error") -> None:
        super().__init__(message, code=code)


class APITimeoutError(APIConnectionError):
    """The request timed out on the client side (see the client's `timeout`)."""

    def __init__(self, message: str = "request timed out") -> None:
        super().__init__(message, code="timeout")


class APIResponseValidationError(RigwayError):
    """A successful response did not have the documented shape (a gateway/SDK mismatch)."""

    def __init__(
        self,
        message: str,
        *,
        response: httpx2.Response,
        request_id: str | None = None,
    ) -> None:
        super().__init__(
            message,
            code="invalid_response",
            status=response.status_code,
            request_id=request_id,
        )
        self.response = response


class TargetNotFoundError(RigwayError, LookupError):
    """`click(target=…)` named a target (id, name or index) that is not among the
    session's latest targets. `target_id` is what was asked for, as text."""

    def __init__(self, target_id: str, *, message: str | None = None) -> None:
        super().__init__(
            message or f"target {target_id!r} is not among the latest targets of this session",
            code="target_not_found",
        )
        self.target_id = target_id


class AmbiguousTargetError(RigwayError, LookupError):
    """A target named by text matches several of the latest targets.

    Attributes:
        name: the text given.
        candidates: the matching targets, in the order observe listed them; pick one by
            its id or its 1-based index instead.
    """

    def __init__(self, name: str, candidates: Sequence[Target]) -> None:
        shown = ", ".join(
            f"{target.name!r} ({target.role}, id {target.id})" for target in candidates[:10]
        )
        more = f" and {len(candidates) - 10} more" if len(candidates) > 10 else ""
        super().__init__(
            f"target name {name!r} matches {len(candidates)} targets: {shown}{more}; "
            "name one by its id or index instead",
            code="ambiguous_target",
        )
        self.name = name
        self.candidates: list[Target] = list(candidates)


def _rig_lines(rigs: Sequence[Rig]) -> str:
    return ", ".join(f"{rig.id} ({rig.name!r})" for rig in rigs)


class NoRigAvailableError(RigwayError, LookupError):
    """`sessions.create()` was given no rig and none of the account's rigs is online
    with API access enabled. `rigs` are all the account's rigs, as listed."""

    def __init__(self, rigs: Sequence[Rig]) -> None:
        if not rigs:
            message = (
                "no rig to start a session on: the account has no rigs "
                "(pair one with `rigway agent pair`, or run `rigway up` for a local one)"
            )
        else:
            message = (
                "no rig to start a session on: none is online with API access enabled "
                f"(the account's rigs: {_rig_lines(rigs)}); start its host agent, or "
                "enable API access in the console, then pass rig_id="
            )
        super().__init__(message, code="no_rig_available")
        self.rigs: list[Rig] = list(rigs)


class AmbiguousRigError(RigwayError, LookupError):
    """`sessions.create()` was given no rig and several are online with API access
    enabled. `candidates` are those rigs; pass one's id as `rig_id=`."""

    def __init__(self, candidates: Sequence[Rig]) -> None:
        super().__init__(
            f"{len(candidates)} rigs are online with API access enabled, pass rig_id= to "
            f"choose one: {_rig_lines(candidates)}",
            code="ambiguous_rig",
        )
        self.candidates: list[Rig] = list(candidates)


class UnsupportedActionError(RigwayError, ValueError):
    """A computer-use action that the Rigway input API cannot perform, or malformed input.

    The message is written to be handed back to the model as a tool error, so it can
    pick another way to reach its goal.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message, code="unsupported_action")
