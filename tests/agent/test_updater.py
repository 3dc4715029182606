"""The agent updater against an httpx2.MockTransport release server."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rigway.agent.updater import HIGHEST_STAGED_FILE, Updater, UpdateRefused
from rigway.releases.manifest import SignedManifest, sign_manifest, verify_manifest

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
KEY = Ed25519PrivateKey.generate()
OTHER_KEY = Ed25519PrivateKey.generate()
PAYLOAD = b"rigway agent build " * 4096
LATEST_URL = "https://gateway.example/v1/agent/latest"


def release(
    version: str = "1.6.0",
    *,
    payload: bytes = PAYLOAD,
    size: int | None = None,
    expires_at: datetime = NOW + timedelta(days=7),
    key: Ed25519PrivateKey = KEY,
) -> SignedManifest:
    fields: dict[str, Any] = {
        "version": version,
        "download_url": f"https://releases.example/rigway-agent-{version}.whl",
        "sha256_url": f"https://releases.example/rigway-agent-{version}.whl.sha256",
        "sha256": hashlib.sha256(payload).hexdigest(),
        "size": len(payload) if size is None else size,
        "expires_at": expires_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    return sign_manifest(fields, key)


class ReleaseServer:
    """Serves one latest manifest and download bodies; counts chunks it streamed."""

    def __init__(self, *, latest: SignedManifest | None = None, body: bytes = PAYLOAD) -> None:
        self.latest = latest
        self.body: bytes | Callable[[], AsyncIterator[bytes]] = body
        self.download_requests: list[httpx2.Request] = []
        self.download_headers: dict[str, str] = {}

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self._handle)

    async def _handle(self, request: httpx2.Request) -> httpx2.Response:
        if str(request.url) == LATEST_URL and self.latest is not None:
            return httpx2.Response(200, content=self.latest.to_json())
        if request.url.host == "releases.example":
            self.download_requests.append(request)
            body = self.body
            content = body if isinstance(body, bytes) else body()
            return httpx2.Response(200, content=content, headers=self.download_headers)
        return httpx2.Response(404)


def make_updater(
    tmp_path: Path, server: ReleaseServer, *, current: str = "1.5.0", max_bytes: int = 10**7
) -> Updater:
    return Updater(
        current_version=current,
        trusted_public_keys=[KEY.public_key()],
        staging_dir=tmp_path / "staging",
        transport=server.transport(),
        now=lambda: NOW,
        max_download_bytes=max_bytes,
    )


def staged_names(tmp_path: Path) -> list[str]:
    staging = tmp_path / "staging"
    return sorted(p.name for p in staging.iterdir()) if staging.exists() else []


async def test_good_update_staged_atomically_with_manifest(tmp_path: Path) -> None:
    signed = release("1.6.0")
    updater = make_updater(tmp_path, ReleaseServer())

    path = await updater.stage(signed)

    assert path == tmp_path / "staging" / "rigway-agent-1.6.0.whl"
    assert path.read_bytes() == PAYLOAD
    beside = SignedManifest.from_json(path.with_name(path.name + ".manifest.json").read_bytes())
    assert verify_manifest(beside, [KEY.public_key()], now=NOW).version == "1.6.0"
    assert staged_names(tmp_path) == [
        HIGHEST_STAGED_FILE,
        "rigway-agent-1.6.0.whl",
        "rigway-agent-1.6.0.whl.manifest.json",
    ]


async def test_download_asks_for_identity_encoding(tmp_path: Path) -> None:
    server = ReleaseServer()

    await make_updater(tmp_path, server).stage(release("1.6.0"))

    assert server.download_requests[0].headers["Accept-Encoding"] == "identity"


async def test_replayed_older_version_refused(tmp_path: Path) -> None:
    server = ReleaseServer()

    with pytest.raises(UpdateRefused, match=r"not newer than the running 1\.5\.0"):
        await make_updater(tmp_path, server).stage(release("1.4.9"))
    assert server.download_requests == []


async def test_same_version_refused(tmp_path: Path) -> None:
    with pytest.raises(UpdateRefused, match="not newer"):
        await make_updater(tmp_path, ReleaseServer()).stage(release("1.5"))


async def test_version_below_highest_staged_refused_after_restart(tmp_path: Path) -> None:
    await make_updater(tmp_path, ReleaseServer()).stage(release("1.7.0"))
    restarted = make_updater(tmp_path, ReleaseServer())

    with pytest.raises(UpdateRefused, match=r"older than the staged 1\.7\.0"):
        await restarted.stage(release("1.6.0"))


async def test_damaged_highest_staged_record_refuses_updates(tmp_path: Path) -> None:
    (tmp_path / "staging").mkdir()
    (tmp_path / "staging" / HIGHEST_STAGED_FILE).write_text("garbage")

    with pytest.raises(UpdateRefused, match="damaged"):
        await make_updater(tmp_path, ReleaseServer()).stage(release("1.6.0"))


async def test_expired_manifest_refused(tmp_path: Path) -> None:
    with pytest.raises(UpdateRefused, match="expired"):
        await make_updater(tmp_path, ReleaseServer()).stage(
            release("1.6.0", expires_at=NOW - timedelta(seconds=1))
        )


async def test_manifest_signed_by_wrong_key_refused(tmp_path: Path) -> None:
    with pytest.raises(UpdateRefused, match="no trusted release key"):
        await make_updater(tmp_path, ReleaseServer()).stage(release("1.6.0", key=OTHER_KEY))


async def test_truncated_download_refused_and_nothing_staged(tmp_path: Path) -> None:
    server = ReleaseServer(body=PAYLOAD[:-100])

    with pytest.raises(UpdateRefused, match="truncated"):
        await make_updater(tmp_path, server).stage(release("1.6.0"))
    assert staged_names(tmp_path) == []


async def test_oversized_download_stops_reading_past_cap(tmp_path: Path) -> None:
    streamed_chunks = 0

    async def endless() -> AsyncIterator[bytes]:
        nonlocal streamed_chunks
        while True:
            streamed_chunks += 1
            yield b"x" * 1000

    server = ReleaseServer()
    server.body = endless

    with pytest.raises(UpdateRefused, match="larger than 5000 bytes"):
        await make_updater(tmp_path, server).stage(release("1.6.0", payload=b"y" * 5000))
    assert streamed_chunks <= 7
    assert staged_names(tmp_path) == []


async def test_manifest_size_over_download_limit_refused_before_download(tmp_path: Path) -> None:
    server = ReleaseServer()

    with pytest.raises(UpdateRefused, match="over the 1000-byte limit"):
        await make_updater(tmp_path, server, max_bytes=1000).stage(release("1.6.0"))
    assert server.download_requests == []


async def test_compressed_download_refused(tmp_path: Path) -> None:
    async def gzip_claimed() -> AsyncIterator[bytes]:
        yield PAYLOAD

    server = ReleaseServer()
    server.body = gzip_claimed
    server.download_headers = {"Content-Encoding": "gzip"}

    with pytest.raises(UpdateRefused, match="Content-Encoding gzip"):
        await make_updater(tmp_path, server).stage(release("1.6.0"))


async def test_download_with_wrong_hash_refused(tmp_path: Path) -> None:
    server = ReleaseServer(body=PAYLOAD[:-1] + b"!")

    with pytest.raises(UpdateRefused, match="sha256"):
        await make_updater(tmp_path, server).stage(release("1.6.0"))
    assert staged_names(tmp_path) == []


async def test_check_returns_newer_signed_manifest(tmp_path: Path) -> None:
    signed = release("1.6.0")

    found = await make_updater(tmp_path, ReleaseServer(latest=signed)).check(LATEST_URL)

    assert found == signed


async def test_check_returns_none_when_up_to_date(tmp_path: Path) -> None:
    server = ReleaseServer(latest=release("1.5.0"))

    assert await make_updater(tmp_path, server).check(LATEST_URL) is None


async def test_check_refuses_forged_manifest(tmp_path: Path) -> None:
    server = ReleaseServer(latest=release("9.0.0", key=OTHER_KEY))

    with pytest.raises(UpdateRefused):
        await make_updater(tmp_path, server).check(LATEST_URL)


async def test_check_refuses_non_manifest_answer(tmp_path: Path) -> None:
    server = ReleaseServer()
    server.latest = None  # the release server answers 404

    with pytest.raises(UpdateRefused, match="status 404"):
        await make_updater(tmp_path, server).check(LATEST_URL)


def test_manifest_json_is_what_was_signed() -> None:
    signed = release("1.6.0")

    assert json.loads(signed.to_json())["manifest"] == dict(signed.fields)
