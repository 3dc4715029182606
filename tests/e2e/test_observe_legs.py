"""Observe's three legs run at once; when one fails, nothing the others took is lost."""

from __future__ import annotations

from pathlib import Path

import pytest

from rigway.agent.backends.base import Pixels
from rigway.agent.backends.sim import SimDesktop
from tests.e2e.harness import running_stack

pytestmark = pytest.mark.postgres


class GrabFailsWhenArmed(SimDesktop):
    """The sim desktop, whose next screen grab fails once `armed` is set."""

    armed = False

    def grab(self) -> Pixels:
        if self.armed:
            self.armed = False
            raise OSError("the display went away")
        return super().grab()


async def test_failed_screenshot_leg_hands_the_dirty_take_back(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(tmp_path / "state", database_url, rigs=0) as stack:
        desktop = GrabFailsWhenArmed()
        rig_id = await stack.add_agent(desktop)
        session_id = await stack.client.post("/v1/sessions", json={"rig_id": rig_id})
        url = f"/v1/sessions/{session_id.json()['session_id']}"
        await stack.client.get(f"{url}/dirty")  # start from an empty take
        typed = await stack.client.post(
            f"{url}/input", json={"events": [{"type": "type_text", "text": "bob"}]}
        )
        assert typed.status_code == 200, typed.text

        desktop.armed = True
        failed = await stack.client.get(f"{url}/observe")
        assert failed.status_code == 502, failed.text
        assert failed.json()["error"].startswith("host_error")

        dirty = await stack.client.get(f"{url}/dirty")
        assert dirty.status_code == 200
        assert dirty.json()["rects"], "the failed observe swallowed the damage of the typing"
        observed = await stack.client.get(f"{url}/observe", params={"image": 0})
        assert observed.json()["changed"] is False
