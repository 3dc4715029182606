"""Signed release manifests for the host agent: Ed25519 over canonical JSON.

A manifest says which agent version is current and where its file is:

    {"version": "1.4.2", "download_url": "https://…/rigway-agent-1.4.2.whl",
     "sha256_url": "https://…/rigway-agent-1.4.2.whl.sha256", "sha256": "<64 hex>",
     "size": 123456, "expires_at": "2026-12-31T00:00:00Z", "platform": "windows-x64"}

`platform` is optional. The signed bytes are the canonical JSON of the fields: keys
sorted, no spaces, UTF-8, no floats (floats have no single spelling across languages).
Fields this version does not know are signed and kept, but ignored, so a newer publisher
can add fields without breaking older agents. On the wire a signed manifest is
`{"manifest": {…fields…}, "signature": "<base64url Ed25519 signature>"}`.

`expires_at` bounds how long a captured manifest can be replayed; the agent also refuses
any version not newer than its own (see `rigway.agent.updater`). `sha256` in the signed
manifest is the authority for the file; `sha256_url` is for humans and other tools.

Versions are dotted non-negative integers ("1", "1.4", "1.4.2"), compared numerically
with missing parts as zero ("1.4" == "1.4.0" < "1.10"). Pre-release suffixes are not
accepted (`packaging` is not a dependency of the agent).

Keys are raw 32-byte Ed25519 keys written as unpadded base64url text.

    ValueError
    └── ManifestError
        ├── ManifestFormatError      not a manifest (missing or bad field, bad JSON)
        ├── ManifestSignatureError   no trusted key verifies the signature
        ├── ManifestExpiredError     expires_at has passed
        └── ManifestKeyError         key text is not an Ed25519 key
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

__all__ = [
    "Manifest",
    "ManifestError",
    "ManifestExpiredError",
    "ManifestFormatError",
    "ManifestKeyError",
    "ManifestSignatureError",
    "SignedManifest",
    "canonical_json",
    "compare_versions",
    "file_sha256_and_size",
    "format_expires_at",
    "generate_private_key",
    "is_newer_version",
    "load_private_key",
    "load_public_key",
    "parse_version",
    "private_key_to_text",
    "public_key_to_text",
    "sign_manifest",
    "verify_manifest",
]

_VERSION = re.compile(r"\d{1,9}(\.\d{1,9}){0,7}")
_SHA256 = re.compile(r"[0-9a-fA-F]{64}")
_SIGNATURE_BYTES = 64
_KEY_BYTES = 32

_T = TypeVar("_T")


class ManifestError(ValueError):
    """A release manifest was refused; str(exc) says why."""


class ManifestFormatError(ManifestError):
    pass


class ManifestSignatureError(ManifestError):
    pass


class ManifestExpiredError(ManifestError):
    pass


class ManifestKeyError(ManifestError):
    pass


@dataclass(frozen=True, slots=True)
class Manifest:
    """The verified, typed fields of a manifest."""

    version: str
    download_url: str
    sha256_url: str
    sha256: str  # lower-case hex
    size: int
    expires_at: datetime
    platform: str | None = None

    def to_fields(self) -> dict[str, Any]:
        """The JSON fields to sign."""
        fields: dict[str, Any] = {
            "version": self.version,
            "download_url": self.download_url,
            "sha256_url": self.sha256_url,
            "sha256": self.sha256,
            "size": self.size,
            "expires_at": format_expires_at(self.expires_at),
        }
        if self.platform is not None:
            fields["platform"] = self.platform
        return fields


@dataclass(frozen=True, slots=True)
class SignedManifest:
    """Manifest fields exactly as signed, and the signature; not verified by itself."""

    fields: Mapping[str, Any]
    signature: str

    def to_dict(self) -> dict[str, Any]:
        return {"manifest": dict(self.fields), "signature": self.signature}

    def to_json(self) -> bytes:
        return canonical_json(self.to_dict())

    @classmethod
    def from_dict(cls, data: Any) -> SignedManifest:
        """Read `{"manifest": {...}, "signature": "..."}`; other top-level keys are ignored."""
        if not isinstance(data, Mapping):
            raise ManifestFormatError("a signed manifest is a JSON object")
        fields, signature = data.get("manifest"), data.get("signature")
        if not isinstance(fields, Mapping) or not isinstance(signature, str):
            raise ManifestFormatError("a signed manifest needs 'manifest' and 'signature'")
        return cls(dict(fields), signature)

    @classmethod
    def from_json(cls, raw: bytes | str) -> SignedManifest:
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ManifestFormatError("the signed manifest is not JSON") from exc
        return cls.from_dict(data)


def canonical_json(value: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8; floats, NaN and non-JSON types refused."""
    _refuse_floats(value)
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise ManifestFormatError(f"not canonical JSON: {exc}") from exc
    return text.encode("utf-8")


def _refuse_floats(value: Any) -> None:
    if isinstance(value, float):
        raise ManifestFormatError("floats are not allowed in a manifest")
    if isinstance(value, Mapping):
        for item in value.values():
            _refuse_floats(item)
    elif isinstance(value, list | tuple):
        for item in value:
            _refuse_floats(item)


def sign_manifest(
    manifest_fields: Mapping[str, Any], private_key: Ed25519PrivateKey
) -> SignedManifest:
    """Sign the fields (checked first, so a bad manifest is never signed)."""
    _parse_fields(manifest_fields)
    fields = dict(manifest_fields)
    signature = private_key.sign(canonical_json(fields))
    return SignedManifest(fields, _b64encode(signature))


def verify_manifest(
    signed: SignedManifest, public_keys: Sequence[Ed25519PublicKey], *, now: datetime
) -> Manifest:
    """The manifest, if one of `public_keys` signed it and it has not expired at `now`."""
    _verify_signature(signed, public_keys)
    manifest = _parse_fields(signed.fields)
    if now >= manifest.expires_at:
        raise ManifestExpiredError(
            f"manifest for {manifest.version} expired at {format_expires_at(manifest.expires_at)}"
        )
    return manifest


def _verify_signature(signed: SignedManifest, public_keys: Sequence[Ed25519PublicKey]) -> None:
    if not public_keys:
        raise ManifestSignatureError("no trusted release keys are configured")
    try:
        signature = _b64decode(signed.signature)
    except ValueError as exc:
        raise ManifestSignatureError("the signature is not base64url") from exc
    if len(signature) != _SIGNATURE_BYTES:
        raise ManifestSignatureError("the signature is not an Ed25519 signature")
    message = canonical_json(signed.fields)
    for key in public_keys:
        try:
            key.verify(signature, message)
        except InvalidSignature:
            continue
        return
    raise ManifestSignatureError("no trusted release key verifies the manifest signature")


def _parse_fields(fields: Mapping[str, Any]) -> Manifest:
    version = _field(fields, "version", str)
    parse_version(version)
    sha256 = _field(fields, "sha256", str)
    if not _SHA256.fullmatch(sha256):
        raise ManifestFormatError("manifest sha256 is not 64 hex characters")
    size = _field(fields, "size", int)
    if isinstance(size, bool) or size < 1:
        raise ManifestFormatError("manifest size is not a positive integer")
    platform = fields.get("platform")
    if platform is not None and not isinstance(platform, str):
        raise ManifestFormatError("manifest platform is not a string")
    return Manifest(
        version=version,
        download_url=_url_field(fields, "download_url"),
        sha256_url=_url_field(fields, "sha256_url"),
        sha256=sha256.lower(),
        size=size,
        expires_at=_parse_expires_at(_field(fields, "expires_at", str)),
        platform=platform,
    )


def _field(fields: Mapping[str, Any], name: str, kind: type[_T]) -> _T:
    value = fields.get(name)
    if not isinstance(value, kind):
        raise ManifestFormatError(f"manifest field {name} is missing or not a {kind.__name__}")
    return value


def _url_field(fields: Mapping[str, Any], name: str) -> str:
    # http is accepted: the signed sha256 protects the file, and `rigway up` serves http.
    url = _field(fields, name, str)
    if not url.startswith(("https://", "http://")):
        raise ManifestFormatError(f"manifest {name} is not an http(s) URL")
    return url


def _parse_expires_at(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as exc:
        raise ManifestFormatError("manifest expires_at is not an ISO 8601 time") from exc
    if moment.tzinfo is None:
        raise ManifestFormatError("manifest expires_at has no time zone")
    return moment


def format_expires_at(moment: datetime) -> str:
    """UTC, whole seconds, `Z` suffix: `2026-12-31T00:00:00Z`."""
    utc = moment.astimezone(UTC).replace(microsecond=0)
    return utc.isoformat().replace("+00:00", "Z")


def file_sha256_and_size(path: Path) -> tuple[str, int]:
    """The `sha256` (hex) and `size` a manifest gives for the file at `path`."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as file:
        for chunk in iter(lambda: file.read(1 << 20), b""):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


def parse_version(text: str) -> tuple[int, ...]:
    """`"1.4.2"` → (1, 4, 2) with trailing zeros dropped, so "1.4" and "1.4.0" are equal."""
    if not _VERSION.fullmatch(text):
        raise ManifestFormatError(f"version {text!r} is not dotted numbers like 1.4.2")
    parts = [int(part) for part in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def compare_versions(left: str, right: str) -> int:
    """-1, 0 or 1 as `left` is older than, equal to or newer than `right`."""
    a, b = parse_version(left), parse_version(right)
    return (a > b) - (a < b)


def is_newer_version(candidate: str, than: str) -> bool:
    return compare_versions(candidate, than) > 0


def generate_private_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def private_key_to_text(key: Ed25519PrivateKey) -> str:
    return _b64encode(key.private_bytes_raw())


def public_key_to_text(key: Ed25519PublicKey) -> str:
    return _b64encode(key.public_bytes_raw())


def load_private_key(text: str) -> Ed25519PrivateKey:
    return Ed25519PrivateKey.from_private_bytes(_key_bytes(text))


def load_public_key(text: str) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(_key_bytes(text))


def _key_bytes(text: str) -> bytes:
    try:
        raw = _b64decode(text.strip())
    except ValueError as exc:
        raise ManifestKeyError("key text is not base64url") from exc
    if len(raw) != _KEY_BYTES:
        raise ManifestKeyError("key text is not a raw 32-byte Ed25519 key")
    return raw


def _b64encode(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64decode(text: str) -> bytes:
    if not re.fullmatch(r"[A-Za-z0-9_-]*", text):
        raise ValueError("not base64url")
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except binascii.Error as exc:
        raise ValueError("not base64url") from exc
