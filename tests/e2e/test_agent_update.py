"""Agent self-update end to end, on loopback only.

- A fresh `rigway up` (the real command) offers its own release: 200 at
  /v1/agent/latest, a manifest that verifies with the key it made in its state
  directory (the key pairing agents are handed), and a wheel of itself that unpacks.
- A gateway offering a locally signed newer release (a tiny wheel built here): a real
  agent's self-update checks, downloads, verifies, installs it beside the running
  code, puts it on trial and asks for a restart.
- `rigway agent launch` (the real command) runs a real agent that updates itself into a
  newer release that cannot start: the launcher rolls back, records it as bad, and the
  previous agent comes back online.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import uvicorn
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from typer.testing import CliRunner

from rigway import __version__
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.install_root import InstallRoot, Pointer
from rigway.agent.link import AgentLink
from rigway.agent.pairing import pair
from rigway.agent.runner import AgentSettings, run_agent
from rigway.agent.update_service import SelfUpdate, self_update_settings
from rigway.agent.updater import (
    fetch_release_keys,
    load_release_keys,
    release_keys_file,
    save_release_keys,
)
from rigway.cli.main import app as rigway_cli
from rigway.gateway.app import create_app
from rigway.gateway.services import Services
from rigway.gateway.serving import server_config
from rigway.gateway.settings import GatewaySettings
from rigway.releases.manifest import (
    SignedManifest,
    load_private_key,
    load_public_key,
    public_key_to_text,
    verify_manifest,
)
from tests.e2e.harness import Stack
from tests.support.local_processes import free_port
from tests.support.tiny_release import FAILS, HEALTHY, build_wheel, sign_release

NEWER = "99.0.0"
RELEASE_KEY = Ed25519PrivateKey.generate()
ONLINE_TIMEOUT_S = 30.0


def _clean_environment() -> dict[str, str]:
    """This environment without proxies (loopback only) or Rigway settings (a fresh
    deployment)."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.upper().endswith("_PROXY") and not name.startswith("RIGWAY_")
    }


def _wait_for_file(path: Path, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert process.poll() is None, "rigway up exited early"
        assert time.monotonic() < deadline, f"no {path} within 60 s"
        time.sleep(0.05)  # polling a file another process writes


def test_fresh_rigway_up_offers_its_own_signed_release(tmp_path: Path) -> None:
    port = free_port()
    state_dir = tmp_path / "state"
    command = [
        sys.executable, "-m", "rigway.cli.main", "up",
        "--port", str(port), "--state-dir", str(state_dir), "--rigs", "0",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, env=_clean_environment())
    try:
        _wait_for_file(state_dir / "local.json", process)
        with httpx2.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False) as client:
            latest = client.get("/v1/agent/latest")
            keys = client.get("/v1/agent/release-keys").json()["keys"]
            assert latest.status_code == 200, latest.text
            signed = SignedManifest(latest.json()["manifest"], latest.json()["signature"])
            manifest = verify_manifest(signed, [load_public_key(keys[0])], now=datetime.now(UTC))
            wheel = client.get(manifest.download_url)
            digest = client.get(manifest.sha256_url)
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    key_file = state_dir / "release-signing.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert keys == [public_key_to_text(load_private_key(key_file.read_text()).public_key())]
    assert manifest.version == __version__
    assert manifest.download_url.startswith(f"http://127.0.0.1:{port}/v1/agent/releases/")
    assert hashlib.sha256(wheel.content).hexdigest() == manifest.sha256
    assert digest.text.split()[0] == manifest.sha256
    release = tmp_path / "download.whl"
    release.write_bytes(wheel.content)
    installed = InstallRoot(tmp_path / "agent").install_wheel(release, __version__)
    assert (installed / "rigway" / "agent" / "launcher.py").is_file()


@dataclass
class Gateway:
    base_url: str
    services: Services
    account_id: str

    def client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(base_url=self.base_url, trust_env=False)

    async def pair_rig(self, token_file: Path) -> str:
        """Pair as `rigway agent pair` does: the token and the pinned release keys."""
        code = await self.services.rigs.create_pairing_code(self.account_id)
        paired = await pair(self.base_url, code.code, name="rig", os="test-os", gpu="")
        token_file.write_text(paired.rig_token)
        keys = await fetch_release_keys(self.base_url, transport=httpx2.AsyncHTTPTransport())
        save_release_keys(release_keys_file(token_file), keys)
        return paired.rig_id


@contextlib.asynccontextmanager
async def _gateway(tmp_path: Path, database_url: str, **settings: Any) -> AsyncIterator[Gateway]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    base_url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    gateway_settings = GatewaySettings(
        state_dir=tmp_path / "state",
        database_url=database_url,
        public_base_url=base_url,
        **settings,
    )
    app = create_app(gateway_settings)
    server = uvicorn.Server(server_config(app, gateway_settings, "127.0.0.1", 0))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        # uvicorn tells that it listens only through this flag (no event, no callback).
        async with asyncio.timeout(20):
            while not server.started:
                await asyncio.sleep(0.01)
        services: Services = app.state.services
        account_id = await services.accounts.create("update test")
        yield Gateway(base_url, services, account_id)
    finally:
        server.should_exit = True
        await serving
        sock.close()


@contextlib.asynccontextmanager
async def _gateway_offering(
    tmp_path: Path, database_url: str, behaviour: str
) -> AsyncIterator[Gateway]:
    """A gateway that offers a newer release, signed here: its wheel beside the manifest
    for the gateway to serve. The manifest names the gateway's address, known once its
    socket is bound: the gateway reads the manifest at each ask, so it is written after
    the start."""
    folder = tmp_path / "published"
    async with _gateway(
        tmp_path,
        database_url,
        release_manifest_path=folder / "latest.json",
        release_public_key=public_key_to_text(RELEASE_KEY.public_key()),
    ) as gateway:
        wheel = build_wheel(folder, NEWER, behaviour)
        wheel_url = f"{gateway.base_url}/v1/agent/releases/{wheel.name}"
        signed = sign_release(wheel, NEWER, RELEASE_KEY, wheel_url)
        (folder / "latest.json").write_bytes(signed.to_json())
        yield gateway


async def test_agent_installs_a_newer_release_beside_itself_and_asks_to_restart(
    tmp_path: Path, database_url: str
) -> None:
    async with _gateway_offering(tmp_path, database_url, HEALTHY) as gateway:
        token_file = tmp_path / "rig.token"
        await gateway.pair_rig(token_file)
        updates = self_update_settings(
            gateway.base_url,
            token_file,
            install_root=tmp_path / "agent",
            health_file=tmp_path / "agent" / "health",
            is_enabled=True,
            interval_s=3600,
        )
        self_update = SelfUpdate(updates, transport=httpx2.AsyncHTTPTransport())
        stop = asyncio.Event()

        def on_link(link: AgentLink) -> None:
            self_update.start(link, stop)

        settings = AgentSettings(gateway_url=gateway.base_url, rig_token=token_file.read_text())
        desktop = SimDesktop(width=640, height=480)
        async with asyncio.timeout(20):
            await run_agent(settings, desktop, stop=stop, on_link=on_link)
        await self_update.aclose()
    installs = InstallRoot(tmp_path / "agent")
    assert self_update.restart_requested
    assert installs.pointer() == Pointer(NEWER, None, is_trial=True)
    main = installs.version_dir(NEWER) / "rigway" / "cli" / "main.py"
    assert main.read_text().startswith("import json")
    assert (tmp_path / "agent" / "health").read_text() == str(os.getpid())


async def test_launcher_rolls_back_a_release_that_cannot_start(
    tmp_path: Path, database_url: str
) -> None:
    async with _gateway_offering(tmp_path, database_url, FAILS) as gateway:
        token_file = tmp_path / "rig.token"
        rig_id = await gateway.pair_rig(token_file)
        root = tmp_path / "agent"
        command = [
            sys.executable, "-m", "rigway.cli.main", "agent", "launch",
            "--install-root", str(root), "--trial-timeout-s", "20",
            "--gateway", gateway.base_url, "--token-file", str(token_file),
            "--backend", "sim", "--width", "640", "--height", "480",
        ]  # fmt: skip
        launcher = subprocess.Popen(command, env=_clean_environment())
        registry = gateway.services.registry
        try:
            async with asyncio.timeout(ONLINE_TIMEOUT_S):
                await registry.wait_online(rig_id)
            first = registry.get(rig_id)
            # Online again on a new link: the update, the failed start and the rollback
            # happened in between (the registry announces no change of link: polled).
            await Stack.wait_until(
                lambda: registry.is_online(rig_id) and registry.get(rig_id) is not first,
                ONLINE_TIMEOUT_S,
            )
        finally:
            launcher.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(launcher.wait, 30)
    installs = InstallRoot(root)
    assert code == 0
    assert json.loads((root / f"ran-{NEWER}").read_text())[:2] == ["agent", "run"]
    assert installs.bad_versions() == {NEWER}
    assert installs.pointer() == Pointer()
    assert list(installs.versions_dir.iterdir()) == []


async def test_agent_pair_pins_the_gateway_release_keys(tmp_path: Path, database_url: str) -> None:
    async with _gateway(tmp_path, database_url) as gateway:
        code = await gateway.services.rigs.create_pairing_code(gateway.account_id)
        token_file = tmp_path / "rig.token"
        arguments = [
            "agent", "pair", "--gateway", gateway.base_url, "--code", code.code,
            "--token-file", str(token_file),
        ]  # fmt: skip
        # The command runs its own event loop: in a thread, beside the gateway's.
        result = await asyncio.to_thread(CliRunner().invoke, rigway_cli, arguments)
        async with gateway.client() as client:
            keys = (await client.get("/v1/agent/release-keys")).json()["keys"]
    assert result.exit_code == 0, result.output
    pinned = load_release_keys(release_keys_file(token_file))
    assert [public_key_to_text(key) for key in pinned] == keys
    assert len(keys) == 1
