"""The whole stack for tests of the SDK, CLI and MCP server against a live gateway."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from tests.e2e.harness import QUICK_AGENT, Stack, running_stack


@contextlib.asynccontextmanager
async def live_stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    """A gateway and one sim rig on real sockets, reachable from other processes."""
    async with running_stack(
        tmp_path / "gateway-state",
        database_url,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
    ) as stack:
        yield stack


async def active_session_ids(stack: Stack) -> list[str]:
    """The active sessions of the stack's API key, as the gateway lists them."""
    response = await stack.client.get("/v1/sessions")
    assert response.status_code == 200, response.text
    return [session["session_id"] for session in response.json()["sessions"]]
