"""Which agent release the gateway offers, the files it serves, the keys agents trust.

Configured (`release_manifest_path`): the operator's signed manifest, read at each ask
so a new one is picked up without a restart; the one file it names (the last part of its
`download_url`), when that file sits beside the manifest, is served with its `.sha256`.
Nothing else in that folder is: it may hold the operator's private key. Agents trust
`release_public_key`, if given.

Not configured: the built-in release (`builtin.py`), and agents trust its key.

One `ReleaseService` per app, reached through `release_service_of(services)`. Its
methods block (files, hashing): call them through `asyncio.to_thread`.
"""

from __future__ import annotations

import re
from pathlib import Path

from rigway import __version__
from rigway.gateway.errors import NotFound
from rigway.gateway.releases.builtin import SHA256_SUFFIX, BuiltinRelease, ReleaseFile
from rigway.gateway.services import Services
from rigway.gateway.settings import GatewaySettings
from rigway.releases.manifest import ManifestError, SignedManifest, public_key_to_text

__all__ = ["ReleaseService", "release_service_of"]

_EXTRAS_KEY = "releases.service"
_SAFE_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class ReleaseService:
    def __init__(self, settings: GatewaySettings, builtin: BuiltinRelease) -> None:
        self._manifest_path = settings.release_manifest_path
        self._public_key = settings.release_public_key
        self._builtin = builtin

    @property
    def is_builtin(self) -> bool:
        return self._manifest_path is None

    def prepare(self) -> None:
        """Ready the built-in release (key, wheel) ahead of the first agent's ask."""
        if self._manifest_path is None:
            self._builtin.prepare()

    def latest(self) -> SignedManifest:
        """The offered release; NotFound `release_not_found` when the configured
        manifest cannot be read."""
        if self._manifest_path is None:
            return self._builtin.signed_manifest()
        return _read_manifest(self._manifest_path)

    def file(self, name: str) -> ReleaseFile | None:
        if not _SAFE_FILE_NAME.fullmatch(name):
            return None
        if self._manifest_path is None:
            return self._builtin.file(name)
        return _configured_file(self._manifest_path, name)

    def public_keys(self) -> list[str]:
        """The keys an agent pairing with this gateway should trust, as text."""
        if self._manifest_path is None:
            return [public_key_to_text(self._builtin.public_key())]
        return [] if self._public_key is None else [self._public_key]


def release_service_of(services: Services) -> ReleaseService:
    """The app's release service, built on first use (no route has to ask for it at
    start, and `create_app` stays the one place that wires the rest)."""
    found = services.extras.get(_EXTRAS_KEY)
    if isinstance(found, ReleaseService):
        return found
    settings = services.settings
    builtin = BuiltinRelease(
        release_dir=settings.state_dir / "release",
        key_file=settings.resolved_release_signing_key_file(),
        public_base_url=settings.public_base_url,
        version=__version__,
        now=services.clock.now,
    )
    created = services.extras.setdefault(_EXTRAS_KEY, ReleaseService(settings, builtin))
    assert isinstance(created, ReleaseService)
    return created


def _read_manifest(path: Path) -> SignedManifest:
    try:
        return SignedManifest.from_json(path.read_bytes())
    except (OSError, ManifestError) as exc:
        detail = f"the release manifest is unreadable ({exc})"
        raise NotFound(detail, code="release_not_found") from exc


def _configured_file(manifest_path: Path, name: str) -> ReleaseFile | None:
    try:
        fields = SignedManifest.from_json(manifest_path.read_bytes()).fields
    except (OSError, ManifestError):
        return None
    download_url = fields.get("download_url")
    if not isinstance(download_url, str):
        return None
    named = download_url.rsplit("/", 1)[-1]
    if name == named:
        path = manifest_path.parent / named
        return ReleaseFile(path, None, "application/octet-stream") if path.is_file() else None
    sha256 = fields.get("sha256")
    if name == named + SHA256_SUFFIX and isinstance(sha256, str):
        return ReleaseFile(None, f"{sha256}  {named}\n", "text/plain")
    return None
