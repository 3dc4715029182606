"""`rigway agent pair` remembers the gateway and token file, `agent run` uses them;
`--name` defaults to the host name; `agent run` picks x11 on a display and the sim only
when asked. Through the real entry point (pairing and running against a live gateway)
and through typer's runner (the refusals, which need no gateway)."""

from __future__ import annotations

import asyncio
import json
import platform
import signal
import sys
from pathlib import Path, PurePosixPath, PureWindowsPath

import pytest
from typer.testing import CliRunner, Result

from rigway.cli.agent import agent_app
from rigway.cli.agent_config import default_agent_state_dir
from rigway.cli.agent_desktop import default_backend
from tests.e2e.harness import Stack

from .conftest import RIGWAY_SCRIPT, Cli

AGENT_ONLINE_TIMEOUT_S = 30.0


def invoke(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(agent_app, list(args), env=env)


async def pairing_code(stack: Stack) -> str:
    code = await stack.services.rigs.create_pairing_code(stack.account_id)
    return code.code


async def test_pair_remembers_the_gateway_and_token_file(
    cli: Cli, stack: Stack, tmp_path: Path
) -> None:
    agent_dir = tmp_path / "agent-state"
    code = await pairing_code(stack)
    paired = await cli("agent", "pair", "--gateway", stack.base_url, "--code", code,
                       "--state-dir", str(agent_dir))  # fmt: skip

    assert paired.exit_code == 0, paired.stderr
    remembered = json.loads((agent_dir / "agent.json").read_text())
    token_file = agent_dir / "rig.token"
    assert remembered == {"gateway": stack.base_url, "token_file": str(token_file)}
    assert token_file.read_text().startswith("rgw")
    assert token_file.stat().st_mode & 0o777 == 0o600


async def test_pair_names_the_rig_after_the_host(cli: Cli, stack: Stack, tmp_path: Path) -> None:
    code = await pairing_code(stack)
    paired = await cli("agent", "pair", "--gateway", stack.base_url, "--code", code,
                       "--state-dir", str(tmp_path / "agent-state"))  # fmt: skip
    rig_id = paired.stdout.split()[2]
    shown = await cli("rigs", "show", rig_id, "--json")

    assert paired.exit_code == 0, paired.stderr
    assert shown.json()["name"] == (platform.node() or "rig")


async def test_run_without_options_uses_what_pair_remembered(
    cli: Cli, stack: Stack, tmp_path: Path
) -> None:
    agent_dir = tmp_path / "agent-state"
    code = await pairing_code(stack)
    paired = await cli("agent", "pair", "--gateway", stack.base_url, "--code", code,
                       "--state-dir", str(agent_dir), "--name", "remembered")  # fmt: skip
    assert paired.exit_code == 0, paired.stderr
    rig_id = paired.stdout.split()[2]
    command = (
        [str(RIGWAY_SCRIPT)]
        if RIGWAY_SCRIPT.exists()
        else [sys.executable, "-m", "rigway.cli.main"]
    )
    agent = await asyncio.create_subprocess_exec(
        *command, "agent", "run", "--backend", "sim", "--no-update",
        env=cli.env | {"RIGWAY_AGENT_STATE_DIR": str(agent_dir)},
        stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        online = asyncio.create_task(stack.services.registry.wait_online(rig_id))
        exited = asyncio.create_task(agent.wait())
        done, _ = await asyncio.wait(
            {online, exited}, timeout=AGENT_ONLINE_TIMEOUT_S, return_when=asyncio.FIRST_COMPLETED
        )
        online.cancel()
        assert online in done, "the agent exited or did not come online"
    finally:
        if agent.returncode is None:
            agent.send_signal(signal.SIGTERM)
        await agent.communicate()


def test_run_with_nothing_remembered_names_both_ways(tmp_path: Path) -> None:
    ran = invoke("run", "--backend", "sim", "--state-dir", str(tmp_path))

    assert ran.exit_code == 2
    assert "no gateway: pass --gateway, or pair first" in ran.output
    assert str(tmp_path / "agent.json") in ran.output


@pytest.mark.skipif(sys.platform == "win32", reason="the default there is windows")
def test_run_without_a_display_asks_for_one_or_for_sim(tmp_path: Path) -> None:
    token_file = tmp_path / "rig.token"
    token_file.write_text("rgw_rig_not_a_real_token")
    ran = invoke(
        "run", "--gateway", "http://127.0.0.1:9", "--token-file", str(token_file),
        "--state-dir", str(tmp_path),
        env={"DISPLAY": None},
    )  # fmt: skip

    assert ran.exit_code == 2
    assert "DISPLAY is not set" in ran.output
    assert "--backend sim" in ran.output


@pytest.mark.skipif(sys.platform == "win32", reason="the default there is windows")
def test_run_with_a_display_tries_x11_and_says_how_to_run_sim(tmp_path: Path) -> None:
    token_file = tmp_path / "rig.token"
    token_file.write_text("rgw_rig_not_a_real_token")
    absent = next(n for n in range(987, 1987) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    ran = invoke(
        "run", "--gateway", "http://127.0.0.1:9", "--token-file", str(token_file),
        "--state-dir", str(tmp_path), "--no-update",
        env={"DISPLAY": f":{absent}"},
    )  # fmt: skip

    assert ran.exit_code == 2
    assert "cannot open the x11 desktop" in ran.output
    assert "--backend sim runs a simulated desktop" in ran.output


def test_default_backend_is_the_platforms_desktop() -> None:
    assert default_backend("linux", ":0") == "x11"
    assert default_backend("linux", None) is None
    assert default_backend("linux", "") is None
    assert default_backend("win32", None) == "windows"


def test_default_agent_state_dir_per_platform() -> None:
    home = PurePosixPath("/home/ada")
    assert default_agent_state_dir("linux", {}, home) == home / ".local/state/rigway"
    assert default_agent_state_dir("linux", {"XDG_STATE_HOME": "/s"}, home) == PurePosixPath(
        "/s/rigway"
    )
    assert default_agent_state_dir("linux", {"XDG_STATE_HOME": "rel"}, home) == (
        home / ".local/state/rigway"
    )
    windows = default_agent_state_dir(
        "win32", {"LOCALAPPDATA": "C:\\Users\\ada\\AppData\\Local"}, PureWindowsPath("C:/")
    )
    assert windows == PureWindowsPath("C:\\Users\\ada\\AppData\\Local\\Rigway\\rig")
