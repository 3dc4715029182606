"""`rigway rigs controls` (console token) sets what API sessions may do on a rig, and
`rigway rigs show` says it, through the real entry point against a live gateway and sim
rig (fixtures in `conftest.py`)."""

from __future__ import annotations

from tests.e2e.harness import Stack

from .conftest import Cli
from .test_more_commands import console_token


async def test_controls_are_set_and_shown(cli: Cli, stack: Stack) -> None:
    rig_id = stack.rig_ids[0]
    owner = console_token(stack)
    before = await cli("rigs", "show", rig_id)
    changed = await cli(
        "rigs",
        "controls",
        rig_id,
        "--app-mode-only",
        "--owner-idle-s",
        "0",
        "--no-recordings",
        env=owner,
    )
    as_json = await cli("rigs", "controls", rig_id, "--any-mode", "--json", env=owner)

    assert before.exit_code == 0, before.stderr
    assert "any session mode, owner idle 10 s, recordings allowed" in before.stdout
    assert changed.exit_code == 0, changed.stderr
    assert changed.stdout.strip() == f"{rig_id}: app sessions only, owner idle 0 s, no recordings"
    assert as_json.exit_code == 0, as_json.stderr
    rig = as_json.json()
    assert (rig["app_mode_only"], rig["owner_idle_s"], rig["recordings_allowed"]) == (
        False,
        0,
        False,
    )


async def test_no_control_named_is_a_usage_error(cli: Cli, stack: Stack) -> None:
    result = await cli("rigs", "controls", stack.rig_ids[0], env=console_token(stack))

    assert result.exit_code == 2
    assert "name a control" in result.stderr


async def test_an_idle_delay_out_of_bounds_is_a_usage_error(cli: Cli, stack: Stack) -> None:
    result = await cli(
        "rigs", "controls", stack.rig_ids[0], "--owner-idle-s", "3601", env=console_token(stack)
    )
    shown = await cli("rigs", "show", stack.rig_ids[0], "--json")

    assert result.exit_code == 2
    assert shown.json()["owner_idle_s"] == 10


async def test_an_api_key_cannot_set_controls(cli: Cli, stack: Stack) -> None:
    result = await cli(
        "rigs",
        "controls",
        stack.rig_ids[0],
        "--owner-idle-s",
        "0",
        env={"RIGWAY_CONSOLE_TOKEN": stack.api_key},
    )
    shown = await cli("rigs", "show", stack.rig_ids[0], "--json")

    assert result.exit_code == 3
    assert "invalid_console_token" in result.stderr
    assert shown.json()["owner_idle_s"] == 10
