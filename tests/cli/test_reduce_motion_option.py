"""The host agent's `reduce_motion` option: `--reduce-motion/--no-reduce-motion` on
`agent run`, else `"reduce_motion"` in agent.json, else off; `rigway up` passes it on."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from rigway.cli.agent import agent_app
from rigway.cli.agent_config import (
    AgentConfig,
    read_agent_config,
    reduce_motion_choice,
    write_agent_config,
)
from rigway.cli.main import app


def test_the_flag_wins_over_the_file(tmp_path: Path) -> None:
    (tmp_path / "agent.json").write_text(json.dumps({"reduce_motion": True}))

    assert reduce_motion_choice(False, tmp_path) is False
    assert reduce_motion_choice(True, tmp_path) is True
    assert reduce_motion_choice(None, tmp_path) is True


def test_off_when_neither_says(tmp_path: Path) -> None:
    assert reduce_motion_choice(None, tmp_path) is False


def test_a_key_that_is_not_a_boolean_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "agent.json").write_text(json.dumps({"reduce_motion": "yes"}))

    assert read_agent_config(tmp_path).reduce_motion is None
    assert reduce_motion_choice(None, tmp_path) is False


def test_pairing_again_keeps_the_owners_choice(tmp_path: Path) -> None:
    write_agent_config(tmp_path, AgentConfig("https://a.example", Path("t"), reduce_motion=True))

    write_agent_config(tmp_path, AgentConfig("https://b.example", Path("t")))

    remembered = read_agent_config(tmp_path)
    assert remembered.gateway == "https://b.example"
    assert remembered.reduce_motion is True


def test_agent_run_and_up_offer_the_flag() -> None:
    runner = CliRunner()
    agent_help = runner.invoke(agent_app, ["run", "--help"])
    up_help = runner.invoke(app, ["up", "--help"])

    assert "--reduce-motion" in agent_help.stdout
    assert "--reduce-motion" in up_help.stdout
