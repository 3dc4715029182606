"""The live sessions list shows when the rig's owner uses its own keyboard or mouse
(API input then waits): in the first paint and in the live values it polls."""

from __future__ import annotations

import pytest

from rigway.gateway.console.live import OWNER_ACTIVE_WORDS
from tests.e2e.harness import Stack
from tests.gateway.console.pages import ConsolePages

pytestmark = pytest.mark.postgres


async def test_an_idle_owner_shows_nothing(stack: Stack, owner: ConsolePages) -> None:
    session_id = await stack.start_session()
    values = (await owner.client.get("/console/live.json")).json()
    assert values[f"session:{session_id}:owner"] == ""


async def test_the_owner_at_the_rig_shows_in_the_list(stack: Stack, owner: ConsolePages) -> None:
    session_id = await stack.start_session()
    stack.sim().record_local_input()
    rig_id = stack.rig_ids[0]
    await stack.wait_until(lambda: stack.services.registry.owner_active(rig_id) is True)
    values = (await owner.client.get("/console/live.json")).json()
    assert values[f"session:{session_id}:owner"] == OWNER_ACTIVE_WORDS
    page = (await owner.client.get("/console/sessions")).text
    cell = f'data-live="session:{session_id}:owner"'
    assert cell in page
    assert page.split(cell, 1)[1].split("</td>", 1)[0].endswith(OWNER_ACTIVE_WORDS)
