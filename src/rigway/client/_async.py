"""The asynchronous client: `AsyncRigway` and its resources.

The mirror of `_sync.py` with `await`: same `Operation`s, same `_core` decisions.
"""

from __future__ import annotations

import asyncio
import builtins
import random
import time
from collections.abc import Awaitable, Callable, Generator
from types import TracebackType
from typing import Any, Self, TypeVar

import httpx2

from . import _core
from . import _operations as ops
from ._async_session import AsyncSessionHandle
from ._core import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Operation
from .models import AgentRelease, Rig, Session, WakeResult

__all__ = ["AsyncAPIClient", "AsyncRigway", "PendingAsyncSession"]

T = TypeVar("T")


class AsyncAPIClient:
    """Shared machinery of `AsyncRigway` and `AsyncRigwayConsole`."""

    def __init__(
        self,
        *,
        token: str,
        base_url: str,
        timeout: httpx2.Timeout | float | None,
        max_retries: int,
        transport: httpx2.AsyncBaseTransport | None,
        http_client: httpx2.AsyncClient | None,
        sleep: Callable[[float], Awaitable[None]],
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
            http_client = httpx2.AsyncClient(transport=transport, timeout=timeout)
        self._http = http_client
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter

    async def _request(self, operation: Operation[T]) -> T:
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
                response = await self._http.send(request)
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
                await response.aclose()
            await self._sleep(delay)
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

    async def close(self) -> None:
        """Close the HTTP client, unless it was passed in (then its owner closes it)."""
        if self._owns_http_client:
            await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


# --------------------------------------------------------------------- resources


class AsyncRigs:
    """`client.rigs`: the account's rigs."""

    def __init__(self, client: AsyncAPIClient) -> None:
        self._client = client

    async def list(self) -> builtins.list[Rig]:
        """All rigs of the account (`GET /v1/rigs`)."""
        return await self._client._request(ops.list_rigs())

    async def get(self, rig_id: str) -> Rig:
        """One rig (`GET /v1/rigs/{id}`); NotFoundError when unknown."""
        return await self._client._request(ops.get_rig(rig_id))

    async def wake(self, rig_id: str) -> WakeResult:
        """Send a Wake-on-LAN packet to an offline rig (`POST /v1/rigs/{id}/wake`)."""
        return await self._client._request(ops.wake_rig(rig_id))


class AsyncAgent:
    """`client.agent`: host agent releases."""

    def __init__(self, client: AsyncAPIClient) -> None:
        self._client = client

    async def latest(self) -> AgentRelease:
        """The latest signed host agent release (`GET /v1/agent/latest`)."""
        return await self._client._request(ops.agent_latest())


class PendingAsyncSession:
    """What `AsyncRigway.sessions.create` returns: await it, or enter it.

    `session = await client.sessions.create(…)` gives the handle (end it yourself);
    `async with client.sessions.create(…) as session:` starts the session on entry and
    always ends it on exit. The session is created once, however it is used.
    """

    def __init__(self, start: Callable[[], Awaitable[AsyncSessionHandle]]) -> None:
        self._start = start
        self._handle: AsyncSessionHandle | None = None

    async def _get(self) -> AsyncSessionHandle:
        if self._handle is None:
            self._handle = await self._start()
        return self._handle

    def __await__(self) -> Generator[Any, None, AsyncSessionHandle]:
        return self._get().__await__()

    async def __aenter__(self) -> AsyncSessionHandle:
        return await (await self._get()).__aenter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._handle is not None:
            await self._handle.__aexit__(exc_type, exc, tb)


class AsyncSessions:
    """`client.sessions`: start, list, read and end metered sessions."""

    def __init__(self, client: AsyncAPIClient) -> None:
        self._client = client

    def create(
        self,
        *,
        rig_id: str | None = None,
        mode: ops.SessionMode | None = None,
        idle_timeout_seconds: int | None = None,
        record: bool | None = None,
    ) -> PendingAsyncSession:
        """Start a session; await the result for a handle, or `async with` it.

        `async with client.sessions.create() as session:` always ends the session on
        exit. Without `rig_id`, the rig is chosen as `Rigway.sessions.create` chooses
        it. `mode` defaults to `desktop` and `idle_timeout_seconds` (60…3600) to 900 on
        the gateway. `record=True` keeps the session for `recording()`.
        """

        async def start() -> AsyncSessionHandle:
            chosen = rig_id
            if chosen is None:
                chosen = ops.only_usable_rig(await self._client._request(ops.list_rigs()))
            operation = ops.create_session(
                chosen, mode=mode, idle_timeout_seconds=idle_timeout_seconds, record=record
            )
            return AsyncSessionHandle(self._client, await self._client._request(operation))

        return PendingAsyncSession(start)

    async def attach(self, session_id: str) -> AsyncSessionHandle:
        """A live handle for an existing session (reads it once to know its state)."""
        return AsyncSessionHandle(self._client, await self.get(session_id))

    async def list(self) -> builtins.list[Session]:
        """The active sessions this API key created (`GET /v1/sessions`)."""
        return await self._client._request(ops.list_sessions())

    async def get(self, session_id: str) -> Session:
        """One session record (`GET /v1/sessions/{id}`)."""
        return await self._client._request(ops.get_session(session_id))

    async def end(self, session_id: str) -> Session:
        """End a session (`DELETE /v1/sessions/{id}`); idempotent, returns the final record."""
        return await self._client._request(ops.end_session(session_id))

    async def recording(self, session_id: str) -> bytes:
        """A recorded session's zip, as `Rigway.sessions.recording` reads it."""
        return await self._client._request(ops.recording(session_id))


# ------------------------------------------------------------------------ client


async def asyncio_sleep(seconds: float) -> None:
    """`asyncio.sleep` with one plain signature: the default `sleep` seam."""
    await asyncio.sleep(seconds)


class AsyncRigway(AsyncAPIClient):
    """Asynchronous client of the Rigway API; same arguments and behaviour as `Rigway`.

    `sleep` is a coroutine function (default `asyncio.sleep`); `transport` an
    `httpx2.AsyncBaseTransport`; `http_client` an `httpx2.AsyncClient` you own.
    """

    rigs: AsyncRigs
    sessions: AsyncSessions
    agent: AsyncAgent

    def __init__(
        self,
        api_key: str | None = None,
        base_url: str | None = None,
        *,
        timeout: httpx2.Timeout | float | None = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        transport: httpx2.AsyncBaseTransport | None = None,
        http_client: httpx2.AsyncClient | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio_sleep,
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
        self.rigs = AsyncRigs(self)
        self.sessions = AsyncSessions(self)
        self.agent = AsyncAgent(self)
