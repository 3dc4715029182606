"""What the gateway offers: the configured release and the one file it names beside it,
or the built-in release; and the keys a pairing agent is told to trust."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rigway.gateway.errors import NotFound
from rigway.gateway.releases.builtin import BuiltinRelease
from rigway.gateway.releases.service import ReleaseService
from rigway.gateway.releases.wheel import pack_wheel
from rigway.gateway.settings import GatewaySettings
from rigway.releases.manifest import Manifest, public_key_to_text, sign_manifest

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
KEY = Ed25519PrivateKey.generate()
WHEEL = "rigway-9.0.0-py3-none-any.whl"


def _pack(out_dir: Path) -> Path:
    package = out_dir.parent / "src" / "rigway"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    return pack_wheel(
        package, name="rigway", version="1.0.0", metadata=None, entry_points=None, out_dir=out_dir
    )


def _service(tmp_path: Path, **settings: Any) -> ReleaseService:
    builtin = BuiltinRelease(
        release_dir=tmp_path / "state" / "release",
        key_file=tmp_path / "state" / "release-signing.key",
        public_base_url="http://gw.example",
        version="1.0.0",
        now=lambda: NOW,
        pack=_pack,
    )
    return ReleaseService(GatewaySettings(state_dir=tmp_path / "state", **settings), builtin)


def _publish(folder: Path) -> Path:
    folder.mkdir()
    body = b"wheel" * 50
    (folder / WHEEL).write_bytes(body)
    (folder / "release.key").write_text("the operator's private key")
    manifest = Manifest(
        version="9.0.0",
        download_url=f"http://gw.example/v1/agent/releases/{WHEEL}",
        sha256_url=f"http://gw.example/v1/agent/releases/{WHEEL}.sha256",
        sha256=hashlib.sha256(body).hexdigest(),
        size=len(body),
        expires_at=NOW + timedelta(days=7),
    )
    path = folder / "latest.json"
    path.write_bytes(sign_manifest(manifest.to_fields(), KEY).to_json())
    return path


def test_configured_release_serves_the_file_it_names_beside_the_manifest(tmp_path: Path) -> None:
    service = _service(tmp_path, release_manifest_path=_publish(tmp_path / "published"))
    found = service.file(WHEEL)
    assert found is not None
    assert found.path == tmp_path / "published" / WHEEL
    assert service.latest().fields["version"] == "9.0.0"


def test_configured_release_serves_nothing_else_from_its_folder(tmp_path: Path) -> None:
    service = _service(tmp_path, release_manifest_path=_publish(tmp_path / "published"))
    assert service.file("release.key") is None
    assert service.file("latest.json") is None
    assert service.file("../published/release.key") is None


def test_unreadable_configured_manifest_is_release_not_found(tmp_path: Path) -> None:
    service = _service(tmp_path, release_manifest_path=tmp_path / "missing.json")
    with pytest.raises(NotFound) as raised:
        service.latest()
    assert raised.value.code == "release_not_found"


def test_configured_release_hands_out_its_configured_key(tmp_path: Path) -> None:
    key_text = public_key_to_text(KEY.public_key())
    service = _service(
        tmp_path,
        release_manifest_path=_publish(tmp_path / "published"),
        release_public_key=key_text,
    )
    assert service.public_keys() == [key_text]


def test_configured_release_without_a_key_hands_out_none(tmp_path: Path) -> None:
    service = _service(tmp_path, release_manifest_path=_publish(tmp_path / "published"))
    assert service.public_keys() == []
    assert not (tmp_path / "state" / "release-signing.key").exists()


def test_without_a_configured_release_the_builtin_key_is_handed_out(tmp_path: Path) -> None:
    service = _service(tmp_path)
    assert service.is_builtin
    assert service.latest().fields["version"] == "1.0.0"
    assert len(service.public_keys()) == 1
    assert (tmp_path / "state" / "release-signing.key").exists()
