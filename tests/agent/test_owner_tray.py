"""The owner's tray wired to the agent: its actions become link requests (owner kill,
`rig/api_access`), the console URL comes from the gateway URL, and the tray starts and
stops with the agent."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

import pytest

from rigway.agent.backends.windows.tray import TrayAction, TrayPresentation
from rigway.agent.link import AgentLink, GatewayOpError, LinkUnavailableError
from rigway.agent.owner_tray import (
    LinkOwnerActions,
    OwnerActionError,
    console_url,
    start_owner_tray,
    try_start_owner_tray,
)
from rigway.protocol import ops

CONSOLE = "https://gw.example/console"
EVENT_TIMEOUT_S = 5.0


@dataclass
class FakeLink:
    """Answers requests from `replies` (by op), or raises what is queued for the op."""

    replies: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: dict[str, Exception] = field(default_factory=dict)
    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    local_ends: list[str] = field(default_factory=list)
    is_connected: bool = True
    active_session_id: str | None = None
    killed: asyncio.Event = field(default_factory=asyncio.Event)

    async def request(self, op: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        self.requests.append((op, body))
        if op == ops.SESSION_OWNER_KILL:
            self.killed.set()
        if op in self.errors:
            raise self.errors[op]
        return self.replies[op]

    async def end_local_session(self, reason: str) -> bool:
        self.local_ends.append(reason)
        return True


def _actions(
    link: FakeLink, open_url: Callable[[str], bool] = lambda _url: True
) -> LinkOwnerActions:
    return LinkOwnerActions(cast(AgentLink, link), CONSOLE, open_url=open_url)


@pytest.mark.parametrize(
    ("gateway", "expected"),
    [
        ("https://gw.example", "https://gw.example/console"),
        ("https://gw.example/", "https://gw.example/console"),
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/console"),
        ("wss://gw.example/v1/agent/connect", "https://gw.example/console"),
        ("ws://gw.example:9/base/v1/agent/connect", "http://gw.example:9/base/console"),
    ],
)
def test_console_url_from_the_gateway_url(gateway: str, expected: str) -> None:
    assert console_url(gateway) == expected


def test_console_url_of_a_non_web_url_is_refused() -> None:
    with pytest.raises(ValueError, match="http"):
        console_url("ftp://gw.example")


async def test_end_session_sends_the_owner_kill() -> None:
    link = FakeLink(replies={ops.SESSION_OWNER_KILL: {"ended": True}})
    await _actions(link).end_session()
    assert link.requests == [(ops.SESSION_OWNER_KILL, {"session_id": None})]


async def test_end_session_without_the_gateway_ends_it_on_the_rig() -> None:
    link = FakeLink(errors={ops.SESSION_OWNER_KILL: LinkUnavailableError("down")})
    await _actions(link).end_session()
    assert link.local_ends == ["owner_kill"]


async def test_end_session_refused_by_the_gateway_raises_its_reason() -> None:
    link = FakeLink(errors={ops.SESSION_OWNER_KILL: GatewayOpError("host_error", "boom")})
    with pytest.raises(OwnerActionError, match="boom"):
        await _actions(link).end_session()


async def test_pause_sends_rig_api_access_off() -> None:
    link = FakeLink(replies={ops.RIG_API_ACCESS: {"api_access_enabled": False}})
    assert await _actions(link).set_api_access(False) is False
    assert link.requests == [(ops.RIG_API_ACCESS, {"enabled": False})]


async def test_reading_api_access_sends_no_value() -> None:
    link = FakeLink(replies={ops.RIG_API_ACCESS: {"api_access_enabled": True}})
    assert await _actions(link).set_api_access(None) is True
    assert link.requests == [(ops.RIG_API_ACCESS, {"enabled": None})]


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (LinkUnavailableError("down"), "not connected to the gateway"),
        (TimeoutError(), "did not answer"),
        (GatewayOpError("unknown_op", "no such op"), "refused it"),
    ],
)
async def test_api_access_failures_say_why(error: Exception, message: str) -> None:
    link = FakeLink(errors={ops.RIG_API_ACCESS: error})
    with pytest.raises(OwnerActionError, match=message):
        await _actions(link).set_api_access(True)


async def test_unexpected_api_access_reply_is_an_owner_error() -> None:
    link = FakeLink(replies={ops.RIG_API_ACCESS: {"surprise": 1}})
    with pytest.raises(OwnerActionError, match="unexpected"):
        await _actions(link).set_api_access(True)


def test_open_console_opens_the_console_url() -> None:
    opened: list[str] = []

    def open_url(url: str) -> bool:
        opened.append(url)
        return True

    _actions(FakeLink(), open_url=open_url).open_console()
    assert opened == [CONSOLE]


def test_open_console_without_a_browser_raises() -> None:
    with pytest.raises(OwnerActionError, match="no browser"):
        _actions(FakeLink(), open_url=lambda _url: False).open_console()


@dataclass
class FakeView:
    first: TrayPresentation
    on_menu: Callable[[TrayAction], None]
    started: bool = False
    stopped: bool = False
    shown: list[TrayPresentation] = field(default_factory=list)

    def start(self) -> None:
        self.started = True

    def show(self, presentation: TrayPresentation) -> None:
        self.shown.append(presentation)

    def notify(self, message: str) -> None:
        raise AssertionError(message)

    def stop(self) -> None:
        self.stopped = True


async def test_tray_starts_with_the_link_and_stops_on_close() -> None:
    link = FakeLink(replies={ops.RIG_API_ACCESS: {"api_access_enabled": True}})
    views: list[FakeView] = []

    def factory(first: TrayPresentation, on_menu: Callable[[TrayAction], None]) -> FakeView:
        views.append(FakeView(first, on_menu))
        return views[-1]

    tray = start_owner_tray(cast(AgentLink, link), "https://gw.example", view_factory=factory)
    (view,) = views
    assert view.started
    await asyncio.wait_for(tray.close(), EVENT_TIMEOUT_S)
    assert view.stopped
    assert link.requests == [(ops.RIG_API_ACCESS, {"enabled": None})]


async def test_menu_choice_reaches_the_link_through_the_started_tray() -> None:
    link = FakeLink(
        replies={
            ops.RIG_API_ACCESS: {"api_access_enabled": True},
            ops.SESSION_OWNER_KILL: {"ended": True},
        },
        active_session_id="ses_1",
    )
    views: list[FakeView] = []

    def factory(first: TrayPresentation, on_menu: Callable[[TrayAction], None]) -> FakeView:
        views.append(FakeView(first, on_menu))
        return views[-1]

    tray = start_owner_tray(cast(AgentLink, link), "https://gw.example", view_factory=factory)
    views[0].on_menu(TrayAction.END_SESSION)
    await asyncio.wait_for(link.killed.wait(), EVENT_TIMEOUT_S)
    await asyncio.wait_for(tray.close(), EVENT_TIMEOUT_S)
    assert (ops.SESSION_OWNER_KILL, {"session_id": None}) in link.requests


@pytest.mark.skipif(sys.platform == "win32", reason="a tray is drawn there")
async def test_tray_off_windows_is_skipped_and_the_agent_carries_on() -> None:
    assert try_start_owner_tray(cast(AgentLink, FakeLink()), "https://gw.example") is None
