"""`rigway sessions start --record` and `rigway sessions recording -o file.zip` against a
live gateway and sim rig."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from tests.e2e.harness import Stack

from .conftest import Cli


async def test_a_recorded_session_is_saved_as_a_zip(cli: Cli, stack: Stack, tmp_path: Path) -> None:
    started = await cli("sessions", "start", "--rig", stack.rig_ids[0], "--record", "--json")
    assert started.exit_code == 0, started.stderr
    assert started.json()["record"] is True
    shot = await cli("screenshot", "-o", "shot.jpg")
    assert shot.exit_code == 0, shot.stderr

    saved = await cli("sessions", "recording", "-o", "rec.zip", "--json")

    assert saved.exit_code == 0, saved.stderr
    archive = zipfile.ZipFile(tmp_path / "rec.zip")
    assert saved.json()["bytes"] == (tmp_path / "rec.zip").stat().st_size
    steps = [json.loads(line) for line in archive.read("steps.jsonl").decode().splitlines()]
    assert [step["kind"] for step in steps] == ["screenshot"]
    assert archive.read(steps[0]["frame"]) == (tmp_path / "shot.jpg").read_bytes()


async def test_a_session_that_did_not_record_has_no_recording(
    cli: Cli, stack: Stack, tmp_path: Path
) -> None:
    session_id = await stack.start_session()

    saved = await cli("sessions", "recording", session_id, "-o", "rec.zip")

    assert saved.exit_code == 4, saved.stderr
    assert "recording_not_found" in saved.stderr
    assert not (tmp_path / "rec.zip").exists()
