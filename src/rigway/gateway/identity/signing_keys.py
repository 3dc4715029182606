"""The embedded identity provider's signing key, kept as a PEM file in the state dir.

`load_or_create_signing_key(state_dir)` makes an Ed25519 (JWT alg `EdDSA`) or P-256
(`ES256`) key on first start and loads it afterwards, so console tokens survive a restart.
The file is PKCS#8 PEM, unencrypted, mode 0600: on POSIX a key file that others can read
stops start-up (fail closed) rather than being used. The key id (`kid`) is the RFC 7638
JWK thumbprint, so it follows from the key and needs no storage of its own.

    RuntimeError
    └── SigningKeyError   unreadable, wrong type, or too widely readable key file
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

__all__ = [
    "KEY_FILE_NAME",
    "SigningAlgorithm",
    "SigningKey",
    "SigningKeyError",
    "generate_signing_key",
    "jwks",
    "load_or_create_signing_key",
    "load_signing_key",
]

KEY_FILE_NAME = "console-signing-key.pem"
SigningAlgorithm = Literal["EdDSA", "ES256"]
PrivateKey = Ed25519PrivateKey | ec.EllipticCurvePrivateKey


class SigningKeyError(RuntimeError):
    pass


@dataclass(frozen=True, slots=True)
class SigningKey:
    private_key: PrivateKey
    algorithm: SigningAlgorithm
    kid: str

    def public_jwk(self) -> dict[str, Any]:
        """The public key as a JWK with `kid`, `alg` and `use`."""
        return {
            **_public_members(self.private_key),
            "kid": self.kid,
            "alg": self.algorithm,
            "use": "sig",
        }


def jwks(*keys: SigningKey) -> dict[str, Any]:
    """A JWKS document (`{"keys": [...]}`) publishing the public halves of `keys`."""
    return {"keys": [key.public_jwk() for key in keys]}


def generate_signing_key(algorithm: SigningAlgorithm = "EdDSA") -> SigningKey:
    private_key: PrivateKey
    if algorithm == "EdDSA":
        private_key = Ed25519PrivateKey.generate()
    else:
        private_key = ec.generate_private_key(ec.SECP256R1())
    return _signing_key(private_key)


def load_or_create_signing_key(
    state_dir: Path, *, algorithm: SigningAlgorithm = "EdDSA"
) -> SigningKey:
    """The key in `state_dir/console-signing-key.pem`, created (mode 0600) if absent.

    An existing file wins over `algorithm`: changing the setting does not rotate the key.
    """
    path = state_dir / KEY_FILE_NAME
    if not path.exists():
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        _create_key_file(path, generate_signing_key(algorithm))
    return load_signing_key(path)


def load_signing_key(path: Path) -> SigningKey:
    _refuse_loose_permissions(path)
    try:
        pem = path.read_bytes()
        private_key = serialization.load_pem_private_key(pem, password=None)
    except (OSError, ValueError, TypeError) as exc:
        raise SigningKeyError(f"cannot load the console signing key {path}: {exc}") from exc
    if isinstance(private_key, ec.EllipticCurvePrivateKey) and not isinstance(
        private_key.curve, ec.SECP256R1
    ):
        raise SigningKeyError(f"{path} is an EC key on {private_key.curve.name}, not P-256")
    if not isinstance(private_key, Ed25519PrivateKey | ec.EllipticCurvePrivateKey):
        raise SigningKeyError(f"{path} is not an Ed25519 or P-256 key")
    return _signing_key(private_key)


def _signing_key(private_key: PrivateKey) -> SigningKey:
    algorithm: SigningAlgorithm = "EdDSA" if isinstance(private_key, Ed25519PrivateKey) else "ES256"
    return SigningKey(private_key, algorithm, _thumbprint(_public_members(private_key)))


def _create_key_file(path: Path, key: SigningKey) -> None:
    pem = key.private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    # mkstemp creates the file 0600; link() publishes it whole and never overwrites a key
    # another process created meanwhile (that one then wins and is loaded).
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=".key-")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(pem)
            file.flush()
            os.fsync(file.fileno())
        with contextlib.suppress(FileExistsError):
            os.link(temp_name, path)
    finally:
        os.unlink(temp_name)


def _refuse_loose_permissions(path: Path) -> None:
    if os.name != "posix":
        return  # Windows has ACLs, not mode bits; the state dir's ACL protects it.
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
    except OSError as exc:
        raise SigningKeyError(f"cannot read the console signing key {path}: {exc}") from exc
    if mode & 0o077:
        raise SigningKeyError(
            f"the console signing key {path} has mode {mode:04o}; run: chmod 600 {path}"
        )


def _public_members(private_key: PrivateKey) -> dict[str, str]:
    """The RFC 7638 required members of the public JWK (the thumbprint input)."""
    if isinstance(private_key, Ed25519PrivateKey):
        raw = private_key.public_key().public_bytes_raw()
        return {"crv": "Ed25519", "kty": "OKP", "x": _b64(raw)}
    numbers = private_key.public_key().public_numbers()
    return {
        "crv": "P-256",
        "kty": "EC",
        "x": _b64(numbers.x.to_bytes(32, "big")),
        "y": _b64(numbers.y.to_bytes(32, "big")),
    }


def _thumbprint(members: dict[str, str]) -> str:
    canonical = json.dumps(members, sort_keys=True, separators=(",", ":")).encode("utf-8")
    return _b64(hashlib.sha256(canonical).digest())


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
