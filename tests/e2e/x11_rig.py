"""The x11 rig of the e2e tests: a gateway, an agent on a disposable Xvfb desktop, and
a session on it. The x11 modules get it through conftest.py's fixtures, which import
this module only when a test asks for them: the x11 extra and Xlib are optional, and
the rest of e2e runs without them.

Apps get a GTK config with the text cursor's blink off: a blinking cursor damages the
screen twice a second, which would make every "nothing changed" check moot.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx2

from rigway.agent.apps import ProcessTracker
from rigway.agent.backends.x11 import X11Desktop
from tests.e2e.harness import QUICK_AGENT, running_stack
from tests.support.x_desktop import XDesktop, wait_until

GTK_SETTINGS = "[Settings]\ngtk-cursor-blink = false\n"


@dataclass(frozen=True)
class X11Session:
    """An active session on the x11 rig; `tracker` launches its apps (`/app/launch`)."""

    client: httpx2.AsyncClient
    session_id: str
    tracker: ProcessTracker


def app_environment(x_desktop: XDesktop, config_home: Path) -> dict[str, str]:
    """What apps run with: the Xvfb desktop and, under `config_home`, no cursor blink."""
    (config_home / "gtk-3.0").mkdir(parents=True, exist_ok=True)
    (config_home / "gtk-3.0" / "settings.ini").write_text(GTK_SETTINGS)
    return {**x_desktop.env, "XDG_CONFIG_HOME": str(config_home)}


@asynccontextmanager
async def x11_session(
    state_dir: Path,
    database_url: str,
    x_desktop: XDesktop,
    backend: X11Desktop,
    app_env: dict[str, str],
) -> AsyncIterator[X11Session]:
    """Ending it ends the session (idempotent), which kills what the test launched
    through the API; input is then released and the desktop waited empty, so tests
    never see each other's windows or held buttons."""
    tracker = ProcessTracker(env=app_env)
    async with running_stack(
        state_dir, database_url, rigs=0, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        await stack.add_agent(backend, apps=tracker)
        session_id = await stack.start_session()
        try:
            yield X11Session(stack.client, session_id, tracker)
        finally:
            await stack.client.delete(f"/v1/sessions/{session_id}")
            x_desktop.release_everything()
    await asyncio.to_thread(
        wait_until, lambda: x_desktop.client_windows() == [], message="an empty desktop"
    )
