"""GET /observe through the gateway: its legs leave together, `mark` and `image` do what
docs/api.md says on the sim rig, and the gateway redacts a masked value the host let
through."""

from __future__ import annotations

import asyncio
import base64
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import simplejpeg

from rigway.agent.backends.base import Pixels
from rigway.agent.backends.sim import SimDesktop
from rigway.protocol import Request, ops
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.e2e.raw_host import answer_like_a_plain_host, pair_rig, raw_host, targets

pytestmark = pytest.mark.postgres

OBSERVE_LEGS = frozenset({ops.SCREEN_CAPTURE, ops.SCREEN_DIRTY, ops.A11Y_TARGETS})


# ---- a raw host --------------------------------------------------------------------------


class ObserveBarrier:
    """Answers none of observe's three requests until all three have arrived: a gateway
    that sent them one after another would wait out its deadline on the first."""

    def __init__(self) -> None:
        self.arrived: set[str] = set()
        self.all_arrived = asyncio.Event()

    async def answer(self, request: Request) -> str | bytes | None:
        if request.op in OBSERVE_LEGS:
            self.arrived.add(request.op)
            if self.arrived == OBSERVE_LEGS:
                self.all_arrived.set()
            await self.all_arrived.wait()
        return await answer_like_a_plain_host(request)


async def test_observe_sends_its_three_legs_before_any_answer(bare_stack: Stack) -> None:
    rig_id, rig_token = await pair_rig(bare_stack)
    barrier = ObserveBarrier()
    async with raw_host(bare_stack.base_url, rig_token, barrier.answer) as host:
        session_id = await bare_stack.start_session_on(rig_id)
        response = await bare_stack.client.get(f"/v1/sessions/{session_id}/observe")
        assert response.status_code == 200, response.text
        assert barrier.arrived == OBSERVE_LEGS
        assert host.ops_seen().count(ops.SCREEN_CAPTURE) == 1
        assert response.json()["jpeg_base64"] is not None


async def test_the_gateway_redacts_a_masked_value_the_host_sent_in_plaintext(
    bare_stack: Stack,
) -> None:
    """Redaction is the host's job; a host that fails at it still leaks nothing."""
    secret = "hunter2-plaintext"
    password = ops.Target(
        id="t1", x=10, y=10, w=80, h=20, role="password text", name="Password",
        masked=True, value=secret,
    )  # fmt: skip
    username = ops.Target(
        id="t2", x=10, y=40, w=80, h=20, role="text", name="Username", value="bob"
    )

    async def leaky_host(request: Request) -> str | bytes | None:
        if request.op == ops.A11Y_TARGETS:
            return targets(request, password, username)
        return await answer_like_a_plain_host(request)

    rig_id, rig_token = await pair_rig(bare_stack)
    async with raw_host(bare_stack.base_url, rig_token, leaky_host):
        session_id = await bare_stack.start_session_on(rig_id)
        url = f"/v1/sessions/{session_id}"
        for response in (
            await bare_stack.client.get(f"{url}/targets"),
            await bare_stack.client.get(f"{url}/observe", params={"image": 0}),
        ):
            assert response.status_code == 200, response.text
            assert secret not in response.text
            by_id = {t["id"]: t for t in response.json()["targets"]}
            assert by_id["t1"]["masked"] is True
            assert by_id["t1"]["value"] == ops.MASKED_VALUE == "[redacted]"
            assert by_id["t2"]["value"] == "bob"  # only masked values are replaced


# ---- the sim rig -------------------------------------------------------------------------


class CountingSim(SimDesktop):
    """The sim desktop, counting the screen grabs the agent makes of it."""

    grabs = 0

    def grab(self) -> Pixels:
        self.grabs += 1
        return super().grab()


@pytest.fixture
async def sim_stack(tmp_path: Path, database_url: str) -> AsyncIterator[tuple[Stack, CountingSim]]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=0,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
    ) as stack:
        desktop = CountingSim()
        await stack.add_agent(desktop)
        yield stack, desktop


async def _observe(stack: Stack, session_id: str, **params: int) -> dict[str, Any]:
    response = await stack.client.get(f"/v1/sessions/{session_id}/observe", params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert isinstance(body, dict)
    return body


async def test_mark_draws_the_targets_on_the_image(
    sim_stack: tuple[Stack, CountingSim],
) -> None:
    stack, _ = sim_stack
    session_id = await stack.start_session()
    plain = await _observe(stack, session_id, mark=0)
    marked = await _observe(stack, session_id, mark=1)
    assert plain["targets"], "the sim has targets to mark"
    assert (plain["marked"], marked["marked"]) == (False, True)
    plain_jpeg = base64.b64decode(plain["jpeg_base64"])
    marked_jpeg = base64.b64decode(marked["jpeg_base64"])
    assert simplejpeg.decode_jpeg_header(marked_jpeg)[:2] == (1080, 1920)
    assert marked_jpeg != plain_jpeg
    # Nothing changed on the screen between the two: the difference is the marks.
    again = await _observe(stack, session_id, mark=0)
    assert again["changed"] is False
    assert base64.b64decode(again["jpeg_base64"]) == plain_jpeg


async def test_observe_without_image_asks_the_host_for_no_capture(
    sim_stack: tuple[Stack, CountingSim],
) -> None:
    stack, desktop = sim_stack
    session_id = await stack.start_session()
    grabs_before = desktop.grabs
    textual = await _observe(stack, session_id, image=0, mark=1)
    assert desktop.grabs == grabs_before, "image=0 made the host capture the screen"
    assert "jpeg_base64" not in textual
    assert textual["marked"] is False  # mark is ignored without an image
    assert textual["targets"]
    assert textual["timing"]["image"] is False
    assert textual["timing"]["screenshot_rtt_ms"] == 0
    assert textual["timing"]["host_jpeg_ms"] is None
    assert textual["timing"]["host_uia_ms"] is not None

    # The same session with an image: the counter sees the capture, the timing has it.
    imaged = await _observe(stack, session_id, image=1)
    assert desktop.grabs == grabs_before + 1
    assert imaged["jpeg_base64"]
    assert imaged["timing"]["image"] is True
    assert imaged["timing"]["host_jpeg_ms"] > 0
    assert imaged["timing"]["screenshot_rtt_ms"] > 0
