"""Signed release manifests: canonical JSON, Ed25519 signatures, expiry, versions, keys."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from rigway.releases.manifest import (
    Manifest,
    ManifestExpiredError,
    ManifestFormatError,
    ManifestKeyError,
    ManifestSignatureError,
    SignedManifest,
    canonical_json,
    compare_versions,
    generate_private_key,
    load_private_key,
    load_public_key,
    parse_version,
    private_key_to_text,
    public_key_to_text,
    sign_manifest,
    verify_manifest,
)

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
KEY = generate_private_key()
OTHER_KEY = generate_private_key()


def fields(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "version": "1.4.2",
        "download_url": "https://releases.example/rigway-agent-1.4.2.whl",
        "sha256_url": "https://releases.example/rigway-agent-1.4.2.whl.sha256",
        "sha256": "ab" * 32,
        "size": 1234,
        "expires_at": "2026-11-27T12:00:00Z",
    }
    base.update(changes)
    return base


def test_canonical_json_sorted_compact_utf8() -> None:
    assert canonical_json({"b": 1, "a": "é", "c": [1, {"z": 0, "y": None}]}) == (
        '{"a":"é","b":1,"c":[1,{"y":null,"z":0}]}'.encode()
    )


def test_canonical_json_refuses_floats() -> None:
    with pytest.raises(ManifestFormatError, match="float"):
        canonical_json({"size": 1.0})


def test_signed_manifest_verifies_with_its_key() -> None:
    manifest = verify_manifest(sign_manifest(fields(), KEY), [KEY.public_key()], now=NOW)

    assert manifest == Manifest(
        version="1.4.2",
        download_url="https://releases.example/rigway-agent-1.4.2.whl",
        sha256_url="https://releases.example/rigway-agent-1.4.2.whl.sha256",
        sha256="ab" * 32,
        size=1234,
        expires_at=datetime(2026, 11, 27, 12, 0, tzinfo=UTC),
    )


def test_manifest_survives_json_round_trip() -> None:
    signed = sign_manifest(fields(platform="windows-x64"), KEY)

    again = SignedManifest.from_json(signed.to_json())

    assert verify_manifest(again, [KEY.public_key()], now=NOW).platform == "windows-x64"


def test_manifest_to_fields_signs_and_verifies() -> None:
    manifest = Manifest(
        "2.0", "https://r.example/a", "https://r.example/a.sha256", "cd" * 32, 9, NOW + timedelta(1)
    )

    assert verify_manifest(
        sign_manifest(manifest.to_fields(), KEY), [KEY.public_key()], now=NOW
    ) == (manifest)


def test_wrong_key_refused() -> None:
    with pytest.raises(ManifestSignatureError, match="no trusted release key"):
        verify_manifest(sign_manifest(fields(), OTHER_KEY), [KEY.public_key()], now=NOW)


def test_second_trusted_key_accepted() -> None:
    signed = sign_manifest(fields(), OTHER_KEY)

    assert verify_manifest(signed, [KEY.public_key(), OTHER_KEY.public_key()], now=NOW)


def test_no_trusted_keys_refused() -> None:
    with pytest.raises(ManifestSignatureError, match="no trusted release keys"):
        verify_manifest(sign_manifest(fields(), KEY), [], now=NOW)


def test_tampered_field_refused() -> None:
    signed = sign_manifest(fields(), KEY)
    tampered = SignedManifest(
        {**signed.fields, "download_url": "https://evil.example/x"}, signed.signature
    )

    with pytest.raises(ManifestSignatureError):
        verify_manifest(tampered, [KEY.public_key()], now=NOW)


def test_garbled_signature_refused() -> None:
    signed = sign_manifest(fields(), KEY)

    with pytest.raises(ManifestSignatureError, match="base64url"):
        verify_manifest(SignedManifest(signed.fields, "not base64!"), [KEY.public_key()], now=NOW)


def test_expired_manifest_refused() -> None:
    signed = sign_manifest(fields(expires_at="2026-11-20T12:00:00Z"), KEY)

    with pytest.raises(ManifestExpiredError, match="expired"):
        verify_manifest(signed, [KEY.public_key()], now=NOW)


def test_unknown_signed_field_kept_and_ignored() -> None:
    signed = sign_manifest(fields(notes="faster capture"), KEY)

    assert verify_manifest(signed, [KEY.public_key()], now=NOW).version == "1.4.2"
    assert signed.fields["notes"] == "faster capture"


@pytest.mark.parametrize(
    "change",
    [
        {"version": "1.4.2-beta"},
        {"sha256": "xyz"},
        {"size": 0},
        {"size": True},
        {"size": "1234"},
        {"download_url": "file:///etc/passwd"},
        {"expires_at": "next week"},
        {"expires_at": "2026-11-27T12:00:00"},
        {"platform": 3},
    ],
)
def test_malformed_manifest_never_signed(change: dict[str, Any]) -> None:
    with pytest.raises(ManifestFormatError):
        sign_manifest(fields(**change), KEY)


@pytest.mark.parametrize("raw", [b"not json", b"[]", b'{"manifest": {}}', b'{"signature": "x"}'])
def test_malformed_signed_manifest_json_refused(raw: bytes) -> None:
    with pytest.raises(ManifestFormatError):
        SignedManifest.from_json(raw)


@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        ("1.10", "1.9", 1),
        ("1.4", "1.4.0", 0),
        ("2", "10", -1),
        ("1.0.1", "1.0", 1),
        ("0.9.9", "1", -1),
        ("01.2", "1.2", 0),
    ],
)
def test_versions_compare_numerically(left: str, right: str, expected: int) -> None:
    assert compare_versions(left, right) == expected


@pytest.mark.parametrize(
    "text", ["", "v1.2", "1..2", "1.2.", "1.2-rc1", "1.2.3.4.5.6.7.8.9", " 1.2"]
)
def test_non_numeric_version_refused(text: str) -> None:
    with pytest.raises(ManifestFormatError):
        parse_version(text)


def test_key_text_round_trips() -> None:
    private = load_private_key(private_key_to_text(KEY))
    public = load_public_key(public_key_to_text(KEY.public_key()))

    assert verify_manifest(sign_manifest(fields(), private), [public], now=NOW)


@pytest.mark.parametrize("text", ["", "!!!", "AAAA"])
def test_bad_key_text_refused(text: str) -> None:
    with pytest.raises(ManifestKeyError):
        load_public_key(text)
