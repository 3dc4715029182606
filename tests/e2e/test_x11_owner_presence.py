"""Owner presence on the x11 rig, through the real gateway: the agent's own (XTEST)
input never makes the owner active; a key of the rig's own keyboard (Xvfb's, a real
non-XTEST device: `tests.support.x_local_input`) makes API input sent right after it
409 `owner_active`, shows on observe and the Session, and input runs again once the
rig rested for the owner's delay."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from sqlalchemy import update

from rigway.agent.backends.x11 import X11Desktop
from rigway.gateway.db.models import Rig
from tests.e2e.harness import QUICK_AGENT, Stack, batch_ran, ok_json, running_stack
from tests.support.x_desktop import XDesktop
from tests.support.x_local_input import XvfbDevices

pytestmark = pytest.mark.x11

# The owner's delay given to the rig: short, so resting takes seconds, and long enough
# for "active" to hold through a few requests on a loaded machine.
IDLE_S = 3
SHIFT_TAP = {"events": [{"type": "key_press", "key": "shift"}]}


@dataclass
class OwnedRig:
    stack: Stack
    session_id: str
    backend: X11Desktop
    devices: XvfbDevices

    @property
    def client(self) -> httpx2.AsyncClient:
        return self.stack.client

    async def input(self, body: dict[str, Any] = SHIFT_TAP) -> httpx2.Response:
        return await self.client.post(f"/v1/sessions/{self.session_id}/input", json=body)

    async def session(self) -> dict[str, Any]:
        return ok_json(await self.client.get(f"/v1/sessions/{self.session_id}"))

    async def observe(self) -> dict[str, Any]:
        url = f"/v1/sessions/{self.session_id}/observe"
        return ok_json(await self.client.get(url, params={"image": 0}))

    async def rested(self) -> None:
        """Until the owner's last key (an earlier test's) is older than the delay."""

        def has_rested() -> bool:
            last = self.backend.last_local_input()
            return last is None or time.monotonic() - last >= IDLE_S

        await self.stack.wait_until(has_rested)


@pytest.fixture
def devices(x_desktop: XDesktop) -> Iterator[XvfbDevices]:
    pressing = XvfbDevices(x_desktop.display)
    yield pressing
    pressing.close()


@pytest.fixture
async def rig(
    tmp_path: Path,
    database_url: str,
    x_desktop: XDesktop,
    x11_backend: X11Desktop,
    devices: XvfbDevices,
) -> AsyncIterator[OwnedRig]:
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        rig_id = await stack.add_agent(x11_backend)
        async with stack.services.db() as db, db.begin():
            await db.execute(update(Rig).where(Rig.id == rig_id).values(owner_idle_s=IDLE_S))
        session_id = await stack.start_session()
        assert x11_backend.local_input_ready.wait(10)
        owned = OwnedRig(stack, session_id, x11_backend, devices)
        await owned.rested()
        try:
            yield owned
        finally:
            await stack.client.delete(f"/v1/sessions/{session_id}")
            x_desktop.release_everything()


async def test_agents_own_input_never_makes_the_owner_active(rig: OwnedRig) -> None:
    seen = rig.backend.injected_input_count
    move = {"events": [{"type": "mouse_move", "x": 40, "y": 40}, *SHIFT_TAP["events"]]}
    assert batch_ran(await rig.input(move)) == 2
    assert batch_ran(await rig.input()) == 1
    # The listener read the agent's XTEST events and did not count them.
    await rig.stack.wait_until(lambda: rig.backend.injected_input_count > seen)
    assert (await rig.observe())["owner_active"] is False
    assert (await rig.session())["owner_active"] is False


async def test_api_input_right_after_a_local_key_is_409(rig: OwnedRig) -> None:
    sent_at = rig.devices.tap_shift()
    response = await rig.input()
    answered_ms = (time.monotonic() - sent_at) * 1000
    assert response.status_code == 409, response.text
    assert response.json()["error"].startswith("owner_active: ")
    recorded = rig.backend.last_local_input()
    assert recorded is not None
    print(
        f"local key read {(recorded - sent_at) * 1000:.2f} ms after it was sent; "
        f"the API's 409 came {answered_ms:.1f} ms after it"
    )
    assert (await rig.session())["owner_active"] is True
    assert (await rig.observe())["owner_active"] is True


async def test_input_runs_again_once_the_rig_rested(rig: OwnedRig) -> None:
    rig.devices.click(button=1)
    # Sent at once: what lies between the click and the host's check is one round trip.
    assert (await rig.input()).status_code == 409
    # The agent tells the gateway when the delay has passed.
    await rig.stack.wait_until(
        lambda: rig.stack.services.registry.owner_active(rig.stack.rig_ids[0]) is False
    )
    assert batch_ran(await rig.input()) == 1
    assert (await rig.observe())["owner_active"] is False


async def test_screens_keep_working_while_the_owner_is_active(rig: OwnedRig) -> None:
    rig.devices.tap_shift()
    assert (await rig.observe())["owner_active"] is True
    shot = await rig.client.get(f"/v1/sessions/{rig.session_id}/screenshot")
    assert shot.status_code == 200, shot.text
