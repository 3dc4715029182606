"""The built-in release: a key made once in the state directory (0600), a manifest that
verifies with it and names the gateway's own download route, signed again when stale."""

from __future__ import annotations

import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rigway.gateway.releases.builtin import (
    MANIFEST_LIFETIME,
    BuiltinRelease,
    load_or_create_signing_key,
)
from rigway.gateway.releases.wheel import pack_wheel
from rigway.releases.manifest import ManifestKeyError, private_key_to_text, verify_manifest

START = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def _pack(out_dir: Path) -> Path:
    package = out_dir.parent / "src" / "demo"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    return pack_wheel(
        package, name="demo", version="3.1.0", metadata=None, entry_points=None, out_dir=out_dir
    )


def _release(tmp_path: Path, clock: Clock) -> BuiltinRelease:
    return BuiltinRelease(
        release_dir=tmp_path / "state" / "release",
        key_file=tmp_path / "state" / "release-signing.key",
        public_base_url="http://gw.example:8080/",
        version="3.1.0",
        now=clock,
        pack=_pack,
    )


def test_first_use_creates_a_private_key_file_readable_by_its_owner_only(tmp_path: Path) -> None:
    key_file = tmp_path / "state" / "release-signing.key"
    load_or_create_signing_key(key_file)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert [p.name for p in key_file.parent.iterdir()] == ["release-signing.key"]


def test_an_existing_key_file_is_used_not_replaced(tmp_path: Path) -> None:
    key_file = tmp_path / "release-signing.key"
    first = load_or_create_signing_key(key_file)
    again = load_or_create_signing_key(key_file)
    assert private_key_to_text(again) == private_key_to_text(first)


def test_a_damaged_key_file_stops_rather_than_being_replaced(tmp_path: Path) -> None:
    key_file = tmp_path / "release-signing.key"
    key_file.write_text("not a key")
    with pytest.raises(ManifestKeyError):
        load_or_create_signing_key(key_file)
    assert key_file.read_text() == "not a key"


def test_manifest_verifies_with_the_public_key_and_names_the_download_route(
    tmp_path: Path,
) -> None:
    release = _release(tmp_path, Clock())
    manifest = verify_manifest(release.signed_manifest(), [release.public_key()], now=START)
    wheel_url = "http://gw.example:8080/v1/agent/releases/demo-3.1.0-py3-none-any.whl"
    assert manifest.version == "3.1.0"
    assert manifest.download_url == wheel_url
    assert manifest.sha256_url == wheel_url + ".sha256"
    assert manifest.expires_at == START + MANIFEST_LIFETIME


def test_manifest_is_kept_until_half_its_lifetime_then_signed_again(tmp_path: Path) -> None:
    clock = Clock()
    release = _release(tmp_path, clock)
    first = release.signed_manifest()
    clock.now = START + MANIFEST_LIFETIME / 2 - timedelta(seconds=1)
    assert release.signed_manifest() is first
    clock.now = START + MANIFEST_LIFETIME / 2
    renewed = release.signed_manifest()
    assert renewed.fields["expires_at"] != first.fields["expires_at"]
    verify_manifest(renewed, [release.public_key()], now=clock.now + MANIFEST_LIFETIME / 2)


def test_files_are_the_wheel_and_its_sha256_only(tmp_path: Path) -> None:
    release = _release(tmp_path, Clock())
    sha256 = release.signed_manifest().fields["sha256"]
    wheel = release.file("demo-3.1.0-py3-none-any.whl")
    digest = release.file("demo-3.1.0-py3-none-any.whl.sha256")
    assert wheel is not None
    assert wheel.path is not None
    assert wheel.path.parent == tmp_path / "state" / "release"
    assert digest is not None
    assert digest.text == f"{sha256}  demo-3.1.0-py3-none-any.whl\n"
    assert release.file("release-signing.key") is None
