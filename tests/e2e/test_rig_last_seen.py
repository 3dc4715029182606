"""A rig's `last_seen_at` is when its agent was last heard: set by its hello, and again
when its link closes, so an offline rig shows when it went away."""

from __future__ import annotations

from pathlib import Path

from rigway.gateway.clock import FakeClock
from tests.e2e.harness import QUICK_AGENT, running_stack
from tests.support.log_records import log_records


async def test_an_offline_rig_was_last_seen_when_its_link_closed(
    tmp_path: Path, database_url: str
) -> None:
    clock = FakeClock()
    async with running_stack(
        tmp_path, database_url, clock=clock, agent_settings=QUICK_AGENT
    ) as stack:
        rig_id = stack.rig_ids[0]
        said_hello_at = clock.now()
        clock.advance(120)
        with log_records("rigway.gateway.hostlink.routes") as records:
            await stack.stop_agent(rig_id)
            # The route says so once it has written the time the link closed.
            await records.wait_for(f"host {rig_id} disconnected")
        closed_at = clock.now()
        clock.advance(60)  # later reads do not move it
        rig = await stack.services.rigs.get(stack.account_id, rig_id)
    assert rig.last_seen_at is not None
    assert rig.last_seen_at > said_hello_at
    assert rig.last_seen_at == closed_at
