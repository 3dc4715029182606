"""`rigway drag`, `rigway wait`, `--settle`, `click --index` and numbered observe lines,
through the real entry point against a live gateway and sim rig."""

from __future__ import annotations

from tests.e2e.harness import Stack

from .conftest import Cli


def remember_points(stack: Stack) -> tuple[str, str]:
    """Two points inside the sim's "Remember me" check box, as X,Y arguments."""
    rect = stack.sim().control_rect("remember")
    return f"{rect.x + 2},{rect.y + 2}", f"{rect.x + rect.w - 3},{rect.y + rect.h - 3}"


async def test_drag_presses_moves_and_releases_in_one_settled_batch(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    start, end = remember_points(stack)
    dragged = await cli("drag", "-s", session, start, end, "--json")

    assert dragged.exit_code == 0, dragged.stderr
    report = dragged.json()
    assert [r["type"] for r in report["events"]] == ["mouse_down", "mouse_move", "mouse_up"]
    assert "settled" in report["settle"]
    # Pressed and released over the check box: the sim counts it a click.
    assert stack.sim().checkbox_checked is True
    assert stack.sim().pressed_buttons == frozenset()


async def test_drag_released_elsewhere_does_not_click(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    start, _ = remember_points(stack)
    dragged = await cli("drag", "-s", session, start, "5,5", "--no-settle")

    assert dragged.exit_code == 0, dragged.stderr
    assert dragged.stdout.startswith("dragged left from ")
    assert "settled" not in dragged.stdout
    assert stack.sim().checkbox_checked is False


async def test_drag_with_one_point_is_a_usage_error(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    dragged = await cli("drag", "-s", session, "5,5")
    malformed = await cli("drag", "-s", session, "5,5", "6")

    assert (dragged.exit_code, malformed.exit_code) == (2, 2)
    assert "two or more" in dragged.stderr
    assert "X,Y" in malformed.stderr


async def test_click_by_the_number_observe_prints(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    observed = await cli("observe", "-s", session, "--no-image")
    line = next(line for line in observed.stdout.splitlines() if "Remember me" in line)
    number = line.split("]")[0].lstrip("[")
    clicked = await cli("click", "-s", session, "--index", number, "--settle", "--json")

    assert observed.exit_code == 0, observed.stderr
    assert clicked.exit_code == 0, clicked.stderr
    assert clicked.json()["target"]["name"] == "Remember me"
    assert isinstance(clicked.json()["settle"]["waited_ms"], int)
    assert stack.sim().checkbox_checked is True


async def test_observe_lines_are_numbered_from_one(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    observed = await cli("observe", "-s", session, "--no-image")

    numbered = [line for line in observed.stdout.splitlines() if line.startswith("[")]
    assert numbered[0].startswith("[1] ")
    assert len(numbered) >= 3


async def test_an_ambiguous_name_exits_2_with_the_candidates(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    # "word" is in Password only; "e" is in Username, Remember me, …
    clicked = await cli("click", "-s", session, "--name", "e")

    assert clicked.exit_code == 2
    assert "ambiguous_target" in clicked.stderr
    assert "Username" in clicked.stderr
    assert stack.sim().checkbox_checked is False


async def test_an_index_past_the_list_exits_4(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    clicked = await cli("click", "-s", session, "--index", "999")

    assert clicked.exit_code == 4
    assert "no target with index 999" in clicked.stderr


async def test_type_and_key_settle_when_asked(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    typed = await cli("type", "-s", session, "ada", "--settle", "--json")
    pressed = await cli("key", "-s", session, "tab", "--settle")

    assert typed.exit_code == 0, typed.stderr
    assert set(typed.json()["settle"]) == {"settled", "waited_ms"}
    assert [r["type"] for r in typed.json()["events"]] == ["type_text"]
    assert pressed.exit_code == 0, pressed.stderr
    assert "the screen settled after" in pressed.stdout or "still changing" in pressed.stdout


async def test_wait_for_a_target_that_is_there(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    waited = await cli(
        "wait", "target", "-s", session, "--name", "remember", "--timeout-ms", "3000", "--json"
    )

    assert waited.exit_code == 0, waited.stderr
    assert waited.json()["met"] is True
    assert waited.json()["target"]["name"] == "Remember me"


async def test_wait_not_met_exits_9_and_still_prints(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    waited = await cli(
        "wait", "target", "-s", session, "--name", "No such control", "--timeout-ms", "300"
    )
    as_json = await cli(
        "wait", "target", "-s", session, "--id", "t_nothing", "--timeout-ms", "200", "--json"
    )

    assert waited.exit_code == 9
    assert waited.stdout.startswith("not met: no target within 300 ms")
    assert as_json.exit_code == 9
    assert as_json.json()["met"] is False


async def test_wait_quiet_on_a_still_screen(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    waited = await cli("wait", "quiet", "-s", session, "--quiet-ms", "50", "--json")

    assert waited.exit_code == 0, waited.stderr
    assert waited.json()["met"] is True


async def test_wait_options_of_another_kind_are_usage_errors(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    target_without_fields = await cli("wait", "target", "-s", session)
    change_with_name = await cli("wait", "change", "-s", session, "--name", "x")

    assert (target_without_fields.exit_code, change_with_name.exit_code) == (2, 2)
