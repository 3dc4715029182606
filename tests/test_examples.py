"""The examples in `examples/` run as documented."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType

import httpx2
import pytest

from rigway.gateway.webhooks.signing import delivery_headers, signature_header
from tests.e2e.harness import Stack
from tests.support.live import live_stack

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
SECRET = "whsec_" + "ab" * 32


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with live_stack(tmp_path, database_url) as running:
        yield running


async def test_observe_act_loop_signs_in_on_the_sim_rig(stack: Stack, tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("RIGWAY_")}
    env |= {"RIGWAY_API_KEY": stack.api_key, "RIGWAY_BASE_URL": stack.base_url}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(EXAMPLES / "observe_act_loop.py"),  # no RIG_ID: the stack's one rig
        "--username",
        "grace",
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(30):
        stdout, stderr = await process.communicate()

    assert process.returncode == 0, stderr.decode()
    assert stdout.decode().splitlines()[:3] == [
        "step 1: fill in the username",
        "step 2: tick Remember me",
        "step 3: press Sign in",
    ]
    assert stack.sim().status_text == "Signed in as grace"
    assert stack.sim().checkbox_checked is True


def load_example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def receiver_url() -> Iterator[str]:
    receiver = load_example("webhook_receiver")
    server = receiver.make_server("127.0.0.1", 0, SECRET, receiver.DeliveryLog())
    # A short poll interval: shutdown() waits for the loop's next poll.
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def deliver(url: str, body: bytes, *, secret: str = SECRET) -> int:
    timestamp = int(time.time())
    headers = delivery_headers(
        "session.ended", "dlv_1", timestamp, signature_header(secret, timestamp, body)
    )
    return httpx2.post(url, content=body, headers=headers, timeout=10).status_code


def test_webhook_receiver_accepts_a_signed_delivery_once(
    receiver_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    event = {
        "type": "session.ended",
        "id": "dlv_1",
        "data": {"session_id": "ses_1", "rig_id": "rig_1"},
    }
    body = json.dumps(event).encode()

    statuses = [deliver(receiver_url, body), deliver(receiver_url, body)]

    assert statuses == [204, 204]
    assert capsys.readouterr().out.splitlines() == ["session.ended: session ses_1 on rig rig_1"]


def test_webhook_receiver_refuses_a_wrong_signature(
    receiver_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    body = json.dumps({"type": "session.started", "id": "dlv_2", "data": {}}).encode()

    status = deliver(receiver_url, body, secret="whsec_" + "cd" * 32)

    assert status == 400
    assert capsys.readouterr().out == ""
