"""`rigway up` through its real entry point: a private state directory (0700, its store
0600), credentials in local.json (0600), rigs paired through the public pairing endpoint
and online, a console login, a clean stop."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx2

from tests.support.local_processes import free_port


def _wait_for_credentials(path: Path, process: subprocess.Popen[bytes]) -> dict[str, object]:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "rigway up exited early"
        try:
            credentials = json.loads(path.read_text())
        except (OSError, ValueError):
            time.sleep(0.05)  # polling a file another process writes
            continue
        assert isinstance(credentials, dict)
        return credentials
    raise AssertionError("rigway up wrote no local.json within 60 s")


def test_rigway_up_serves_two_paired_sim_rigs_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    state_dir = tmp_path / "state"
    command = [
        sys.executable, "-m", "rigway.cli.main", "up",
        "--port", str(port), "--state-dir", str(state_dir), "--rigs", "2",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, env=dict(os.environ))
    try:
        local_json = state_dir / "local.json"
        credentials = _wait_for_credentials(local_json, process)
        assert local_json.stat().st_mode & 0o777 == 0o600
        assert state_dir.stat().st_mode & 0o777 == 0o700
        store_files = list(state_dir.glob("rigway.db*"))
        assert {"rigway.db", "rigway.db-wal"} <= {path.name for path in store_files}
        assert {path.stat().st_mode & 0o777 for path in store_files} == {0o600}
        assert credentials["base_url"] == f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {credentials['api_key']}"}
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False) as client:
            rigs = client.get("/v1/rigs", headers=headers).json()["rigs"]
            rig_ids = credentials["rig_ids"]
            assert isinstance(rig_ids, list)
            assert sorted(rig["id"] for rig in rigs) == sorted(rig_ids)
            assert all(rig["online"] and rig["api_access_enabled"] for rig in rigs)
            console = {"Authorization": f"Bearer {credentials['console_token']}"}
            assert client.get("/v1/keys", headers=console).status_code == 200
            signed_in = client.post(
                "/v1/console/sign-in",
                json={
                    "email": credentials["console_email"],
                    "password": credentials["console_password"],
                },
            )
            assert signed_in.status_code == 200
    finally:
        process.send_signal(signal.SIGINT)
        output, _ = process.communicate(timeout=30)
    assert process.returncode == 0
    assert b"Rigway is up" in output
