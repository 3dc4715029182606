"""The rig's monitors through the real gateway: a sim rig shows one display, the size of
its desktop, on the Rig and on an active Session; offline or ended: none. A change on
the host reaches the Rig while connected (a `desktop/displays` note)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigway.agent.backends import base
from rigway.client import Display, Rig, Session
from tests.e2e.harness import QUICK_AGENT, Stack, ok_json, running_stack

# Read often, so a test waiting for the gateway to hear of a change waits little.
OFTEN_READ = {**QUICK_AGENT, "displays_interval_s": 0.02}


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=OFTEN_READ
    ) as running:
        yield running


def _whole_sim(stack: Stack) -> Display:
    width, height = stack.sim().native_size()
    return Display(x=0, y=0, width=width, height=height, scale=1.0, primary=True)


async def test_connected_sim_rig_shows_one_display_of_its_size(stack: Stack) -> None:
    rig = Rig.model_validate(ok_json(await stack.client.get(f"/v1/rigs/{stack.rig_ids[0]}")))
    assert rig.displays == [_whole_sim(stack)]


async def test_active_session_shows_the_rigs_display(stack: Stack) -> None:
    session_id = await stack.start_session()
    body = ok_json(await stack.client.get(f"/v1/sessions/{session_id}"))
    assert Session.model_validate(body).displays == [_whole_sim(stack)]


async def test_ended_session_shows_no_display(stack: Stack) -> None:
    session_id = await stack.start_session()
    ended = await stack.client.delete(f"/v1/sessions/{session_id}")
    assert ended.status_code in (200, 204), ended.text
    body = ok_json(await stack.client.get(f"/v1/sessions/{session_id}"))
    assert body["displays"] == []


async def test_offline_rig_shows_no_display(stack: Stack) -> None:
    rig_id = stack.rig_ids[0]
    await stack.stop_agent(rig_id)
    rig = ok_json(await stack.client.get(f"/v1/rigs/{rig_id}"))
    assert (rig["online"], rig["displays"]) == (False, [])


async def test_changed_monitors_reach_the_rig(stack: Stack) -> None:
    rig_id = stack.rig_ids[0]
    width, height = stack.sim().native_size()
    half = width // 2
    stack.sim().set_displays(
        [
            base.Display(0, 0, half, height, scale=1.0, primary=True),
            base.Display(half, 0, width - half, height, scale=1.5),
        ]
    )
    await stack.wait_until(lambda: len(stack.services.registry.displays(rig_id)) == 2)
    rig = Rig.model_validate(ok_json(await stack.client.get(f"/v1/rigs/{rig_id}")))
    assert [(d.x, d.scale, d.primary) for d in rig.displays] == [(0, 1.0, True), (half, 1.5, False)]
