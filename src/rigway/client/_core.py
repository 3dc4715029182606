"""The I/O-free core shared by the sync and async clients.

Everything that decides something lives here as a small pure function over named
constants: where a request goes and what it carries (`build_request`), what an answer
means (`Operation.decode`, `status_error`), and whether and how long to wait before
trying again (`retry_delay`). `_sync.py` and `_async.py` only move bytes and sleep.
"""

from __future__ import annotations

import email.utils
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import httpx2
import pydantic

from rigway import __version__

from ._input_models import EventReceipt
from .errors import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    DesktopUnavailableError,
    ExpectationFailedError,
    FrameExpiredError,
    HostError,
    HostTimeoutError,
    InputStoppedError,
    InternalServerError,
    NotFoundError,
    OwnerActiveError,
    PermissionDeniedError,
    RateLimitError,
    RigBusyError,
    RigwayError,
    SessionEndedError,
    StaleFrameError,
    TargetGoneError,
)
from .local_config import (
    LOCAL_JSON_NAME,
    LOCAL_STATE_DIR_NAME,
    LocalConfig,
    load_local_config,
)

T = TypeVar("T")
M = TypeVar("M", bound=pydantic.BaseModel)

# ------------------------------------------------------------------ configuration

API_KEY_ENV = "RIGWAY_API_KEY"
CONSOLE_TOKEN_ENV = "RIGWAY_CONSOLE_TOKEN"  # noqa: S105 (a variable name, not a secret)
BASE_URL_ENV = "RIGWAY_BASE_URL"
DEFAULT_BASE_URL = "http://127.0.0.1:8080"

# The gateway waits up to 10 s for the host (session start, input, apps) and answers
# 504 after that, so a 30 s read timeout never cuts off an answer that is coming.
DEFAULT_TIMEOUT = httpx2.Timeout(30.0, connect=5.0)
DEFAULT_MAX_RETRIES = 2
USER_AGENT = f"rigway-python/{__version__}"
REQUEST_ID_HEADER = "X-Request-Id"

# ---------------------------------------------------------------------- retries

# Statuses that mean "try again later": quota (429), host trouble (502, 504), a gateway
# or proxy that is briefly unavailable (503). The stop errors (401, 403, 410) and every
# other 4xx are never here: repeating the same request cannot change their answer.
RETRYABLE_STATUSES: frozenset[int] = frozenset({429, 502, 503, 504})
# For operations that act on the desktop (input, app launch) a 502/504 is ambiguous:
# the host may have run part of the batch before it failed or went quiet, and replaying
# it would type the text twice. Only answers given before anything ran are retried.
UNACTED_STATUSES: frozenset[int] = frozenset({429, 503})

INITIAL_RETRY_DELAY_S = 0.5
MAX_RETRY_DELAY_S = 8.0
# Up to this fraction of each backoff is randomly shaved off, so that many clients
# rejected together do not come back together.
RETRY_JITTER_RATIO = 0.25
# A longer Retry-After is not slept through silently: the error surfaces with
# `retry_after` set and the caller decides (a blocked agent loop should know).
MAX_RETRY_AFTER_S = 60.0

# Transport errors raised before the request left this process: replaying is always
# safe, whatever the operation.
_UNSENT_ERRORS: tuple[type[httpx2.TransportError], ...] = (
    httpx2.ConnectError,
    httpx2.ConnectTimeout,
    httpx2.PoolTimeout,
)


def resolve_credential(
    value: str | None, env_name: str, what: str, local_value: str | None = None
) -> str:
    """The credential given, else the environment variable `env_name`, else `local_value`
    (from `.rigway/local.json`); raise, naming every way to pass it, if none has it.
    """
    for candidate in (value, os.environ.get(env_name), local_value):
        if candidate is not None and candidate != "":
            return candidate
    raise RigwayError(
        f"no {what}: pass it to the client, set {env_name}, or run `rigway up` in this "
        f"directory or a parent (it writes {LOCAL_STATE_DIR_NAME}/{LOCAL_JSON_NAME})",
        code=f"missing_{what.replace(' ', '_')}",
    )


def resolve_base_url(value: str | None, local_value: str | None = None) -> str:
    """The base URL given, else `RIGWAY_BASE_URL`, else `local_value` (from
    `.rigway/local.json`), else the local default; without a trailing /."""
    for candidate in (value, os.environ.get(BASE_URL_ENV), local_value):
        if candidate is not None and candidate != "":
            return candidate.rstrip("/")
    return DEFAULT_BASE_URL


def resolve_connection(
    token: str | None, base_url: str | None, *, env_name: str, what: str
) -> tuple[str, str]:
    """The token and base URL a client uses: each from its argument, else its
    environment variable, else `.rigway/local.json` (read only when one is missing).

    The console token is `local.json`'s `console_token`, any other is its `api_key`.
    """
    local = LocalConfig()
    if token is None or base_url is None:
        local = load_local_config()
    local_token = local.console_token if env_name == CONSOLE_TOKEN_ENV else local.api_key
    return (
        resolve_credential(token, env_name, what, local_token),
        resolve_base_url(base_url, local.base_url),
    )


# -------------------------------------------------------------------- operations


@dataclass(frozen=True)
class Operation(Generic[T]):
    """One API call, described as data: built by `_operations`, run by a client.

    `is_idempotent` says whether repeating the call after an *ambiguous* failure (a read
    timeout, a dropped connection) is harmless; `retry_statuses` which error statuses
    may be retried.
    """

    method: str
    path: str
    decode: Callable[[httpx2.Response], T]
    params: Mapping[str, str | int] = field(default_factory=dict)
    json: Mapping[str, Any] | None = None
    accept: str = "application/json"
    is_idempotent: bool = True
    retry_statuses: frozenset[int] = RETRYABLE_STATUSES
    # Applied to the result when it came from a retry: for calls that consume state
    # (a dirty take), an earlier attempt may have consumed it unseen.
    after_retry: Callable[[T], T] | None = None
    # Seconds the gateway may hold the answer back on purpose (a settle, a wait): added
    # to the read timeout, so a long wait is not cut off as if the gateway were stuck.
    server_wait_s: float = 0.0


def build_request(
    http_client: httpx2.Client | httpx2.AsyncClient,
    operation: Operation[Any],
    *,
    base_url: str,
    token: str,
    timeout: httpx2.Timeout | float | None,
) -> httpx2.Request:
    """The HTTP request for `operation`: absolute URL, bearer token, JSON body.

    The URL is absolute so a caller-supplied `http_client` without a base URL works.
    """
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": operation.accept,
        "User-Agent": USER_AGENT,
    }
    return http_client.build_request(
        operation.method,
        base_url + operation.path,
        params=dict(operation.params) or None,
        json=operation.json,
        headers=headers,
        timeout=request_timeout(timeout, operation.server_wait_s),
    )


def request_timeout(
    timeout: httpx2.Timeout | float | None, server_wait_s: float
) -> httpx2.Timeout | float | None:
    """The client's timeout with `server_wait_s` more to read the answer (None: none)."""
    if timeout is None or server_wait_s <= 0:
        return timeout
    if not isinstance(timeout, httpx2.Timeout):
        return timeout + server_wait_s
    read = None if timeout.read is None else timeout.read + server_wait_s
    return httpx2.Timeout(
        connect=timeout.connect, read=read, write=timeout.write, pool=timeout.pool
    )


def query(**values: int | str | bool | None) -> dict[str, str | int]:
    """Query parameters without the unset ones; booleans as the API's 0/1."""
    params: dict[str, str | int] = {}
    for name, value in values.items():
        if value is None:
            continue
        params[name] = int(value) if isinstance(value, bool) else value
    return params


def body(**values: Any) -> dict[str, Any]:
    """A JSON body without the unset fields, so the gateway's defaults apply."""
    return {name: value for name, value in values.items() if value is not None}


# ----------------------------------------------------------------------- decoding


def request_id_of(response: httpx2.Response) -> str | None:
    """The gateway's request id for this response, when it sent one."""
    return response.headers.get(REQUEST_ID_HEADER)


def json_of(response: httpx2.Response) -> Any:
    """The response body as JSON, or APIResponseValidationError."""
    try:
        return response.json()
    except ValueError as exc:
        raise APIResponseValidationError(
            f"expected a JSON body, got {response.headers.get('content-type')!r}",
            response=response,
            request_id=request_id_of(response),
        ) from exc


def _invalid(response: httpx2.Response, what: str, exc: Exception) -> APIResponseValidationError:
    return APIResponseValidationError(
        f"unexpected {what} body: {exc}", response=response, request_id=request_id_of(response)
    )


def decode_model(response: httpx2.Response, model: type[M], *, envelope: str | None = None) -> M:
    """Validate the JSON body as `model`.

    With `envelope`, the object may come wrapped (`{"key": {...}}`) or flat; both are
    accepted because the documents do not fix the shape of every create/update answer.
    """
    data = json_of(response)
    if envelope is not None and isinstance(data, dict) and isinstance(data.get(envelope), dict):
        data = {**{k: v for k, v in data.items() if k != envelope}, **data[envelope]}
    try:
        return model.model_validate(data)
    except pydantic.ValidationError as exc:
        raise _invalid(response, model.__name__, exc) from exc


def decode_list(response: httpx2.Response, model: type[M], *, key: str) -> list[M]:
    """Validate `{"<key>": [...]}` (or a bare list) as a list of `model`."""
    data = json_of(response)
    items = data.get(key) if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise _invalid(response, f"{key} list", TypeError(f"no {key!r} array"))
    try:
        return [model.model_validate(item) for item in items]
    except pydantic.ValidationError as exc:
        raise _invalid(response, model.__name__, exc) from exc


def finish(operation: Operation[T], response: httpx2.Response, *, retries: int) -> T:
    """Decode a successful response of `operation`, after `retries` retries."""
    result = operation.decode(response)
    if retries > 0 and operation.after_retry is not None:
        result = operation.after_retry(result)
    return result


def decode_optional_model(response: httpx2.Response, model: type[M]) -> M | None:
    """The body as `model` when it is one, else None.

    For deletes: the documents only say they answer 200, so a record in the body is
    returned and anything else (`{"ok": true}`, no body) is not an error.
    """
    try:
        return model.model_validate(response.json())
    except (ValueError, pydantic.ValidationError):
        return None


def split_error(response: httpx2.Response) -> tuple[str, str | None]:
    """`{"error": "code: detail"}` → (`code`, `detail`), split on the first `": "`.

    A body that is not the gateway's (a proxy's HTML page) yields `http_<status>`.
    """
    try:
        data = response.json()
    except ValueError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, str) or error == "":
        return f"http_{response.status_code}", None
    code, separator, detail = error.partition(": ")
    return code, (detail if separator else None)


def _body_text(response: httpx2.Response, name: str) -> str | None:
    """A text field of an error body beside `error`, or None when absent or not text."""
    try:
        data = response.json()
    except ValueError:
        return None
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, str) and value != "" else None


_STATUS_ERRORS: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    410: SessionEndedError,
    429: RateLimitError,
    502: HostError,
    504: HostTimeoutError,
}


def _int_header(headers: httpx2.Headers, name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


# 409 codes of an input batch that stopped or was refused; their body may carry the
# receipts of what ran, where it stopped and (stale_frame) the changed rectangles.
_STOPPED_ERRORS: dict[str, type[InputStoppedError]] = {
    "target_gone": TargetGoneError,
    "expectation_failed": ExpectationFailedError,
    "stale_frame": StaleFrameError,
    "frame_expired": FrameExpiredError,
    "desktop_unavailable": DesktopUnavailableError,
    "owner_active": OwnerActiveError,
}


def _stopped_error(
    error_class: type[InputStoppedError],
    message: str,
    *,
    code: str,
    detail: str | None,
    response: httpx2.Response,
) -> InputStoppedError:
    try:
        data = response.json()
    except ValueError:
        data = None
    body = data if isinstance(data, dict) else {}
    try:
        receipts = [EventReceipt.model_validate(item) for item in body.get("events") or []]
        rects = [_rect(item) for item in body.get("rects") or []]
    except (TypeError, ValueError, pydantic.ValidationError):
        # The code and detail still say what happened; a malformed extra is dropped.
        receipts, rects = [], []
    stopped_at = body.get("stopped_at")
    return error_class(
        message,
        code=code,
        response=response,
        request_id=request_id_of(response),
        detail=detail,
        receipts=receipts,
        stopped_at=stopped_at if isinstance(stopped_at, int) else None,
        rects=rects,
    )


def _rect(item: Any) -> tuple[int, int, int, int]:
    x, y, w, h = item
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (x, y, w, h)):
        raise TypeError(f"not a rectangle: {item!r}")
    return (x, y, w, h)


def status_error(response: httpx2.Response, *, now: Callable[[], float]) -> APIStatusError:
    """The SDK error for an error response: class by status, code/detail from the body."""
    code, detail = split_error(response)
    status = response.status_code
    message = f"{status} {code}" if detail is None else f"{status} {code}: {detail}"
    request_id = request_id_of(response)
    if status == 409 and code in _STOPPED_ERRORS:
        return _stopped_error(
            _STOPPED_ERRORS[code], message, code=code, detail=detail, response=response
        )
    if status == 409 and code == "rig_busy":
        return RigBusyError(
            message,
            code=code,
            response=response,
            request_id=request_id,
            detail=detail,
            active_session_id=_body_text(response, "active_session_id"),
        )
    if status == 429:
        headers = response.headers
        return RateLimitError(
            message,
            code=code,
            response=response,
            request_id=request_id,
            detail=detail,
            retry_after=parse_retry_after(headers, now=now()),
            limit=_int_header(headers, "RateLimit-Limit"),
            remaining=_int_header(headers, "RateLimit-Remaining"),
            reset=_int_header(headers, "RateLimit-Reset"),
        )
    error_class = _STATUS_ERRORS.get(status)
    if error_class is None:
        error_class = InternalServerError if status >= 500 else APIStatusError
    return error_class(message, code=code, response=response, request_id=request_id, detail=detail)


def connection_error(exc: httpx2.TransportError) -> APIConnectionError:
    """The SDK error for a request that got no response."""
    reason = str(exc) or type(exc).__name__
    if isinstance(exc, httpx2.TimeoutException):
        return APITimeoutError(f"request timed out: {reason}")
    return APIConnectionError(f"connection failed: {reason}")


# ------------------------------------------------------------------------ retries


def parse_retry_after(headers: httpx2.Headers, *, now: float) -> float | None:
    """Seconds to wait from `Retry-After`: delta-seconds (the gateway's) or an HTTP date.

    `now` is the wall clock (Unix seconds), used only for the date form.
    """
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - now
    if not math.isfinite(seconds):
        return None
    return max(seconds, 0.0)


def backoff_delay(attempt: int, *, random: Callable[[], float]) -> float:
    """Jittered exponential backoff before retry number `attempt + 1` (0-based)."""
    delay = min(INITIAL_RETRY_DELAY_S * 2.0**attempt, MAX_RETRY_DELAY_S)
    return delay * (1.0 - RETRY_JITTER_RATIO * random())


def is_retryable_transport_error(exc: httpx2.TransportError, operation: Operation[Any]) -> bool:
    """Whether to replay after a transport error.

    Errors before sending are always safe to replay; after sending, only idempotent
    operations are (the gateway may have acted on the request).
    """
    return isinstance(exc, _UNSENT_ERRORS) or operation.is_idempotent


def retry_delay(
    operation: Operation[Any],
    *,
    attempt: int,
    max_retries: int,
    response: httpx2.Response | None = None,
    error: httpx2.TransportError | None = None,
    random: Callable[[], float],
    now: Callable[[], float],
) -> float | None:
    """Seconds to wait before trying `operation` again, or None to give up now.

    `attempt` counts the retries already made. A `Retry-After` header is obeyed exactly
    (up to MAX_RETRY_AFTER_S); otherwise jittered exponential backoff applies.
    """
    if attempt >= max_retries:
        return None
    if response is not None:
        if response.status_code not in operation.retry_statuses:
            return None
        retry_after = parse_retry_after(response.headers, now=now())
        if retry_after is not None:
            return retry_after if retry_after <= MAX_RETRY_AFTER_S else None
        return backoff_delay(attempt, random=random)
    if error is not None and is_retryable_transport_error(error, operation):
        return backoff_delay(attempt, random=random)
    return None
