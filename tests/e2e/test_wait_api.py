"""POST /v1/sessions/{id}/wait on the sim rig: until a change, quiet or a target,
met and not met in time; bad bodies are 400s with nothing sent to the host; a wait
keeps its session from idling; the gateway redacts a masked target the host let through."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from rigway.agent.backends.base import AccessibilitySnapshot, Pixels, Rect, WalkBudget
from rigway.agent.backends.sim import SimDesktop
from rigway.protocol import Request, ops
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.e2e.raw_host import answer_like_a_plain_host, ok, pair_rig, raw_host

pytestmark = pytest.mark.postgres

BUSY = Rect(0, 0, 8, 8)


class WatchedSim(SimDesktop):
    """The sim desktop, counting damage polls and accessibility walks (a wait is under
    way on the host once they move); `busy` makes every poll report damage, and every
    grab show new pixels there (a spinner)."""

    def __init__(self) -> None:
        super().__init__()
        self.polls = 0
        self.walks = 0
        self.busy = False
        self.busy_frames = 0

    def poll_damage(self) -> list[Rect]:
        self.polls += 1
        return [*super().poll_damage(), *([BUSY] if self.busy else [])]

    def grab(self) -> Pixels:
        pixels = super().grab()
        if self.busy:
            self.busy_frames += 1
            pixels[BUSY.y : BUSY.y + BUSY.h, BUSY.x : BUSY.x + BUSY.w] = self.busy_frames % 256
        return pixels

    def snapshot_accessibility(self, budget: WalkBudget) -> AccessibilitySnapshot:
        self.walks += 1
        return super().snapshot_accessibility(budget)

    def click(self, x: int, y: int) -> None:
        self.move_pointer(x, y)
        self.set_button("left", True)
        self.set_button("left", False)


@pytest.fixture
async def sim_stack(tmp_path: Path, database_url: str) -> AsyncIterator[tuple[Stack, WatchedSim]]:
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        desktop = WatchedSim()
        await stack.add_agent(desktop)
        yield stack, desktop


def _centre(rect: Rect) -> tuple[int, int]:
    return rect.x + rect.w // 2, rect.y + rect.h // 2


async def _wait(stack: Stack, session_id: str, **body: Any) -> dict[str, Any]:
    response = await stack.client.post(f"/v1/sessions/{session_id}/wait", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert isinstance(answer, dict)
    return answer


# ---- change ---------------------------------------------------------------------------------


async def test_a_change_during_the_wait_meets_it(sim_stack: tuple[Stack, WatchedSim]) -> None:
    stack, sim = sim_stack
    session_id = await stack.start_session()
    polls = sim.polls
    waiting = asyncio.create_task(_wait(stack, session_id, until="change", timeout_ms=10000))
    # Polled twice: the mark is taken and the wait is watching.
    await stack.wait_until(lambda: sim.polls >= polls + 2)
    sim.click(*_centre(sim.control_rect("remember")))  # the box toggles: damage
    answer = await waiting
    assert answer["met"] is True
    assert answer["waited_ms"] < 10000
    assert answer["target"] is None


async def test_a_still_screen_does_not_meet_a_change_wait(
    sim_stack: tuple[Stack, WatchedSim],
) -> None:
    stack, sim = sim_stack
    session_id = await stack.start_session()
    sim.click(*_centre(sim.control_rect("password")))  # damage from before the wait
    answer = await _wait(stack, session_id, until="change", timeout_ms=200)
    assert answer == {"met": False, "waited_ms": answer["waited_ms"], "target": None}
    assert answer["waited_ms"] >= 200


# ---- quiet ----------------------------------------------------------------------------------


async def test_a_still_screen_meets_a_quiet_wait(sim_stack: tuple[Stack, WatchedSim]) -> None:
    stack, _ = sim_stack
    session_id = await stack.start_session()
    answer = await _wait(stack, session_id, until="quiet", quiet_ms=50, timeout_ms=5000)
    assert answer["met"] is True
    assert 50 <= answer["waited_ms"] < 5000


async def test_a_busy_screen_does_not_meet_a_quiet_wait(
    sim_stack: tuple[Stack, WatchedSim],
) -> None:
    stack, sim = sim_stack
    session_id = await stack.start_session()
    sim.busy = True
    answer = await _wait(stack, session_id, until="quiet", quiet_ms=50, timeout_ms=300)
    assert answer["met"] is False
    assert answer["waited_ms"] >= 300


# ---- target ---------------------------------------------------------------------------------


async def test_a_control_that_appears_meets_a_target_wait(
    sim_stack: tuple[Stack, WatchedSim],
) -> None:
    stack, sim = sim_stack
    session_id = await stack.start_session()
    walks = sim.walks
    body = {"name": "recent DOCUMENT 30", "role": "list item"}
    waiting = asyncio.create_task(
        _wait(stack, session_id, until="target", target=body, timeout_ms=10000)
    )
    await stack.wait_until(lambda: sim.walks > walks)  # looked once: not there yet
    sim.move_pointer(*_centre(sim.control_rect("recent")))
    sim.scroll(0, -100)  # to the bottom of the list
    answer = await waiting
    assert answer["met"] is True
    target = answer["target"]
    assert (target["name"], target["role"]) == ("Recent document 30", "list item")
    assert target["id"].startswith("t_")
    listed = await stack.client.get(f"/v1/sessions/{session_id}/targets")
    assert target in listed.json()["targets"]  # the public target, as /targets shows it


async def test_a_target_that_never_appears_is_not_met(
    sim_stack: tuple[Stack, WatchedSim],
) -> None:
    stack, _ = sim_stack
    session_id = await stack.start_session()
    answer = await _wait(
        stack, session_id, until="target", target={"name": "No such control"}, timeout_ms=300
    )
    assert answer["met"] is False
    assert answer["target"] is None
    assert answer["waited_ms"] >= 150


async def test_a_target_wait_by_id_finds_that_control(sim_stack: tuple[Stack, WatchedSim]) -> None:
    stack, _ = sim_stack
    session_id = await stack.start_session()
    listed = (await stack.client.get(f"/v1/sessions/{session_id}/targets")).json()["targets"]
    sign_in = next(t for t in listed if t["name"] == "Sign in")
    answer = await _wait(
        stack, session_id, until="target", target={"id": sign_in["id"]}, timeout_ms=2000
    )
    assert answer["target"] == sign_in


# ---- activity -------------------------------------------------------------------------------


async def test_a_wait_counts_as_activity(sim_stack: tuple[Stack, WatchedSim]) -> None:
    stack, _ = sim_stack
    session_id = await stack.start_session()
    live = stack.services.sessions.live.get(session_id)
    assert live is not None
    before = live.last_activity_at
    await _wait(stack, session_id, until="change", timeout_ms=50)
    assert live.last_activity_at > before


# ---- refused bodies ---------------------------------------------------------------------------

BAD_BODIES: list[Any] = [
    {},
    {"until": "change"},
    {"until": "change", "timeout_ms": 0},
    {"until": "change", "timeout_ms": 30001},
    {"until": "change", "timeout_ms": "100"},
    {"until": "change", "timeout_ms": 100.0},
    {"until": "change", "timeout_ms": True},
    {"until": "later", "timeout_ms": 100},
    {"until": "change", "timeout_ms": 100, "extra": 1},
    {"until": "target", "timeout_ms": 100},
    {"until": "target", "timeout_ms": 100, "target": {}},
    {"until": "target", "timeout_ms": 100, "target": {"name": ""}},
    {"until": "target", "timeout_ms": 100, "target": {"name": "OK", "label": "x"}},
    {"until": "change", "timeout_ms": 100, "target": {"name": "OK"}},
    {"until": "change", "timeout_ms": 100, "quiet_ms": 50},
    {"until": "quiet", "timeout_ms": 1000, "quiet_ms": 10},
    {"until": "quiet", "timeout_ms": 100, "quiet_ms": 200},
    {"until": "quiet", "timeout_ms": 50},  # the default quiet_ms (100) exceeds it
    [],
]


async def test_bad_bodies_are_400s_and_nothing_reaches_the_host(bare_stack: Stack) -> None:
    rig_id, rig_token = await pair_rig(bare_stack)
    async with raw_host(bare_stack.base_url, rig_token) as host:
        session_id = await bare_stack.start_session_on(rig_id)
        for body in BAD_BODIES:
            response = await bare_stack.client.post(f"/v1/sessions/{session_id}/wait", json=body)
            assert response.status_code == 400, (body, response.text)
            assert response.json()["error"].startswith("invalid_request"), body
        assert ops.SCREEN_WAIT not in host.ops_seen()


async def test_the_host_is_asked_what_the_body_says(bare_stack: Stack) -> None:
    rig_id, rig_token = await pair_rig(bare_stack)
    async with raw_host(bare_stack.base_url, rig_token) as host:
        session_id = await bare_stack.start_session_on(rig_id)
        url = f"/v1/sessions/{session_id}/wait"
        await bare_stack.client.post(url, json={"until": "quiet", "timeout_ms": 900})
        target = {"name": "OK", "role": "push button"}
        body = {"until": "target", "timeout_ms": 800, "target": target}
        await bare_stack.client.post(url, json=body)
        sent = [r.body for r in host.requests if r.op == ops.SCREEN_WAIT]
    assert [ops.ScreenWait.model_validate(b) for b in sent] == [
        ops.ScreenWait(session_id=session_id, until="quiet", timeout_ms=900, quiet_ms=100),
        ops.ScreenWait(
            session_id=session_id,
            until="target",
            timeout_ms=800,
            target_name="OK",
            target_role="push button",
        ),
    ]


async def test_a_masked_target_the_host_sent_in_plaintext_is_redacted(bare_stack: Stack) -> None:
    secret = "hunter2-plaintext"
    password = ops.Target(
        id="t1", x=1, y=2, w=80, h=20, role="password text", name="Password",
        masked=True, value=secret,
    )  # fmt: skip

    async def leaky_host(request: Request) -> str | bytes | None:
        if request.op == ops.SCREEN_WAIT:
            waited = ops.ScreenWaited(met=True, waited_ms=12.4, target=password)
            return ok(request, waited.model_dump())
        return await answer_like_a_plain_host(request)

    rig_id, rig_token = await pair_rig(bare_stack)
    async with raw_host(bare_stack.base_url, rig_token, leaky_host):
        session_id = await bare_stack.start_session_on(rig_id)
        response = await bare_stack.client.post(
            f"/v1/sessions/{session_id}/wait",
            json={"until": "target", "timeout_ms": 500, "target": {"role": "password text"}},
        )
    assert response.status_code == 200, response.text
    assert secret not in response.text
    assert response.json() == {
        "met": True,
        "waited_ms": 12,
        "target": {
            "id": "t1", "x": 1, "y": 2, "w": 80, "h": 20, "role": "password text",
            "name": "Password", "source": "uia", "focused": False, "masked": True,
            "value": ops.MASKED_VALUE,
        },
    }  # fmt: skip


async def test_a_session_that_ends_during_a_wait_answers_410(
    sim_stack: tuple[Stack, WatchedSim],
) -> None:
    stack, sim = sim_stack
    session_id = await stack.start_session()
    walks = sim.walks
    body = {"until": "target", "target": {"name": "No such control"}, "timeout_ms": 1000}
    waiting = asyncio.create_task(stack.client.post(f"/v1/sessions/{session_id}/wait", json=body))
    await stack.wait_until(lambda: sim.walks > walks)  # the wait runs on the host
    ended = await stack.client.delete(f"/v1/sessions/{session_id}")
    assert ended.status_code == 200, ended.text
    response = await waiting
    assert response.status_code == 410, response.text
    assert response.json() == {"error": "session_ended: the host no longer runs this session"}
