"""The embedded identity provider's signing key file and JWKS."""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rigway.gateway.identity.signing_keys import (
    KEY_FILE_NAME,
    SigningKeyError,
    jwks,
    load_or_create_signing_key,
    load_signing_key,
)

posix_only = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def test_first_start_creates_key_file(tmp_path: Path) -> None:
    key = load_or_create_signing_key(tmp_path / "state")

    assert (tmp_path / "state" / KEY_FILE_NAME).is_file()
    assert key.algorithm == "EdDSA"


@posix_only
def test_created_key_file_has_mode_0600(tmp_path: Path) -> None:
    load_or_create_signing_key(tmp_path)

    assert stat.S_IMODE((tmp_path / KEY_FILE_NAME).stat().st_mode) == 0o600


def test_restart_loads_the_same_key(tmp_path: Path) -> None:
    first = load_or_create_signing_key(tmp_path)
    second = load_or_create_signing_key(tmp_path)

    assert second.kid == first.kid
    assert second.public_jwk() == first.public_jwk()


def test_es256_key_created_on_request(tmp_path: Path) -> None:
    key = load_or_create_signing_key(tmp_path, algorithm="ES256")

    assert key.algorithm == "ES256"
    assert key.public_jwk()["crv"] == "P-256"


def test_existing_key_wins_over_requested_algorithm(tmp_path: Path) -> None:
    load_or_create_signing_key(tmp_path, algorithm="ES256")

    assert load_or_create_signing_key(tmp_path, algorithm="EdDSA").algorithm == "ES256"


@posix_only
def test_key_file_readable_by_others_refused(tmp_path: Path) -> None:
    load_or_create_signing_key(tmp_path)
    (tmp_path / KEY_FILE_NAME).chmod(0o644)

    with pytest.raises(SigningKeyError, match="chmod 600"):
        load_or_create_signing_key(tmp_path)


def test_damaged_key_file_refused(tmp_path: Path) -> None:
    path = tmp_path / KEY_FILE_NAME
    path.write_bytes(b"not a key")
    path.chmod(0o600)

    with pytest.raises(SigningKeyError, match="cannot load"):
        load_signing_key(path)


def test_jwks_publishes_public_key_with_kid_alg_use(tmp_path: Path) -> None:
    key = load_or_create_signing_key(tmp_path)

    [published] = jwks(key)["keys"]

    assert published["kid"] == key.kid
    assert (published["kty"], published["crv"], published["alg"], published["use"]) == (
        "OKP",
        "Ed25519",
        "EdDSA",
        "sig",
    )
    assert "d" not in published


def test_kid_is_rfc7638_thumbprint(tmp_path: Path) -> None:
    # RFC 8037 appendix A.1 key; A.3 gives its thumbprint.
    seed = base64.urlsafe_b64decode("nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A=")
    pem = Ed25519PrivateKey.from_private_bytes(seed).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    path = tmp_path / KEY_FILE_NAME
    path.write_bytes(pem)
    path.chmod(0o600)

    key = load_signing_key(path)

    assert key.public_jwk()["x"] == "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
    assert key.kid == "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"
