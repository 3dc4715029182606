"""`rigway --version`, failures as one JSON object under `--json`, and a connection
error that names the gateway, through the real entry point (no gateway needed)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import rigway

from .conftest import Cli, closed_port


def offline_cli(tmp_path: Path) -> Cli:
    """The CLI with no credentials anywhere and a state dir that does not exist yet."""
    env = {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}
    state_dir = tmp_path / "cli-state"
    return Cli(env=env | {"RIGWAY_STATE_DIR": str(state_dir)}, cwd=tmp_path, state_dir=state_dir)


async def test_version_prints_the_package_version(tmp_path: Path) -> None:
    shown = await offline_cli(tmp_path)("--version")

    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout == f"rigway {rigway.__version__}\n"


async def test_no_session_under_json_is_one_json_error_on_stderr(tmp_path: Path) -> None:
    typed = await offline_cli(tmp_path)("type", "hi", "--json", "--api-key", "k")

    assert typed.exit_code == 2
    assert typed.stdout == ""
    assert json.loads(typed.stderr) == {
        "error": "no_session",
        "detail": "no session: pass --session ID or start one with `rigway sessions start`",
        "status": None,
        "request_id": None,
        "exit_code": 2,
    }


async def test_missing_api_key_under_json_exits_3_with_its_code(tmp_path: Path) -> None:
    listed = await offline_cli(tmp_path)("rigs", "list", "--json")

    assert listed.exit_code == 3
    error = json.loads(listed.stderr)
    assert (error["error"], error["exit_code"]) == ("missing_api_key", 3)
    assert "RIGWAY_API_KEY" in error["detail"]


async def test_a_bad_option_under_json_is_a_json_usage_error(tmp_path: Path) -> None:
    listed = await offline_cli(tmp_path)("rigs", "list", "--json", "--no-such-option")
    missing_argument = await offline_cli(tmp_path)("type", "--json")

    assert (listed.exit_code, missing_argument.exit_code) == (2, 2)
    assert json.loads(listed.stderr)["error"] == "usage"
    assert "--no-such-option" in json.loads(listed.stderr)["detail"]
    assert json.loads(missing_argument.stderr)["error"] == "usage"


async def test_a_bad_option_without_json_stays_text(tmp_path: Path) -> None:
    listed = await offline_cli(tmp_path)("rigs", "list", "--no-such-option")

    assert listed.exit_code == 2
    assert "No such option" in listed.stderr
    assert not listed.stderr.lstrip().startswith("{")


async def test_json_after_a_double_dash_is_an_argument_not_the_option(tmp_path: Path) -> None:
    typed = await offline_cli(tmp_path)("type", "--api-key", "k", "--", "--json")

    assert typed.exit_code == 2
    assert typed.stderr.startswith("rigway: error: no session")


async def test_unreachable_gateway_names_the_url_and_suggests_up(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    cli = offline_cli(tmp_path)
    as_text = await cli("rigs", "list", "--api-key", "k", "--base-url", url)
    as_json = await cli("rigs", "list", "--api-key", "k", "--base-url", url, "--json")

    assert (as_text.exit_code, as_json.exit_code) == (8, 8)
    assert f"cannot reach the gateway at {url}" in as_text.stderr
    assert "`rigway up`" in as_text.stderr
    error = json.loads(as_json.stderr)
    assert (error["error"], error["status"], error["exit_code"]) == ("connection_error", None, 8)
    assert url in error["detail"]


async def test_a_command_in_a_subfolder_reads_the_checkouts_local_json(tmp_path: Path) -> None:
    # As the SDK does: no --state-dir, no RIGWAY_STATE_DIR, the nearest .rigway/ above.
    url = f"http://127.0.0.1:{closed_port()}"
    (tmp_path / ".rigway").mkdir()
    (tmp_path / ".rigway" / "local.json").write_text(
        json.dumps({"base_url": url, "api_key": "rgw_test_sk_from_local_json"})
    )
    subfolder = tmp_path / "scripts" / "nested"
    subfolder.mkdir(parents=True)
    env = {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}
    cli = Cli(env=env, cwd=subfolder, state_dir=subfolder / ".rigway")

    listed = await cli("rigs", "list", "--json")

    error = json.loads(listed.stderr)
    assert (error["error"], listed.exit_code) == ("connection_error", 8)  # not missing_api_key
    assert url in error["detail"]
