"""Agent releases end to end: an operator signs with `rigway release sign`, the gateway
serves it at /v1/agent/latest, and an agent's updater accepts it; a tampered one is
refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rigway.agent.updater import Updater, UpdateRefused
from rigway.cli.main import app
from rigway.releases.manifest import load_public_key
from tests.e2e.harness import running_stack

pytestmark = pytest.mark.postgres

runner = CliRunner()


def _sign(tmp_path: Path, version: str) -> tuple[Path, str]:
    key_file = tmp_path / "release.key"
    if not key_file.exists():
        keygen = runner.invoke(app, ["release", "keygen", "--private-key-file", str(key_file)])
        assert keygen.exit_code == 0, keygen.output
        (tmp_path / "release.pub").write_text(keygen.output.strip())
    release = tmp_path / f"rigway-{version}.whl"
    release.write_bytes(b"wheel bytes " * 100)
    manifest = tmp_path / "latest.json"
    signed = runner.invoke(
        app,
        [
            "release", "sign", "--file", str(release), "--version", version,
            "--download-url", f"https://releases.example/rigway-{version}.whl",
            "--sha256-url", f"https://releases.example/rigway-{version}.whl.sha256",
            "--private-key-file", str(key_file), "--out", str(manifest),
        ],
    )  # fmt: skip
    assert signed.exit_code == 0, signed.output
    return manifest, (tmp_path / "release.pub").read_text().strip()


async def test_latest_release_is_served_and_verifies(tmp_path: Path, database_url: str) -> None:
    manifest, public_key = _sign(tmp_path, "2.0.0")
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, release_manifest_path=manifest
    ) as stack:
        latest = await stack.client.get("/v1/agent/latest", headers={"Authorization": ""})
        assert latest.status_code == 200
        assert latest.json()["version"] == "2.0.0"
        assert latest.json()["download_url"].endswith("rigway-2.0.0.whl")
        updater = Updater(
            current_version="1.0.0",
            trusted_public_keys=[load_public_key(public_key)],
            staging_dir=tmp_path / "staging",
        )
        offered = await updater.check(f"{stack.base_url}/v1/agent/latest")
    assert offered is not None
    assert offered.fields["version"] == "2.0.0"


async def test_tampered_release_is_refused_by_the_updater(
    tmp_path: Path, database_url: str
) -> None:
    manifest, public_key = _sign(tmp_path, "2.0.0")
    signed = json.loads(manifest.read_text())
    signed["manifest"]["download_url"] = "https://evil.example/rigway.whl"
    manifest.write_text(json.dumps(signed))
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, release_manifest_path=manifest
    ) as stack:
        updater = Updater(
            current_version="1.0.0",
            trusted_public_keys=[load_public_key(public_key)],
            staging_dir=tmp_path / "staging",
        )
        with pytest.raises(UpdateRefused):
            await updater.check(f"{stack.base_url}/v1/agent/latest")


async def test_unreadable_published_release_is_404(tmp_path: Path, database_url: str) -> None:
    # Without a configured release the gateway serves its own (test_agent_update.py).
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, release_manifest_path=tmp_path / "gone.json"
    ) as stack:
        latest = await stack.client.get("/v1/agent/latest")
    assert latest.status_code == 404
    assert latest.json()["error"].startswith("release_not_found")
