"""`rigway mcp` driven by a client no one here wrote: the official TypeScript MCP SDK
(`@modelcontextprotocol/sdk`, pinned in ts_client/package.json) over stdio, against a
live gateway and sim rig. The npm install happens here, once, when node_modules is
absent (CI starts from a fresh clone); the test skips only when `node` is missing."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import Stack
from tests.mcp.test_mcp_server import rigway_command
from tests.support.live import active_session_ids, live_stack

CLIENT_DIR = Path(__file__).parent / "ts_client"
NPM_TIMEOUT_S = 300.0
CLIENT_TIMEOUT_S = 120.0

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture(scope="module")
def client_script() -> Path:
    """client.mjs, with its pinned SDK installed from the lock file if it is not yet."""
    if not (CLIENT_DIR / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir():
        npm = shutil.which("npm")
        assert npm is not None, "node is installed but npm is not (apt-get install npm)"
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=CLIENT_DIR,
            check=True,
            timeout=NPM_TIMEOUT_S,
            capture_output=True,
        )
    return CLIENT_DIR / "client.mjs"


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


async def run_client(script: Path, stack: Stack, tmp_path: Path) -> dict[str, dict[str, Any]]:
    """Run client.mjs against `rigway mcp --rig …`; its steps by name."""
    command, args = rigway_command()
    env = {
        **os.environ,
        "RIGWAY_API_KEY": stack.api_key,
        "RIGWAY_BASE_URL": stack.base_url,
        "RIGWAY_STATE_DIR": str(tmp_path / "mcp-state"),
    }
    node = shutil.which("node")
    assert node is not None
    # Async: the gateway and rig run in this event loop, so it must keep turning.
    process = await asyncio.create_subprocess_exec(
        node,
        str(script),
        command,
        *args,
        "mcp",
        "--rig",
        stack.rig_ids[0],
        env=env,
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(CLIENT_TIMEOUT_S):
        out, err = await process.communicate()
    assert process.returncode == 0, err.decode(errors="replace")
    steps = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    return {step["step"]: step for step in steps}


async def test_typescript_sdk_client_observes_clicks_types_and_ends(
    client_script: Path, stack: Stack, tmp_path: Path
) -> None:
    steps = await run_client(client_script, stack, tmp_path)

    assert steps["initialize"]["server"]["name"] == "rigway"
    assert {"observe", "click", "type_text", "screenshot", "end_session"} <= set(
        steps["list_tools"]["names"]
    )
    assert steps["list_tools"]["observe_has_output_schema"] is True
    observed = steps["observe"]
    assert observed["kinds"] == ["image", "text"]
    structured = observed["structured"]
    names = [target["name"] for target in structured["targets"]]
    assert "Remember me" in names
    assert "Username" in names
    assert [target["index"] for target in structured["targets"]] == list(range(1, len(names) + 1))
    geometry = structured["geometry"]
    assert (geometry["native_width"], geometry["image_width"]) == (1920, 1280)
    assert geometry["scale"] == pytest.approx(1280 / 1920, abs=1e-4)
    assert structured["desktop_state"] == "normal"
    for step in ("click", "type_text"):
        assert steps[step]["isError"] is False, steps[step]["text"]
        assert steps[step]["structured"]["targets"], step
    assert stack.sim().checkbox_checked is True
    assert stack.sim().field_text("username") == "ada"
    assert steps["screenshot"]["mime"] == "image/jpeg"
    assert steps["screenshot"]["bytes"] > 0
    assert steps["end_session"]["text"].startswith("ended ses_")
    assert "closed" in steps
    assert await active_session_ids(stack) == []
