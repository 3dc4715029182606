"""POST /wait against a real GTK app on Xvfb: a zenity dialog launched through the API
is waited for by its OK button, found by name in the focused window's targets."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from tests.e2e.x11_rig import X11Session

pytestmark = [pytest.mark.x11, pytest.mark.postgres]

# A GTK dialog takes a few seconds to map and reach the accessibility bus on a busy
# 2-core machine.
DIALOG_TIMEOUT_MS = 20000


@pytest.fixture
def session(x11_session: X11Session) -> tuple[httpx2.AsyncClient, str]:
    """A session on the Xvfb desktop; its end closes what the test launched."""
    return x11_session.client, x11_session.session_id


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
