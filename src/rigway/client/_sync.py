"""The synchronous client: `Rigway` and its resources.

Thin by design: each method builds an `Operation` (`_operations`) and runs it through
`SyncAPIClient._request`, whose loop only sends, sleeps and asks `_core` what to do.
"""

from __future__ import annotations

import builtins
import random
import time
from collections.abc import Callable
from types import TracebackType
from typing import Self, TypeVar

import httpx2

from . import _core
from . import _operations as ops
from ._core import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Operation
from ._session import SessionHandle
from .models import AgentRelease, Rig, Session, WakeResult

__all__ = ["Rigway", "SyncAPIClient"]

T = TypeVar("T")


class SyncAPIClient:
    """Shared machinery of `Rigway` and `RigwayConsole`: one HTTP client, one retry loop."""

    def __init__(
        self,
        *,
        token: str,
        base_url: str,
        timeout: httpx2.Timeout | float | None,
        max_retries: int,
        transport: httpx2.BaseTransport | None,
        http_client: httpx2.Client | None,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
        jitter: Callable[[], float],
    ) -> None:
        if http_client is not None and transport is not None:
            raise ValueError("pass either transport or http_client, not both")
        if max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        self.base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self._token = token
        # A caller-supplied client belongs to the caller, who closes it.
        self._owns_http_client = http_client is None
        if http_client is None:
            http_client = httpx2.Client(transport=transport, timeout=timeout)
        self._http = http_client
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter

    def _request(self, operation: Operation[T]) -> T:
        """Run `operation`, retrying per `_core.retry_delay`; raise the SDK error on failure."""
        retries = 0
        while True:
            request = _core.build_request(
                self._http,
                operation,
                base_url=self.base_url,
                token=self._token,
                timeout=self.timeout,
            )
            try:
                response = self._http.send(request)
            except httpx2.TransportError as exc:
                delay = self._retry_delay(operation, retries, error=exc)
                if delay is None:
                    raise _core.connection_error(exc) from exc
            else:
                if response.is_success:
                    return _core.finish(operation, response, retries=retries)
                delay = self._retry_delay(operation, retries, response=response)
                if delay is None:
                    raise _core.status_error(response, now=self._clock)
                response.close()
            self._sleep(delay)
            retries += 1

    def _retry_delay(
        self,
        operation: Operation[T],
        retries: int,
        *,
        response: httpx2.Response | None = None,
        error: httpx2.TransportError | None = None,
    ) -> float | None:
        return _core.retry_delay(
            operation,
            attempt=retries,
            max_retries=self.max_retries,
            response=response,
            error=error,
            random=self._jitter,
            now=self._clock,
        )

    def close(self) -> None:
        """Close the HTTP client, unless it was passed in (then its owner closes it)."""
        if self._owns_http_client:
            self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


# --------------------------------------------------------------------- resources


class Rigs:
    """`client.rigs`: the account's rigs."""

    def __init__(self, client: SyncAPIClient) -> None:
        self._client = client

    def list(self) -> builtins.list[Rig]:
        """All rigs of the account (`GET /v1/rigs`)."""
        return self._client._request(ops.list_rigs())

    def get(self, rig_id: str) -> Rig:
        """One rig (`GET /v1/rigs/{id}`); NotFoundError when unknown."""
        return self._client._request(ops.get_rig(rig_id))

    def wake(self, rig_id: str) -> WakeResult:
        """Send a Wake-on-LAN packet to an offline rig (`POST /v1/rigs/{id}/wake`).

        ConflictError `wake_unavailable` when no MAC address is known for the rig.
        """
        return self._client._request(ops.wake_rig(rig_id))


class Agent:
    """`client.agent`: host agent releases."""

    def __init__(self, client: SyncAPIClient) -> None:
        self._client = client

    def latest(self) -> AgentRelease:
        """The latest signed host agent release (`GET /v1/agent/latest`)."""
        return self._client._request(ops.agent_latest())


class Sessions:
    """`client.sessions`: start, list, read and end metered sessions."""

    def __init__(self, client: SyncAPIClient) -> None:
        self._client = client

    def create(
        self,
        *,
        rig_id: str | None = None,
        mode: ops.SessionMode | None = None,
        idle_timeout_seconds: int | None = None,
        record: bool | None = None,
    ) -> SessionHandle:
        """Start a session on an online, API-enabled rig and return its live handle.

        Use the handle as a context manager so the session always ends (billing stops):
        `with client.sessions.create() as session: …`. Without `rig_id`, the account's
        one rig that is online with API access enabled (`NoRigAvailableError` when there
        is none, `AmbiguousRigError` naming them when there are several). `mode`
        defaults to `desktop` and `idle_timeout_seconds` (60…3600) to 900 on the
        gateway. A rig already in use raises `RigBusyError` with its `active_session_id`.
        `record=True` keeps the session's frames, targets and input for
        `SessionHandle.recording()` (403 `recording_not_allowed` where the rig's owner
        forbids it).
        """
        if rig_id is None:
            rig_id = ops.only_usable_rig(self._client._request(ops.list_rigs()))
        session = self._client._request(
            ops.create_session(
                rig_id, mode=mode, idle_timeout_seconds=idle_timeout_seconds, record=record
            )
        )
        return SessionHandle(self._client, session)

    def attach(self, session_id: str) -> SessionHandle:
        """A live handle for an existing session (reads it once to know its state)."""
        return SessionHandle(self._client, self.get(session_id))

    def list(self) -> builtins.list[Session]:
        """The active sessions this API key created (`GET /v1/sessions`)."""
        return self._client._request(ops.list_sessions())

    def get(self, session_id: str) -> Session:
        """One session record (`GET /v1/sessions/{id}`)."""
        return self._client._request(ops.get_session(session_id))

    def end(self, session_id: str) -> Session:
        """End a session (`DELETE /v1/sessions/{id}`); idempotent, returns the final record."""
        return self._client._request(ops.end_session(session_id))

    def recording(self, session_id: str) -> bytes:
        """A recorded session's zip (`GET /v1/sessions/{id}/recording`), live or ended;
        `NotFoundError` (code `recording_not_found`) for a session that did not record
        or whose recording expired."""
        return self._client._request(ops.recording(session_id))


# ------------------------------------------------------------------------ client


class Rigway(SyncAPIClient):
    """Synchronous client of the Rigway API, authenticated by an API key.

    `api_key` and `base_url` default to `RIGWAY_API_KEY` and `RIGWAY_BASE_URL`, else to
    `api_key` and `base_url` in the `.rigway/local.json` that `rigway up` wrote (in the
    working directory or its nearest parent that has one, or `$RIGWAY_STATE_DIR`), else
    the URL to `http://127.0.0.1:8080`; read once, here. Failed calls are retried up to
    `max_retries` times (429/502/503/504 and connection errors, honouring
    `Retry-After`); 401, 403 and 410 never are. Use it as a context manager, or call
    `close()`.

    `transport` replaces the network (e.g. `httpx2.MockTransport`); `http_client` is a
    ready client you own and close. `sleep`, `clock` (Unix seconds) and `jitter`
    (a float in [0, 1)) are seams for tests.
    """

    rigs: Rigs
    sessions: Sessions
    agent: Agent

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: httpx2.Timeout | float | None = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx2.BaseTransport | None = None,
        http_client: httpx2.Client | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        resolved_token, resolved_base_url = _core.resolve_connection(
            api_key, base_url, env_name=_core.API_KEY_ENV, what="api key"
        )
        super().__init__(
            token=resolved_token,
            base_url=resolved_base_url,
            timeout=timeout,
            max_retries=max_retries,
            transport=transport,
            http_client=http_client,
            sleep=sleep,
            clock=clock,
            jitter=jitter,
        )
        self.rigs = Rigs(self)
        self.sessions = Sessions(self)
        self.agent = Agent(self)
