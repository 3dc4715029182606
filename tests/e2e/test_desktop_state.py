"""The desktop's state through the real gateway: a sim rig set to "locked" (and back)
shows on the Rig, the Session and every observe; input meanwhile is 409
`desktop_unavailable: <state>` and nothing of it runs; once normal, input runs again."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rigway.agent.backends.base import DesktopState
from rigway.client import AsyncRigway, ConflictError
from tests.e2e.harness import QUICK_AGENT, Stack, batch_ran, ok_json, running_stack

# Sampled often, so a test waiting for the gateway to hear of a change waits little.
OFTEN_SAMPLED = {**QUICK_AGENT, "desktop_state_interval_s": 0.02}
# Never sampled within a test: what the gateway knows came with a reply.
NEVER_SAMPLED = {**QUICK_AGENT, "desktop_state_interval_s": 3600.0}


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=OFTEN_SAMPLED
    ) as running:
        yield running


@pytest.fixture
async def unsampled_stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=NEVER_SAMPLED
    ) as running:
        yield running


async def _gateway_hears(stack: Stack, state: DesktopState) -> None:
    rig_id = stack.rig_ids[0]
    await stack.wait_until(lambda: stack.services.registry.desktop_state(rig_id) == state)


def _type_and_tick(stack: Stack) -> dict[str, Any]:
    """Type into the focused username field, then tick "Remember me"."""
    box = stack.sim().control_rect("remember")
    return {
        "events": [
            {"type": "type_text", "text": "alice"},
            {"type": "mouse_click", "x": box.x + 5, "y": box.y + 5},
        ]
    }


def _sim_picture(stack: Stack) -> tuple[object, ...]:
    sim = stack.sim()
    return (sim.pointer, sim.focused_control, sim.field_text("username"), sim.checkbox_checked)


async def test_connected_rig_is_normal(stack: Stack) -> None:
    rig = ok_json(await stack.client.get(f"/v1/rigs/{stack.rig_ids[0]}"))
    assert rig["desktop_state"] == "normal"


async def test_locked_rig_shows_locked(stack: Stack) -> None:
    stack.sim().set_desktop_state("locked")
    await _gateway_hears(stack, "locked")
    rig = ok_json(await stack.client.get(f"/v1/rigs/{stack.rig_ids[0]}"))
    assert rig["desktop_state"] == "locked"


async def test_active_session_shows_the_rigs_state(stack: Stack) -> None:
    session_id = await stack.start_session()
    stack.sim().set_desktop_state("screensaver")
    await _gateway_hears(stack, "screensaver")
    session = ok_json(await stack.client.get(f"/v1/sessions/{session_id}"))
    assert session["desktop_state"] == "screensaver"


async def test_observe_samples_the_state_with_its_take(unsampled_stack: Stack) -> None:
    stack = unsampled_stack
    session_id = await stack.start_session()
    stack.sim().set_desktop_state("secure_desktop")
    observed = ok_json(
        await stack.client.get(f"/v1/sessions/{session_id}/observe", params={"image": 0})
    )
    assert observed["desktop_state"] == "secure_desktop"
    assert observed["text"]["summary"].startswith("desktop secure_desktop: input is refused")


async def test_input_while_locked_is_409_and_nothing_runs(stack: Stack) -> None:
    session_id = await stack.start_session()
    stack.sim().set_desktop_state("locked")
    before = _sim_picture(stack)
    response = await stack.client.post(
        f"/v1/sessions/{session_id}/input", json=_type_and_tick(stack)
    )
    assert response.status_code == 409, response.text
    # Stopped before its first event: no receipt, nothing ran.
    assert response.json() == {
        "error": "desktop_unavailable: locked",
        "events": [],
        "stopped_at": 0,
    }
    assert _sim_picture(stack) == before


async def test_input_runs_again_once_normal(stack: Stack) -> None:
    session_id = await stack.start_session()
    sim = stack.sim()
    sim.set_desktop_state("locked")
    url = f"/v1/sessions/{session_id}/input"
    assert (await stack.client.post(url, json=_type_and_tick(stack))).status_code == 409
    sim.set_desktop_state("normal")
    assert batch_ran(await stack.client.post(url, json=_type_and_tick(stack))) == 2
    assert (sim.field_text("username"), sim.checkbox_checked) == ("alice", True)


async def test_refusal_updates_the_sessions_state_at_once(unsampled_stack: Stack) -> None:
    stack = unsampled_stack
    session_id = await stack.start_session()
    stack.sim().set_desktop_state("no_display")
    await stack.client.post(f"/v1/sessions/{session_id}/input", json=_type_and_tick(stack))
    session = ok_json(await stack.client.get(f"/v1/sessions/{session_id}"))
    assert session["desktop_state"] == "no_display"


async def test_offline_rig_has_no_state(stack: Stack) -> None:
    rig_id = stack.rig_ids[0]
    await stack.stop_agent(rig_id)
    rig = ok_json(await stack.client.get(f"/v1/rigs/{rig_id}"))
    assert (rig["online"], rig["desktop_state"]) == (False, None)


async def test_ended_session_has_no_state(stack: Stack) -> None:
    session_id = await stack.start_session()
    ended = ok_json(await stack.client.post(f"/v1/sessions/{session_id}/end"))
    assert (ended["status"], ended["desktop_state"]) == ("ended", None)


async def test_sdk_reads_the_state_and_raises_conflict_on_input(stack: Stack) -> None:
    stack.sim().set_desktop_state("locked")
    await _gateway_hears(stack, "locked")
    async with (
        AsyncRigway(api_key=stack.api_key, base_url=stack.base_url) as rigway,
        rigway.sessions.create(rig_id=stack.rig_ids[0]) as session,
    ):
        rig = await rigway.rigs.get(stack.rig_ids[0])
        record = await session.refresh()
        observed = await session.observe(image=False)
        with pytest.raises(ConflictError) as refused:
            await session.type_text("x")

    assert (rig.desktop_state, record.desktop_state, observed.desktop_state) == ("locked",) * 3
    assert (refused.value.code, refused.value.detail) == ("desktop_unavailable", "locked")
