"""The release a gateway serves when none is configured: itself.

Its version is the gateway's own, its file a wheel of the running rigway packed into
`<state dir>/release/` (`wheel.py`), and its manifest is signed by an Ed25519 key the
gateway generates at first use (`<state dir>/release-signing.key`, mode 0600, unless
`release_signing_key_file` names another). Agents learn the public key when they pair
(`GET /v1/agent/release-keys`) and pin it.

The manifest is signed for `MANIFEST_LIFETIME` and signed again once half of that has
passed, so a manifest an agent fetched stays valid for days while a captured one cannot
be replayed for ever. Several nodes that share the key file and run the same code serve
the same wheel (packing is deterministic) and manifests every agent accepts.

Every method here blocks (disk, hashing): routes call them through `asyncio.to_thread`.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from rigway.gateway.releases.wheel import pack_installed_rigway
from rigway.releases.manifest import (
    Manifest,
    SignedManifest,
    file_sha256_and_size,
    generate_private_key,
    load_private_key,
    private_key_to_text,
    sign_manifest,
)

__all__ = [
    "DOWNLOAD_PATH",
    "MANIFEST_LIFETIME",
    "BuiltinRelease",
    "ReleaseFile",
    "load_or_create_signing_key",
]

_log = logging.getLogger(__name__)

# Where the gateway serves release files; the route is in `routes.py`.
DOWNLOAD_PATH = "/v1/agent/releases"
MANIFEST_LIFETIME = timedelta(days=7)
SHA256_SUFFIX = ".sha256"


@dataclass(frozen=True, slots=True)
class ReleaseFile:
    """A file the release route may serve: a path on disk, or text made here."""

    path: Path | None
    text: str | None
    media_type: str


@dataclass(frozen=True, slots=True)
class _Packed:
    wheel: Path
    sha256: str
    size: int


class BuiltinRelease:
    def __init__(
        self,
        *,
        release_dir: Path,
        key_file: Path,
        public_base_url: str,
        version: str,
        now: Callable[[], datetime],
        pack: Callable[[Path], Path] = pack_installed_rigway,
    ) -> None:
        self._release_dir = release_dir
        self._key_file = key_file
        self._base_url = public_base_url.rstrip("/")
        self._version = version
        self._now = now
        self._pack = pack
        self._lock = threading.Lock()
        self._key: Ed25519PrivateKey | None = None
        self._packed: _Packed | None = None
        self._signed: tuple[datetime, SignedManifest] | None = None  # (signed at, manifest)

    def prepare(self) -> None:
        """Load or create the key and pack the wheel now rather than at the first ask."""
        with self._lock:
            self._signing_key()
            self._packed_wheel()

    def public_key(self) -> Ed25519PublicKey:
        with self._lock:
            return self._signing_key().public_key()

    def signed_manifest(self) -> SignedManifest:
        """The current signed manifest; signed again when half its lifetime has passed."""
        with self._lock:
            now = self._now()
            if self._signed is not None and now - self._signed[0] < MANIFEST_LIFETIME / 2:
                return self._signed[1]
            packed = self._packed_wheel()
            download_url = f"{self._base_url}{DOWNLOAD_PATH}/{packed.wheel.name}"
            manifest = Manifest(
                version=self._version,
                download_url=download_url,
                sha256_url=download_url + SHA256_SUFFIX,
                sha256=packed.sha256,
                size=packed.size,
                expires_at=now + MANIFEST_LIFETIME,
            )
            signed = sign_manifest(manifest.to_fields(), self._signing_key())
            self._signed = (now, signed)
            return signed

    def file(self, name: str) -> ReleaseFile | None:
        """The wheel or its `.sha256` by file name; None for any other name."""
        with self._lock:
            packed = self._packed_wheel()
        if name == packed.wheel.name:
            return ReleaseFile(packed.wheel, None, "application/octet-stream")
        if name == packed.wheel.name + SHA256_SUFFIX:
            return ReleaseFile(None, f"{packed.sha256}  {packed.wheel.name}\n", "text/plain")
        return None

    def _signing_key(self) -> Ed25519PrivateKey:
        if self._key is None:
            self._key = load_or_create_signing_key(self._key_file)
        return self._key

    def _packed_wheel(self) -> _Packed:
        # Packed once per process: the code a process runs does not change under it, and
        # packing at each start keeps the wheel in step with an upgraded installation.
        if self._packed is None:
            wheel = self._pack(self._release_dir)
            sha256, size = file_sha256_and_size(wheel)
            self._packed = _Packed(wheel, sha256, size)
            _log.info("built-in agent release %s: %s (%d bytes)", self._version, wheel, size)
        return self._packed


def load_or_create_signing_key(path: Path) -> Ed25519PrivateKey:
    """The Ed25519 key in `path`, created there (mode 0600) when absent.

    Written whole to a temporary file, then linked to its name: a link fails when the
    name exists, so of two nodes sharing the state directory one key wins and neither
    ever reads a half-written file.
    """
    try:
        return load_private_key(path.read_text(encoding="ascii"))
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    key = generate_private_key()
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=".key-")  # mode 0600
    try:
        with os.fdopen(fd, "w", encoding="ascii") as file:
            file.write(private_key_to_text(key) + "\n")
            file.flush()
            os.fsync(file.fileno())
        try:
            os.link(temp_name, path)
        except FileExistsError:
            return load_private_key(path.read_text(encoding="ascii"))
    finally:
        os.unlink(temp_name)
    _log.info("created the release signing key %s", path)
    return key
