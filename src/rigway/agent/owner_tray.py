"""The owner's tray wired to a running agent: its actions go through the agent's link.

`start_owner_tray(link, gateway_url)` is what `rigway agent run --backend windows` calls
once the link is built: it draws the tray (our Shell_NotifyIconW binding, Windows only),
keeps it in step with the agent, and `OwnerTray.close()` takes it down with the agent.
The tray's hidden window also receives the console display's power notifications: give
`on_display_power` to hear of them (the desktop-state role's `note_display_power`).
The menu's model and controller are in `backends/windows/tray.py`; this module supplies
what they act on:

- End session: the owner's kill, the path `rigway agent kill` takes
  (`control.owner_kill_handler`: `session/owner_kill`, or a local end when the gateway
  cannot be reached);
- Pause / Resume API access: `rig/api_access` with `enabled` false / true;
- Open console: the gateway's /console in the default browser.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import webbrowser
from collections.abc import Callable
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

from pydantic import ValidationError

from rigway.agent.backends.windows.tray import (
    TrayAction,
    TrayController,
    TrayPresentation,
    TrayView,
)
from rigway.agent.control import owner_kill_handler
from rigway.agent.link import AgentLink, GatewayOpError, LinkUnavailableError
from rigway.agent.runner import CONNECT_PATH
from rigway.protocol import ops

__all__ = [
    "LinkOwnerActions",
    "OwnerActionError",
    "OwnerTray",
    "StartableTrayView",
    "console_url",
    "notify_icon_view_factory",
    "start_owner_tray",
    "try_start_owner_tray",
]

_log = logging.getLogger(__name__)
_REQUEST_TIMEOUT_S = 10.0
_HTTP_SCHEMES = {"http": "http", "https": "https", "ws": "http", "wss": "https"}


class OwnerActionError(Exception):
    """An owner's action did not happen; `str(error)` says why, for a notification."""


def console_url(gateway_url: str) -> str:
    """`wss://gw.example/v1/agent/connect` or `https://gw.example` → `https://gw.example/console`."""
    parts = urlsplit(gateway_url.strip())
    scheme = _HTTP_SCHEMES.get(parts.scheme.lower())
    if scheme is None or parts.netloc == "":
        raise ValueError(f"gateway URL {gateway_url!r} must be http(s):// or ws(s)://host")
    path = parts.path.rstrip("/")
    path = path.removesuffix(CONNECT_PATH)
    return urlunsplit((scheme, parts.netloc, path + "/console", "", ""))


class LinkOwnerActions:
    """`OwnerActions` through the agent's link to the gateway."""

    def __init__(
        self,
        link: AgentLink,
        console: str,
        *,
        open_url: Callable[[str], bool] = webbrowser.open,
        timeout_s: float = _REQUEST_TIMEOUT_S,
    ) -> None:
        self._link = link
        self._kill = owner_kill_handler(link)
        self._console = console
        self._open_url = open_url
        self._timeout_s = timeout_s

    async def end_session(self) -> None:
        answer = await self._kill("owner_kill")
        if not answer.get("ok"):
            raise OwnerActionError(str(answer.get("error", "the kill was not taken")))

    async def set_api_access(self, enabled: bool | None) -> bool:
        body = ops.RigApiAccess(enabled=enabled).model_dump()
        try:
            reply = await self._link.request(ops.RIG_API_ACCESS, body, self._timeout_s)
            return ops.RigApiAccessState.model_validate(reply).api_access_enabled
        except LinkUnavailableError as exc:
            raise OwnerActionError("not connected to the gateway") from exc
        except TimeoutError as exc:
            raise OwnerActionError(
                f"the gateway did not answer within {self._timeout_s:g} s"
            ) from exc
        except GatewayOpError as exc:
            raise OwnerActionError(f"the gateway refused it ({exc})") from exc
        except ValidationError as exc:
            raise OwnerActionError("the gateway answered something unexpected") from exc

    def open_console(self) -> None:
        if not self._open_url(self._console):
            raise OwnerActionError(f"no browser could open {self._console}")


class StartableTrayView(TrayView, Protocol):
    def start(self) -> None: ...


TrayViewFactory = Callable[[TrayPresentation, Callable[[TrayAction], None]], StartableTrayView]


class OwnerTray:
    """A running tray; `close()` stops its polling and takes the icon down."""

    def __init__(
        self, controller: TrayController, view: StartableTrayView, stop: asyncio.Event
    ) -> None:
        self.controller = controller
        self._view = view
        self._stop = stop
        self._poller = asyncio.create_task(controller.run(stop))

    async def close(self) -> None:
        self._stop.set()
        try:
            await self._poller
        finally:
            self._view.stop()


def notify_icon_view_factory(
    on_display_power: Callable[[bool], None] | None = None,
) -> TrayViewFactory:
    """Views drawn with Shell_NotifyIconW (Windows only), passing `on_display_power` on."""

    def make_view(
        first: TrayPresentation, on_menu: Callable[[TrayAction], None]
    ) -> StartableTrayView:
        if sys.platform == "win32":
            from rigway.agent.backends.windows._tray import NotifyIconTray

            return NotifyIconTray(first, on_menu, on_display_power=on_display_power)
        raise RuntimeError("the tray is drawn on Windows only")

    return make_view


def start_owner_tray(
    link: AgentLink,
    gateway_url: str,
    *,
    view_factory: TrayViewFactory | None = None,
    open_url: Callable[[str], bool] = webbrowser.open,
    on_display_power: Callable[[bool], None] | None = None,
) -> OwnerTray:
    """On the running loop: draw the tray for `link` and keep it current.

    `on_display_power(is_on)` is called on the tray's thread when the console display
    goes on (or dimmed) or off, and with its state when the tray starts. It belongs to
    the drawn tray (the default `view_factory`), so it cannot come with another one."""
    if view_factory is None:
        view_factory = notify_icon_view_factory(on_display_power)
    elif on_display_power is not None:
        raise ValueError("on_display_power goes to the drawn tray: pass no view_factory")
    loop = asyncio.get_running_loop()
    actions = LinkOwnerActions(link, console_url(gateway_url), open_url=open_url)
    controller = TrayController(loop, link, actions)
    view = view_factory(controller.presentation, controller.on_menu)
    controller.attach(view)
    view.start()
    return OwnerTray(controller, view, asyncio.Event())


def try_start_owner_tray(
    link: AgentLink,
    gateway_url: str,
    *,
    on_display_power: Callable[[bool], None] | None = None,
) -> OwnerTray | None:
    """`start_owner_tray`, or None when no tray can be drawn here (logged): the agent
    serves on without it, and the console stays the owner's way to end a session."""
    try:
        return start_owner_tray(link, gateway_url, on_display_power=on_display_power)
    except Exception as exc:
        _log.error("the tray icon could not start (end sessions from the console): %s", exc)
        return None
