"""A walk stopped at the agent's element budget says so through the API.

The budget is the agent's setting (`AgentSettings.max_walk_elements`); a sim rig given
a budget below its control count must report `truncated: true` on `/targets`, on
`/observe` and through the SDK, with no more targets than the budget. A rig on the
default budget walks the whole sign-in window and says `truncated: false`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rigway.client import AsyncRigway
from tests.e2e.harness import Stack, running_stack

pytestmark = pytest.mark.postgres

# Below the sim sign-in window's control count (asserted on the default rig below).
TINY_BUDGET = 3


@pytest.fixture
async def tiny_budget_stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        reaper_interval_s=3600,
        agent_settings={"max_walk_elements": TINY_BUDGET},
    ) as running:
        yield running


async def _get(stack: Stack, session_id: str, path: str, **params: Any) -> dict[str, Any]:
    response = await stack.client.get(f"/v1/sessions/{session_id}{path}", params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def test_tiny_budget_reports_truncated_targets_and_observe(
    tiny_budget_stack: Stack,
) -> None:
    stack = tiny_budget_stack
    session_id = await stack.start_session()

    targets = await _get(stack, session_id, "/targets")
    observed = await _get(stack, session_id, "/observe", image=0)

    assert targets["truncated"] is True
    assert 0 < len(targets["targets"]) <= TINY_BUDGET
    assert observed["truncated"] is True
    assert 0 < len(observed["targets"]) <= TINY_BUDGET
    # The summary keeps saying it in words, for a model reading the text only.
    assert observed["text"]["summary"].endswith(", truncated")


async def test_sdk_models_carry_truncated(tiny_budget_stack: Stack) -> None:
    stack = tiny_budget_stack
    async with (
        AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway,
        rigway.sessions.create(rig_id=stack.rig_ids[0]) as session,
    ):
        targets = await session.targets()
        observed = await session.observe(image=False)

    assert targets.truncated is True
    assert len(targets.targets) <= TINY_BUDGET
    assert observed.truncated is True
    assert len(observed.targets) <= TINY_BUDGET


async def test_default_budget_reports_the_whole_walk_untruncated(stack: Stack) -> None:
    session_id = await stack.start_session()

    targets = await _get(stack, session_id, "/targets")
    observed = await _get(stack, session_id, "/observe", image=0)

    assert targets["truncated"] is False
    assert observed["truncated"] is False
    assert "truncated" not in observed["text"]["summary"]
    # Otherwise the tiny budget above would truncate nothing and prove nothing.
    assert len(targets["targets"]) > TINY_BUDGET
    assert len(observed["targets"]) == len(targets["targets"])
