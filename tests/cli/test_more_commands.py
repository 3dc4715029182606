"""`rigway scroll`, `move`, `targets`, `dirty`, `stream`, `launch`, `kill` and
`rigs pairing-code|rename|unpair`, through the real entry point against a live gateway
and sim rig (fixtures in `conftest.py`)."""

from __future__ import annotations

import os
import signal

from tests.e2e.harness import Stack

from .conftest import Cli


def console_token(stack: Stack) -> dict[str, str]:
    """The environment that gives the CLI the account owner's console token."""
    identity = stack.services.identity
    assert identity is not None
    return {"RIGWAY_CONSOLE_TOKEN": identity.issue("usr_test", stack.account_id)}


def is_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_scroll_down_at_the_list_shows_later_items(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    recent = stack.sim().control_rect("recent")
    at = f"{recent.x + recent.w // 2},{recent.y + recent.h // 2}"
    scrolled = await cli("scroll", "down", "1", "--at", at, "-s", session, "--json")

    assert scrolled.exit_code == 0, scrolled.stderr
    assert [r["type"] for r in scrolled.json()["events"]] == ["mouse_scroll"]
    assert stack.sim().list_top_index > 0


async def test_scroll_up_at_the_top_of_the_list_stays_there(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    recent = stack.sim().control_rect("recent")
    at = f"{recent.x + 5},{recent.y + 5}"
    scrolled = await cli("scroll", "up", "--at", at, "-s", session)

    assert scrolled.exit_code == 0, scrolled.stderr
    assert scrolled.stdout.startswith(f"scrolled up 3 notches at {at}")
    assert stack.sim().list_top_index == 0


async def test_scroll_in_an_unknown_direction_is_a_usage_error(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    scrolled = await cli("scroll", "sideways", "-s", session)

    assert scrolled.exit_code == 2


async def test_move_puts_the_pointer_there(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    moved = await cli("move", "123", "45", "-s", session)

    assert moved.exit_code == 0, moved.stderr
    assert moved.stdout.startswith("moved the pointer to 123,45")
    assert stack.sim().pointer == (123, 45)


async def test_targets_numbers_the_controls_as_click_index_counts(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    as_json = await cli("targets", "-s", session, "--json")
    as_table = await cli("targets", "-s", session)

    assert as_json.exit_code == 0, as_json.stderr
    names = [target["name"] for target in as_json.json()["targets"]]
    assert {"Username", "Password", "Remember me"} <= set(names)
    number = names.index("Remember me") + 1
    assert as_table.exit_code == 0, as_table.stderr
    row = next(line for line in as_table.stdout.splitlines() if "Remember me" in line)
    assert row.split()[0] == str(number)


async def test_dirty_reports_what_a_scroll_redrew_then_nothing(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    recent = stack.sim().control_rect("recent")
    await cli("dirty", "-s", session)  # takes whatever the session's start left
    await cli("scroll", "down", "--at", f"{recent.x + 5},{recent.y + 5}", "-s", session)
    after_scroll = await cli("dirty", "-s", session, "--json")
    again = await cli("dirty", "-s", session)

    assert after_scroll.exit_code == 0, after_scroll.stderr
    assert after_scroll.json()["available"] is True
    assert after_scroll.json()["rects"] != []
    assert again.stdout.strip() == "nothing changed"


async def test_stream_prints_the_viewer_url(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    streamed = await cli("stream", "-s", session)
    as_json = await cli("stream", "-s", session, "--json")

    assert streamed.exit_code == 0, streamed.stderr
    assert streamed.stdout.startswith(f"{stack.base_url}/v1/stream/view?token=")
    assert as_json.json()["session_id"] == session
    assert as_json.json()["viewer_url"].startswith(f"{stack.base_url}/v1/stream/view?token=")


async def test_launch_then_kill_the_app_by_pid(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    launched = await cli("launch", "sleep", "600", "-s", session, "--json")
    pid = launched.json()["pid"]
    try:
        killed = await cli("kill", str(pid), "-s", session, "--json")

        assert launched.exit_code == 0, launched.stderr
        assert killed.exit_code == 0, killed.stderr
        assert killed.json()["killed"] == [pid]
        assert not is_running(pid)
    finally:
        if is_running(pid):
            os.kill(pid, signal.SIGKILL)


async def test_kill_with_nothing_launched_says_so(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    killed = await cli("kill", "-s", session)

    assert killed.exit_code == 0, killed.stderr
    assert killed.stdout.strip() == "nothing to kill"


async def test_launch_of_a_missing_program_exits_2(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    launched = await cli("launch", "/nonexistent/rigway-no-such-app", "-s", session)

    assert launched.exit_code == 2
    assert "invalid_request" in launched.stderr


async def test_pairing_code_makes_a_code_that_pairs(cli: Cli, stack: Stack) -> None:
    from rigway.agent.pairing import pair

    made = await cli("rigs", "pairing-code", "--json", env=console_token(stack))

    assert made.exit_code == 0, made.stderr
    paired = await pair(stack.base_url, made.json()["code"], name="cli-paired", os="", gpu="")
    assert paired.rig_id.startswith("rig_")


async def test_pairing_code_without_a_console_token_exits_3(cli: Cli) -> None:
    made = await cli("rigs", "pairing-code")

    assert made.exit_code == 3
    assert "no console token" in made.stderr


async def test_rename_then_unpair_a_rig(cli: Cli, stack: Stack) -> None:
    rig_id = stack.rig_ids[0]
    owner = console_token(stack)
    renamed = await cli("rigs", "rename", rig_id, "front desk", "--json", env=owner)
    shown = await cli("rigs", "show", rig_id, "--json")
    unpaired = await cli("rigs", "unpair", rig_id, env=owner)
    gone = await cli("rigs", "show", rig_id)

    assert renamed.exit_code == 0, renamed.stderr
    assert renamed.json()["name"] == "front desk"
    assert shown.json()["name"] == "front desk"
    assert unpaired.exit_code == 0, unpaired.stderr
    assert unpaired.stdout.strip() == f"unpaired {rig_id}"
    assert gone.exit_code == 4
