"""GET /observe?mark=1 through the gateway on the sim rig: the answer names what the
image numbers, as `text.targets` numbers it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rigway.agent.backends.sim import SimDesktop
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack

pytestmark = pytest.mark.postgres


@pytest.fixture
async def sim_stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=0,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
    ) as stack:
        await stack.add_agent(SimDesktop())
        yield stack


async def _observe(stack: Stack, session_id: str, **params: int) -> dict[str, Any]:
    response = await stack.client.get(f"/v1/sessions/{session_id}/observe", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, dict)
    return body


async def test_mark_answers_each_drawn_index_with_its_target_id(sim_stack: Stack) -> None:
    session_id = await sim_stack.start_session()
    body = await _observe(sim_stack, session_id, mark=1)
    assert body["marked"] is True
    expected = [
        {"index": n, "id": target["id"], "labelled": True}
        for n, target in enumerate(body["targets"], start=1)
    ]
    assert body["marks"] == expected
    # The same n as the text line a model reads.
    first = body["text"]["targets"][0]
    assert first.startswith("[1] ")
    assert first.endswith(f"id={body['targets'][0]['id']}")


async def test_observe_without_mark_has_no_marks(sim_stack: Stack) -> None:
    session_id = await sim_stack.start_session()
    body = await _observe(sim_stack, session_id, mark=0)
    assert (body["marked"], body["marks"]) == (False, [])
