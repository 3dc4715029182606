"""POST /wait against a real GTK app on Xvfb: a zenity dialog launched through the API
is waited for by its OK button, found by name in the focused window's targets."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from rigway.agent.apps import ProcessTracker
from rigway.agent.backends.x11 import X11Desktop, open_x11_desktop
from tests.e2e.harness import QUICK_AGENT, running_stack
from tests.support.x_desktop import XDesktop, skip_reason, wait_until

pytestmark = [pytest.mark.x11, pytest.mark.postgres]

# A GTK dialog takes a few seconds to map and reach the accessibility bus on a busy
# 2-core machine.
DIALOG_TIMEOUT_MS = 20000
# Blinking text cursors damage the screen twice a second: off, so "quiet" can be met.
GTK_SETTINGS = "[Settings]\ngtk-cursor-blink = false\n"


@pytest.fixture(scope="module")
def x_desktop() -> Iterator[XDesktop]:
    reason = skip_reason()
    if reason is not None:
        pytest.skip(reason)
    with XDesktop() as desk:
        yield desk


@pytest.fixture(scope="module")
def x11_backend(x_desktop: XDesktop) -> Iterator[X11Desktop]:
    backend = open_x11_desktop(
        x_desktop.display, session_bus_address=x_desktop.env["DBUS_SESSION_BUS_ADDRESS"]
    )
    yield backend
    backend.close()


@pytest.fixture
async def session(
    tmp_path: Path, database_url: str, x_desktop: XDesktop, x11_backend: X11Desktop
) -> AsyncIterator[tuple[httpx2.AsyncClient, str]]:
    """A gateway, an agent on the Xvfb desktop and a session on it; ending the session
    closes what the test launched."""
    config = tmp_path / "xdg-config"
    (config / "gtk-3.0").mkdir(parents=True)
    (config / "gtk-3.0" / "settings.ini").write_text(GTK_SETTINGS)
    tracker = ProcessTracker(env={**x_desktop.env, "XDG_CONFIG_HOME": str(config)})
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        await stack.add_agent(x11_backend, apps=tracker)
        session_id = await stack.start_session()
        try:
            yield stack.client, session_id
        finally:
            await stack.client.delete(f"/v1/sessions/{session_id}")
            x_desktop.release_everything()
    wait_until(lambda: x_desktop.client_windows() == [], message="an empty desktop")


async def _post(client: httpx2.AsyncClient, session_id: str, path: str, body: Any) -> Any:
    response = await client.post(f"/v1/sessions/{session_id}{path}", json=body)
    assert response.status_code == 200, f"{path}: {response.text}"
    return response.json()


async def test_a_wait_for_ok_is_met_when_the_dialog_appears(
    session: tuple[httpx2.AsyncClient, str],
) -> None:
    client, session_id = session
    absent = await _post(
        client, session_id, "/wait",
        {"until": "target", "target": {"name": "OK"}, "timeout_ms": 300},
    )  # fmt: skip
    assert absent["met"] is False  # nothing is open yet
    await _post(
        client, session_id, "/app/launch",
        {"path": "zenity", "args": ["--info", "--title=Waited for", "--text=Here I am"]},
    )  # fmt: skip
    answer = await _post(
        client, session_id, "/wait",
        {"until": "target", "target": {"name": "OK"}, "timeout_ms": DIALOG_TIMEOUT_MS},
    )  # fmt: skip
    assert answer["met"] is True, answer
    button = answer["target"]
    assert button["name"].casefold() == "ok"
    assert button["role"] == "push button"
    assert min(button["w"], button["h"]) > 0
    listed = (await client.get(f"/v1/sessions/{session_id}/targets")).json()["targets"]
    assert button["id"] in {t["id"] for t in listed}  # the id input can act on
    settled = await _post(
        client, session_id, "/wait", {"until": "quiet", "quiet_ms": 200, "timeout_ms": 10000}
    )
    assert settled["met"] is True
