"""The `rigway` command through its real entry point, against a live gateway and sim rig
(fixtures and helpers in `conftest.py`)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.harness import Stack
from tests.support.live import active_session_ids

from .conftest import Cli, closed_port, start_session


async def test_sessions_start_list_end_round_trip(cli: Cli, stack: Stack) -> None:
    session_id = await start_session(cli, stack)
    remembered = (cli.state_dir / "cli-session").read_text().strip()
    listed = await cli("sessions", "list", "--json")
    ended = await cli("sessions", "end", "--json")

    assert remembered == session_id
    assert [s["session_id"] for s in listed.json()["sessions"]] == [session_id]
    assert ended.exit_code == 0, ended.stderr
    assert (ended.json()["status"], ended.json()["ended_reason"]) == ("ended", "client")
    assert not (cli.state_dir / "cli-session").exists()
    assert await active_session_ids(stack) == []


async def test_sessions_start_without_rig_picks_the_only_available_rig(
    cli: Cli, stack: Stack
) -> None:
    started = await cli("sessions", "start", "--json")

    assert started.exit_code == 0, started.stderr
    assert started.json()["rig_id"] == stack.rig_ids[0]


async def test_screenshot_writes_a_scaled_jpeg(cli: Cli, stack: Stack, tmp_path: Path) -> None:
    session = await stack.start_session()
    shot = await cli("screenshot", "-s", session, "-o", "shot.jpg", "--max-width", "640", "--json")

    assert shot.exit_code == 0, shot.stderr
    facts = shot.json()
    jpeg = (tmp_path / "shot.jpg").read_bytes()
    assert jpeg[:2] == b"\xff\xd8"
    assert (facts["width"], facts["height"], facts["bytes"]) == (640, 360, len(jpeg))


async def test_screenshot_region_is_cropped(cli: Cli, stack: Stack, tmp_path: Path) -> None:
    session = await stack.start_session()
    shot = await cli(
        "screenshot", "-s", session, "-o", "part.jpg", "--region", "10,20,300,200", "--json"
    )

    assert shot.exit_code == 0, shot.stderr
    assert (shot.json()["width"], shot.json()["height"]) == (300, 200)
    assert shot.json()["region"] == {"x": 10, "y": 20, "w": 300, "h": 200}


async def test_observe_json_parses_with_targets_and_text(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    observed = await cli("observe", "-s", session, "--json", "--no-image")

    assert observed.exit_code == 0, observed.stderr
    result = observed.json()
    names = {target["name"] for target in result["targets"]}
    assert {"Username", "Password", "Remember me"} <= names
    assert result["jpeg_base64"] is None
    assert any("Remember me" in line for line in result["text"]["targets"])


async def test_observe_for_people_prints_summary_and_target_lines(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    observed = await cli("observe", "--session", session)

    assert observed.exit_code == 0, observed.stderr
    assert "Remember me (check box)" in observed.stdout
    assert observed.stdout.startswith("window ")


async def test_click_by_name_toggles_the_checkbox(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    clicked = await cli("click", "-s", session, "--name", "Remember me", "--json")

    assert clicked.exit_code == 0, clicked.stderr
    assert clicked.json()["target"]["name"] == "Remember me"
    assert stack.sim().checkbox_checked is True


async def test_type_fills_the_field_clicked_by_name(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    # Move the focus off Username first, so only the click can bring it back.
    await stack.client.post(
        f"/v1/sessions/{session}/input", json={"events": [{"type": "key_press", "key": "tab"}]}
    )
    focused = await cli("click", "-s", session, "--name", "Username")
    typed = await cli("type", "-s", session, "ada lovelace", "--json")

    assert focused.exit_code == 0, focused.stderr
    assert typed.exit_code == 0, typed.stderr
    assert (typed.json()["ok"], typed.json()["count"]) == (True, 1)
    assert "settle" not in typed.json()
    assert stack.sim().field_text("username") == "ada lovelace"


async def test_key_presses_keys_in_order(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    pressed = await cli("key", "-s", session, "tab", "tab", "space", "--json")

    assert pressed.exit_code == 0, pressed.stderr
    assert pressed.json()["count"] == 3
    assert stack.sim().checkbox_checked is True  # tab, tab: Remember me; space checks it


async def test_bad_api_key_exits_3_with_one_stderr_line(cli: Cli) -> None:
    bad_key = "rgw_live_sk_" + "0" * 48
    listed = await cli("rigs", "list", "--json", env={"RIGWAY_API_KEY": bad_key})

    as_text = await cli("rigs", "list", env={"RIGWAY_API_KEY": bad_key})

    assert listed.exit_code == 3
    assert listed.stdout == ""
    assert len(listed.stderr.splitlines()) == 1
    error = json.loads(listed.stderr)
    assert (error["error"], error["status"], error["exit_code"]) == ("invalid_api_key", 401, 3)
    assert error["request_id"].startswith("req_")
    assert as_text.exit_code == 3
    assert as_text.stderr.startswith("rigway: error: invalid_api_key")
    assert "request id req_" in as_text.stderr


async def test_missing_session_exits_4(cli: Cli) -> None:
    typed = await cli("type", "hi", "--session", "ses_does_not_exist")

    assert typed.exit_code == 4
    assert "session_not_found" in typed.stderr
    assert "Traceback" not in typed.stderr


async def test_ended_session_exits_5_and_is_forgotten(cli: Cli, stack: Stack) -> None:
    session_id = await start_session(cli, stack)
    await stack.client.delete(f"/v1/sessions/{session_id}")
    typed = await cli("type", "hi")
    again = await cli("type", "hi")

    assert typed.exit_code == 5
    assert "session_ended" in typed.stderr
    assert again.exit_code == 2
    assert "no session" in again.stderr


async def test_unknown_target_name_exits_4(cli: Cli, stack: Stack) -> None:
    session = await stack.start_session()
    clicked = await cli("click", "-s", session, "--name", "No such control")

    assert clicked.exit_code == 4
    assert "no target with name 'No such control'" in clicked.stderr


async def test_unreachable_gateway_exits_8(cli: Cli) -> None:
    listed = await cli("rigs", "list", "--base-url", f"http://127.0.0.1:{closed_port()}", "--json")

    assert listed.exit_code == 8
    assert "connection_error" in listed.stderr


async def test_rigs_list_json_shows_the_rig(cli: Cli, stack: Stack) -> None:
    listed = await cli("rigs", "list", "--json")

    assert listed.exit_code == 0, listed.stderr
    rigs = listed.json()["rigs"]
    assert [rig["id"] for rig in rigs] == stack.rig_ids
    assert rigs[0]["online"] is True


async def test_credentials_come_from_local_json_without_env(cli: Cli, stack: Stack) -> None:
    cli.state_dir.mkdir()
    local = {"base_url": stack.base_url, "api_key": stack.api_key, "rig_ids": stack.rig_ids}
    (cli.state_dir / "local.json").write_text(json.dumps(local))
    env = {
        name: value
        for name, value in cli.env.items()
        if name not in {"RIGWAY_API_KEY", "RIGWAY_BASE_URL"}
    }
    listed = await Cli(env=env, cwd=cli.cwd, state_dir=cli.state_dir)("rigs", "list", "--json")

    assert listed.exit_code == 0, listed.stderr
    assert [rig["id"] for rig in listed.json()["rigs"]] == stack.rig_ids
