"""The rig swarm on a real gateway: rigs paired through `/v1/agent/pair`, linked over
the host link, and a session on one of them served with the canned answers."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from rigway.agent.swarm import CannedScreen, RigSwarm, build_parser, pair_rigs, run_from_args
from rigway.protocol import ops
from tests.e2e.harness import Stack, batch_ran, ok_json

pytestmark = pytest.mark.postgres

SWARM_RIGS = 20


async def _paired_tokens(stack: Stack, count: int) -> list[tuple[str, str]]:
    """`count` rigs paired through the gateway's pairing endpoint, API access on."""
    codes = [(await stack.services.rigs.create_pairing_code(stack.account_id)).code]
    for _ in range(count - 1):
        codes.append((await stack.services.rigs.create_pairing_code(stack.account_id)).code)
    paired = await pair_rigs(stack.base_url, codes)
    for result in paired:
        await stack.services.rigs.set_api_access(stack.account_id, result.rig_id, True)
    return [(result.rig_id, result.rig_token) for result in paired]


@contextlib.asynccontextmanager
async def _running(swarm: RigSwarm) -> AsyncIterator[RigSwarm]:
    running = asyncio.create_task(swarm.run())
    try:
        yield swarm
    finally:
        swarm.stop()
        async with asyncio.timeout(10):
            await running


def _closed_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def test_twenty_swarm_rigs_link_and_a_session_on_one_is_served_canned(
    bare_stack: Stack,
) -> None:
    stack = bare_stack
    rigs = await _paired_tokens(stack, SWARM_RIGS)
    screen = CannedScreen.default()
    swarm = RigSwarm([stack.base_url], [token for _, token in rigs], screen=screen)
    async with _running(swarm):
        async with asyncio.timeout(20):
            await swarm.wait_linked()
        assert all(stack.services.registry.is_online(rig_id) for rig_id, _ in rigs)
        listed = ok_json(await stack.client.get("/v1/rigs"))
        online = {rig["id"]: rig["online"] for rig in listed["rigs"]}
        assert [online.get(rig_id) for rig_id, _ in rigs] == [True] * SWARM_RIGS

        rig_id = rigs[7][0]
        session_id = await stack.start_session_on(rig_id)
        shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
        assert shot.status_code == 200, shot.text
        assert shot.content == screen.jpeg
        assert shot.headers["x-screenshot-native-width"] == "1920"
        observed = ok_json(
            await stack.client.get(f"/v1/sessions/{session_id}/observe", params={"image": 0})
        )
        assert [target["name"] for target in observed["targets"]] == [
            "Name",
            "OK",
            "Remember me",
        ]
        with_image = await stack.client.get(f"/v1/sessions/{session_id}/observe")
        assert with_image.status_code == 200, with_image.text
        clicked = await stack.client.post(
            f"/v1/sessions/{session_id}/input",
            json={
                "events": [
                    {"type": "mouse_click", "x": 10, "y": 20},
                    {"type": "key_press", "key": "enter"},
                ]
            },
        )
        assert batch_ran(clicked) == 2
        ended = await stack.client.delete(f"/v1/sessions/{session_id}")
        assert ended.status_code == 200, ended.text

        served_rig = swarm.rig(rig_id)
        assert served_rig.active_session_id is None
        assert served_rig.served[ops.SESSION_START] == 1
        assert served_rig.served[ops.SESSION_END] == 1
        assert served_rig.served[ops.SCREEN_CAPTURE] == 2
        assert served_rig.served[ops.A11Y_TARGETS] == 2
        assert served_rig.served[ops.INPUT_BATCH] == 1
        others = [rig for rig in swarm.rigs if rig is not served_rig]
        assert sum(sum(rig.served.values()) for rig in others) == 0


async def test_a_rig_passes_over_a_dead_node_to_the_next_url(bare_stack: Stack) -> None:
    [(rig_id, token)] = await _paired_tokens(bare_stack, 1)
    dead = f"http://127.0.0.1:{_closed_port()}"
    swarm = RigSwarm([dead, bare_stack.base_url], [token], backoff_initial_s=0.05)
    async with _running(swarm):
        async with asyncio.timeout(10):
            await swarm.wait_linked()
        assert swarm.rigs[0].rig_id == rig_id
        assert bare_stack.services.registry.is_online(rig_id)


async def test_a_rig_whose_token_is_refused_stops_and_the_others_stay(bare_stack: Stack) -> None:
    [(_, token)] = await _paired_tokens(bare_stack, 1)
    swarm = RigSwarm([bare_stack.base_url], [token, "rgwr_" + "0" * 64])
    async with _running(swarm):
        async with asyncio.timeout(10):
            await swarm.wait_linked(1)
            while swarm.rigs[1].fatal is None:
                await asyncio.sleep(0.01)
        assert swarm.rigs[0].is_linked
        assert swarm.rigs[1].fatal == "closed with 4401"
        assert not swarm.rigs[1].is_linked


async def test_the_command_pairs_its_codes_keeps_the_tokens_and_links(
    bare_stack: Stack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codes = [
        (await bare_stack.services.rigs.create_pairing_code(bare_stack.account_id)).code
        for _ in range(3)
    ]
    (tmp_path / "codes").write_text("\n".join(codes) + "\n")
    args = build_parser().parse_args(
        [
            "--gateway", bare_stack.base_url,
            "--pairing-codes-file", str(tmp_path / "codes"),
            "--write-tokens", str(tmp_path / "tokens"),
        ]
    )  # fmt: skip
    stop = asyncio.Event()
    command = asyncio.create_task(run_from_args(args, stop))
    async with asyncio.timeout(20):
        while "linked 3/3" not in capsys.readouterr().out:
            assert not command.done()
            await asyncio.sleep(0.01)
    stop.set()
    async with asyncio.timeout(10):
        assert await command == 0
    tokens = (tmp_path / "tokens").read_text().split()
    assert len(tokens) == 3
    assert all(token.startswith("rgwr_") for token in tokens)


async def test_a_swarm_session_answers_waits_dirty_apps_and_a_settled_batch(
    bare_stack: Stack,
) -> None:
    [(rig_id, token)] = await _paired_tokens(bare_stack, 1)
    swarm = RigSwarm([bare_stack.base_url], [token])
    async with _running(swarm):
        async with asyncio.timeout(10):
            await swarm.wait_linked()
        session_id = await bare_stack.start_session_on(rig_id)
        base = f"/v1/sessions/{session_id}"
        client = bare_stack.client

        waited = ok_json(
            await client.post(f"{base}/wait", json={"until": "quiet", "timeout_ms": 500})
        )
        ok_json(await client.get(f"{base}/dirty"))  # the first take is the whole screen
        dirty = ok_json(await client.get(f"{base}/dirty"))
        launched = ok_json(await client.post(f"{base}/app/launch", json={"path": "calc"}))
        killed = await client.post(f"{base}/app/kill")
        settled = await client.post(
            f"{base}/input",
            json={"events": [{"type": "type_text", "text": "hi"}], "settle": {"quiet_ms": 50}},
        )

        assert waited["met"] is True
        assert dirty["rects"] == []
        assert launched["pid"] == 4242
        assert killed.status_code == 200, killed.text
        assert batch_ran(settled) == 1
        assert settled.json()["settle"]["settled"] is True
        served = swarm.rigs[0].served
        assert served[ops.SCREEN_WAIT] == 1
        assert served[ops.APP_LAUNCH] == served[ops.APP_KILL] == 1
