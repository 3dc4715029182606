"""The `rigway` command through its real entry point, against a live gateway and sim rig.

Each command runs as a subprocess (`asyncio.create_subprocess_exec`), so the stack keeps
serving in the test's event loop while the CLI talks to it over real sockets. The
`stack` and `cli` fixtures serve every such test module here.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Stack
from tests.support.live import live_stack

# The console script next to this interpreter is the installed `rigway` entry point.
RIGWAY_SCRIPT = Path(sys.executable).parent / "rigway"
CLI_TIMEOUT_S = 30.0


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)


@dataclass
class Cli:
    """Runs `rigway …` with the stack's credentials in the environment."""

    env: dict[str, str]
    cwd: Path
    state_dir: Path

    async def __call__(self, *args: str, env: dict[str, str] | None = None) -> Result:
        command = (
            [str(RIGWAY_SCRIPT)]
            if RIGWAY_SCRIPT.exists()
            else [sys.executable, "-m", "rigway.cli.main"]
        )
        process = await asyncio.create_subprocess_exec(
            *command,
            *args,
            cwd=self.cwd,
            env={**self.env, **(env or {})},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        async with asyncio.timeout(CLI_TIMEOUT_S):
            stdout, stderr = await process.communicate()
        assert process.returncode is not None
        return Result(process.returncode, stdout.decode(), stderr.decode())


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


@pytest.fixture
def cli(stack: Stack, tmp_path: Path) -> Cli:
    state_dir = tmp_path / "cli-state"
    env = {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}
    env |= {
        "RIGWAY_API_KEY": stack.api_key,
        "RIGWAY_BASE_URL": stack.base_url,
        "RIGWAY_STATE_DIR": str(state_dir),
    }
    return Cli(env=env, cwd=tmp_path, state_dir=state_dir)


def closed_port() -> int:
    """A local port nothing listens on (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def start_session(cli: Cli, stack: Stack) -> str:
    started = await cli("sessions", "start", "--rig", stack.rig_ids[0], "--json")
    assert started.exit_code == 0, started.stderr
    session_id = started.json()["session_id"]
    assert isinstance(session_id, str)
    return session_id
