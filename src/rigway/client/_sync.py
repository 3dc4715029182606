"""The synchronous client: `Rigway`, its resources and the live `SessionHandle`.

Thin by design: each method builds an `Operation` (`_operations`) and runs it through
`SyncAPIClient.request`, whose loop only sends, sleeps and asks `_core` what to do.
"""

from __future__ import annotations

import builtins
import random
import time
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TypeVar

import httpx2

from . import _core
from . import _operations as ops
from ._core import DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT, Operation
from .errors import NotFoundError, RigwayError, SessionEndedError, TargetNotFoundError
from .models import (
    AgentRelease,
    AppKillResult,
    AppLaunchResult,
    DirtyRects,
    InputEvent,
    InputResult,
    MouseButton,
    ObserveResult,
    Rig,
    Screenshot,
    Session,
    StreamCredentials,
    Target,
    TargetList,
    WakeResult,
)

__all__ = ["Rigway", "SessionHandle", "SyncAPIClient"]

T = TypeVar("T")
_Self = TypeVar("_Self", bound="SyncAPIClient")


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
        self._http = http_client or httpx2.Client(transport=transport, timeout=timeout)
        self._sleep = sleep
        self._clock = clock
        self._jitter = jitter

    def request(self, operation: Operation[T]) -> T:
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

    def __enter__(self: _Self) -> _Self:
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
        return self._client.request(ops.list_rigs())

    def get(self, rig_id: str) -> Rig:
        """One rig (`GET /v1/rigs/{id}`); NotFoundError when unknown."""
        return self._client.request(ops.get_rig(rig_id))

    def wake(self, rig_id: str) -> WakeResult:
        """Send a Wake-on-LAN packet to an offline rig (`POST /v1/rigs/{id}/wake`).

        ConflictError `wake_unavailable` when no MAC address is known for the rig.
        """
        return self._client.request(ops.wake_rig(rig_id))


class Agent:
    """`client.agent`: host agent releases."""

    def __init__(self, client: SyncAPIClient) -> None:
        self._client = client

    def latest(self) -> AgentRelease:
        """The latest signed host agent release (`GET /v1/agent/latest`)."""
        return self._client.request(ops.agent_latest())


class Sessions:
    """`client.sessions`: start, list, read and end metered sessions."""

    def __init__(self, client: SyncAPIClient) -> None:
        self._client = client

    def create(
        self,
        *,
        rig_id: str,
        mode: ops.SessionMode | None = None,
        idle_timeout_seconds: int | None = None,
    ) -> SessionHandle:
        """Start a session on an online, API-enabled rig and return its live handle.

        Use the handle as a context manager so the session always ends (billing stops):
        `with client.sessions.create(rig_id=…) as session: …`. `mode` defaults to
        `desktop` and `idle_timeout_seconds` (60…3600) to 900 on the gateway.
        """
        session = self._client.request(
            ops.create_session(rig_id, mode=mode, idle_timeout_seconds=idle_timeout_seconds)
        )
        return SessionHandle(self._client, session)

    def attach(self, session_id: str) -> SessionHandle:
        """A live handle for an existing session (reads it once to know its state)."""
        return SessionHandle(self._client, self.get(session_id))

    def list(self) -> builtins.list[Session]:
        """The active sessions this API key created (`GET /v1/sessions`)."""
        return self._client.request(ops.list_sessions())

    def get(self, session_id: str) -> Session:
        """One session record (`GET /v1/sessions/{id}`)."""
        return self._client.request(ops.get_session(session_id))

    def end(self, session_id: str) -> Session:
        """End a session (`DELETE /v1/sessions/{id}`); idempotent, returns the final record."""
        return self._client.request(ops.end_session(session_id))


# ------------------------------------------------------------------------ client


class Rigway(SyncAPIClient):
    """Synchronous client of the Rigway API, authenticated by an API key.

    `api_key` and `base_url` default to `RIGWAY_API_KEY` and `RIGWAY_BASE_URL` (else
    `http://127.0.0.1:8080`), read once, here. Failed calls are retried up to
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
        super().__init__(
            token=_core.resolve_credential(api_key, _core.API_KEY_ENV, "api key"),
            base_url=_core.resolve_base_url(base_url),
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


# ---------------------------------------------------------------- session handle


class SessionHandle:
    """A live session: screens, grounding, input and apps, bound to one session id.

    As a context manager it ALWAYS ends the session on exit, also when the body raised;
    a failure to end then never hides the body's exception (it is added as a note).
    Coordinates are native desktop pixels; map image pixels with `Screenshot.to_native`.
    """

    def __init__(self, client: SyncAPIClient, session: Session) -> None:
        self._client = client
        self._session = session
        self._latest_targets: dict[str, Target] = {}

    # -- state

    @property
    def info(self) -> Session:
        """The latest known session record (refreshed by `refresh()` and `end()`)."""
        return self._session

    @property
    def session_id(self) -> str:
        """The session id."""
        return self._session.session_id

    @property
    def id(self) -> str:
        """The session id (same as `session_id`)."""
        return self._session.session_id

    @property
    def rig_id(self) -> str:
        """The rig this session runs on."""
        return self._session.rig_id

    @property
    def status(self) -> str:
        """`active`, `ended` or `failed`, as last seen."""
        return self._session.status

    @property
    def native_width(self) -> int | None:
        """Native desktop width in pixels, when the gateway reported it."""
        return self._session.native_width

    @property
    def native_height(self) -> int | None:
        """Native desktop height in pixels, when the gateway reported it."""
        return self._session.native_height

    @property
    def latest_targets(self) -> list[Target]:
        """Targets of the latest `targets()` or `observe()` call, used by `click(target=…)`."""
        return list(self._latest_targets.values())

    def refresh(self) -> Session:
        """Re-read the session record (status, action count, billing)."""
        self._session = self._client.request(ops.get_session(self.session_id))
        return self._session

    def end(self) -> Session:
        """End the session (idempotent); returns the final record with `ended_reason`."""
        self._session = self._client.request(ops.end_session(self.session_id))
        return self._session

    def __enter__(self) -> SessionHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self.end()
        except (SessionEndedError, NotFoundError):
            pass  # already over (idle timeout, owner kill, …): nothing left to end
        except RigwayError as end_error:
            if exc is None:
                raise
            exc.add_note(f"rigway: ending session {self.session_id} also failed: {end_error}")

    # -- screens

    def screenshot(
        self,
        max_width: int | None = None,
        quality: int | None = None,
        region: ops.RegionLike | None = None,
    ) -> Screenshot:
        """A JPEG of the desktop (or of `region`, native x/y/w/h), long edge ≤ `max_width`.

        `quality` is 40…100 (gateway default 85). Map image pixels back with `to_native`.
        """
        return self._client.request(
            ops.screenshot(self.session_id, max_width=max_width, quality=quality, region=region)
        )

    def observe(
        self,
        max_width: int | None = None,
        quality: int | None = None,
        region: ops.RegionLike | None = None,
        mark: bool = False,
        image: bool = True,
    ) -> ObserveResult:
        """Frame, change flag, window text and click targets in one round trip.

        `mark=True` draws each target's box and id on the image; `image=False` skips the
        JPEG. Consumes the dirty take like `dirty()`. Remembers the targets for `click`.
        """
        result = self._client.request(
            ops.observe(
                self.session_id,
                max_width=max_width,
                quality=quality,
                region=region,
                mark=mark,
                image=image,
            )
        )
        self._latest_targets = {target.id: target for target in result.targets}
        return result

    def dirty(self) -> DirtyRects:
        """Rectangles changed since the last take (each take consumes them)."""
        return self._client.request(ops.dirty(self.session_id))

    def targets(self) -> TargetList:
        """Click targets of the focused window, in native pixels; remembered for `click`."""
        result = self._client.request(ops.targets(self.session_id))
        self._latest_targets = {target.id: target for target in result.targets}
        return result

    def stream(self) -> StreamCredentials:
        """WebRTC signaling credentials for a live view of the desktop."""
        return self._client.request(ops.stream(self.session_id))

    # -- input

    def _point(
        self, x: int | None, y: int | None, target: Target | str | None
    ) -> tuple[int | None, int | None]:
        ops.check_click_args(x, y, target)
        if target is None:
            return x, y
        found = ops.resolve_target(target, self._latest_targets)
        if found is None:
            # The id may come from a snapshot newer than ours (another client, a log).
            self.targets()
            found = ops.resolve_target(target, self._latest_targets)
        if found is None:
            raise TargetNotFoundError(ops.target_id(target))
        return found.center

    def click(
        self,
        x: int | None = None,
        y: int | None = None,
        *,
        target: Target | str | None = None,
        button: MouseButton = "left",
    ) -> InputResult:
        """Click at native (`x`, `y`), at a target's centre, or where the pointer is.

        `target` is a `Target` or its id, resolved against the latest targets (fetched
        once more when the id is unknown); TargetNotFoundError if it is still unknown.
        """
        px, py = self._point(x, y, target)
        return self.input(ops.click_events(px, py, button=button, count=1))

    def double_click(
        self,
        x: int | None = None,
        y: int | None = None,
        *,
        target: Target | str | None = None,
        button: MouseButton = "left",
    ) -> InputResult:
        """Double-click, with the same arguments as `click`."""
        px, py = self._point(x, y, target)
        return self.input(ops.click_events(px, py, button=button, count=2))

    def move(self, x: int, y: int) -> InputResult:
        """Move the pointer to native (`x`, `y`)."""
        return self.input([InputEvent.mouse_move(x, y)])

    def scroll(
        self, dx: int = 0, dy: int = 0, x: int | None = None, y: int | None = None
    ) -> InputResult:
        """Scroll by wheel notches (`dy` < 0 scrolls down, `dx` > 0 right), at (`x`, `y`)."""
        return self.input([InputEvent.mouse_scroll(dx, dy, x=x, y=y)])

    def key(self, key: str) -> InputResult:
        """Press and release a key or chord: `"enter"`, `"ctrl+s"`, `"ctrl+shift+esc"`."""
        return self.input([InputEvent.key_press(key)])

    def key_down(self, key: str) -> InputResult:
        """Press and hold a key (released by `key_up`, or when the session ends)."""
        return self.input([InputEvent.key_down(key)])

    def key_up(self, key: str) -> InputResult:
        """Release a held key."""
        return self.input([InputEvent.key_up(key)])

    def type_text(self, text: str) -> InputResult:
        """Type Unicode text as text (accents, CJK, emoji arrive as typed)."""
        return self.input([InputEvent.type_text(text)])

    def input(self, events: Sequence[ops.EventLike]) -> InputResult:
        """Send a raw batch of 1…100 events (`InputEvent`s or dicts), run in order.

        The gateway validates the whole batch first: one bad event → BadRequestError and
        nothing runs.
        """
        return self._client.request(ops.send_input(self.session_id, events))

    # -- apps

    def launch(self, path: str, args: Sequence[str] | None = None) -> AppLaunchResult:
        """Start a program by absolute path or by name on the rig's PATH; returns its pid."""
        return self._client.request(ops.launch_app(self.session_id, path, args))

    def kill(self, pid: int | None = None) -> AppKillResult:
        """Kill one app this session launched (`pid`), or all of them (no pid)."""
        return self._client.request(ops.kill_app(self.session_id, pid))
