"""The agent's updater: fetch a signed release manifest, verify it, stage the new build.

Nothing here installs: `stage` leaves a verified file and its manifest in `staging_dir`
for the installer (or the next start) to pick up. A release is refused when:

- no trusted key signed the manifest, or it has expired (`rigway.releases.manifest`);
- its version is not newer than the running one (a replayed older or same manifest);
- its version is below the highest version this updater ever staged (kept in
  `staging_dir/highest-staged-version`, so a rollback survives restarts);
- the download is larger than the manifest's `size` or `max_download_bytes` (reading
  stops past the cap), shorter than `size`, or its SHA-256 differs;
- an answer is compressed (`Content-Encoding` other than identity, which is what the
  updater asks for): the signed hash is over the file itself, and a compressed answer
  could expand far past the cap inside one chunk.

The file is written to a temporary file in `staging_dir`, flushed to disk, then renamed
over its final name (`os.replace`, atomic on one file system); the manifest is written
beside it the same way, last, so a manifest on disk always describes a complete file.

Trusted keys reach an agent as it pairs: `fetch_release_keys` reads the gateway's
`/v1/agent/release-keys` once, `save_release_keys` pins them beside the rig token, and
`load_release_keys` reads them at each start. A gateway's later answer never changes
them, so whoever can answer for the gateway afterwards cannot slip in a key of its own.

Network seam: `transport` (an `httpx2.AsyncBaseTransport`). With a transport given, the
environment (proxies, CA variables) is ignored; without one the environment is honoured,
because rigs behind company proxies need it. Redirects are followed for downloads: the
signed hash, not the server, vouches for the file.

    UpdateRefused(reason)   every refusal; str(exc) is the reason
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import os
import re
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from rigway.releases.manifest import (
    Manifest,
    ManifestError,
    SignedManifest,
    compare_versions,
    load_public_key,
    parse_version,
    verify_manifest,
)

__all__ = [
    "RELEASE_KEYS_PATH",
    "UpdateRefused",
    "Updater",
    "fetch_release_keys",
    "load_release_keys",
    "release_keys_file",
    "save_release_keys",
    "write_atomically",
]

DEFAULT_MAX_DOWNLOAD_BYTES = 512 * 1024 * 1024
MAX_MANIFEST_BYTES = 64 * 1024
HIGHEST_STAGED_FILE = "highest-staged-version"
MANIFEST_SUFFIX = ".manifest.json"
RELEASE_KEYS_PATH = "/v1/agent/release-keys"
MAX_RELEASE_KEYS = 16
# Uncompressed only: the signed hash covers the file itself, and a compressed answer could
# expand far past the size cap inside a single chunk.
_IDENTITY = {"Accept-Encoding": "identity"}
_SAFE_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


class UpdateRefused(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _utc_now() -> datetime:
    return datetime.now(UTC)


class Updater:
    def __init__(
        self,
        *,
        current_version: str,
        trusted_public_keys: Sequence[Ed25519PublicKey],
        staging_dir: Path,
        transport: httpx2.AsyncBaseTransport | None = None,
        now: Callable[[], datetime] = _utc_now,
        max_download_bytes: int = DEFAULT_MAX_DOWNLOAD_BYTES,
        timeout_s: float = 60.0,
    ) -> None:
        parse_version(current_version)  # fail at start-up, not at the first update
        self._current_version = current_version
        self._keys = list(trusted_public_keys)
        self._staging_dir = staging_dir
        self._transport = transport
        self._now = now
        self._max_download_bytes = max_download_bytes
        self._timeout_s = timeout_s

    async def check(self, latest_url: str) -> SignedManifest | None:
        """The signed manifest at `latest_url` if it offers an acceptable newer version.

        None when it offers nothing newer; UpdateRefused when it does not verify.
        """
        async with self._client() as client:
            raw = await _read_capped(client, latest_url, MAX_MANIFEST_BYTES, "manifest")
        try:
            signed = SignedManifest.from_json(raw)
        except ManifestError as exc:
            raise UpdateRefused(str(exc)) from exc
        manifest = self._verified(signed)
        if not self._is_acceptable_version(manifest.version):
            return None
        return signed

    async def stage(self, signed: SignedManifest) -> Path:
        """Verify, download, check and atomically stage the release; return its path."""
        manifest = self._verified(signed)
        self._refuse_unacceptable_version(manifest.version)
        if manifest.size > self._max_download_bytes:
            raise UpdateRefused(
                f"release {manifest.version} is {manifest.size} bytes, over the "
                f"{self._max_download_bytes}-byte limit"
            )
        self._staging_dir.mkdir(parents=True, exist_ok=True)
        target = self._staging_dir / _file_name(manifest)
        await self._download_to(manifest, target)
        write_atomically(target.with_name(target.name + MANIFEST_SUFFIX), signed.to_json())
        self._remember_staged(manifest.version)
        return target

    def _verified(self, signed: SignedManifest) -> Manifest:
        try:
            return verify_manifest(signed, self._keys, now=self._now())
        except ManifestError as exc:
            raise UpdateRefused(str(exc)) from exc

    def _is_acceptable_version(self, version: str) -> bool:
        try:
            self._refuse_unacceptable_version(version)
        except UpdateRefused:
            return False
        return True

    def _refuse_unacceptable_version(self, version: str) -> None:
        if compare_versions(version, self._current_version) <= 0:
            raise UpdateRefused(
                f"release {version} is not newer than the running {self._current_version}"
            )
        highest = self._highest_staged()
        if highest is not None and compare_versions(version, highest) < 0:
            raise UpdateRefused(f"release {version} is older than the staged {highest}")

    def _highest_staged(self) -> str | None:
        path = self._staging_dir / HIGHEST_STAGED_FILE
        try:
            text = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise UpdateRefused(f"cannot read {path}: {exc}") from exc
        try:
            parse_version(text)
        except ManifestError as exc:
            # Fail closed: a damaged record must not open the door to a rollback.
            raise UpdateRefused(f"{path} is damaged; remove it to allow updates") from exc
        return text

    def _remember_staged(self, version: str) -> None:
        highest = self._highest_staged()
        if highest is None or compare_versions(version, highest) > 0:
            write_atomically(self._staging_dir / HIGHEST_STAGED_FILE, version.encode("ascii"))

    async def _download_to(self, manifest: Manifest, target: Path) -> None:
        fd, temp_name = tempfile.mkstemp(dir=self._staging_dir, prefix=".download-")
        try:
            with os.fdopen(fd, "wb") as file:
                try:
                    digest = await self._stream_into(manifest, file)
                except httpx2.HTTPError as exc:
                    raise UpdateRefused(
                        f"release {manifest.version} download failed: {exc}"
                    ) from exc
                await asyncio.to_thread(_flush_to_disk, file)
            if not hmac.compare_digest(digest.encode("ascii"), manifest.sha256.encode("ascii")):
                raise UpdateRefused(f"release {manifest.version} does not match its sha256")
            await asyncio.to_thread(os.replace, temp_name, target)
        finally:
            _remove_if_present(temp_name)

    async def _stream_into(self, manifest: Manifest, file: IO[bytes]) -> str:
        digest = hashlib.sha256()
        received = 0
        async with (
            self._client() as client,
            client.stream("GET", manifest.download_url, headers=_IDENTITY) as response,
        ):
            _refuse_status(response, "download")
            async for chunk in response.aiter_bytes():
                received += len(chunk)
                if received > manifest.size:
                    raise UpdateRefused(
                        f"release {manifest.version} download is larger than {manifest.size} bytes"
                    )
                digest.update(chunk)
                file.write(chunk)
        if received < manifest.size:
            raise UpdateRefused(
                f"release {manifest.version} download is truncated: "
                f"{received} of {manifest.size} bytes"
            )
        return digest.hexdigest()

    def _client(self) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(
            transport=self._transport,
            trust_env=self._transport is None,
            follow_redirects=True,
            timeout=httpx2.Timeout(self._timeout_s),
        )


async def fetch_release_keys(
    base_url: str, *, transport: httpx2.AsyncBaseTransport | None = None, timeout_s: float = 15.0
) -> list[str]:
    """The release keys the gateway at `base_url` (http(s)://) hands to pairing agents;
    UpdateRefused when it cannot be read or a key is not an Ed25519 key."""
    async with httpx2.AsyncClient(
        transport=transport, trust_env=transport is None, timeout=httpx2.Timeout(timeout_s)
    ) as client:
        url = base_url.rstrip("/") + RELEASE_KEYS_PATH
        raw = await _read_capped(client, url, MAX_MANIFEST_BYTES, "release keys")
    try:
        keys = json.loads(raw)["keys"]
    except (ValueError, KeyError, TypeError) as exc:
        raise UpdateRefused('the gateway\'s release keys are not {"keys": [...]}') from exc
    if not isinstance(keys, list) or len(keys) > MAX_RELEASE_KEYS:
        raise UpdateRefused(f"the gateway's release keys are not a list of <= {MAX_RELEASE_KEYS}")
    return [_checked_key(key) for key in keys]


def release_keys_file(token_file: Path) -> Path:
    """Where the keys pinned at pairing live: beside the rig token."""
    return token_file.with_suffix(".release-keys")


def save_release_keys(path: Path, keys: Sequence[str]) -> None:
    """Pin `keys` (one a line), replacing any pinned before."""
    checked = [_checked_key(key) for key in keys]
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, "".join(key + "\n" for key in checked).encode("ascii"))


def load_release_keys(path: Path) -> list[Ed25519PublicKey]:
    """The pinned keys; none when the file is absent. A damaged file raises
    UpdateRefused (fail closed: no key is trusted by guesswork)."""
    try:
        lines = path.read_text(encoding="ascii").split()
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise UpdateRefused(f"cannot read the release keys in {path}: {exc}") from exc
    try:
        return [load_public_key(line) for line in lines]
    except ManifestError as exc:
        raise UpdateRefused(f"{path} holds a damaged release key: {exc}") from exc


def _checked_key(key: object) -> str:
    if not isinstance(key, str):
        raise UpdateRefused("a release key is not text")
    try:
        load_public_key(key)
    except ManifestError as exc:
        raise UpdateRefused(f"release key {key[:16]!r} is refused: {exc}") from exc
    return key.strip()


async def _read_capped(client: httpx2.AsyncClient, url: str, cap: int, what: str) -> bytes:
    body = bytearray()
    try:
        async with client.stream("GET", url, headers=_IDENTITY) as response:
            _refuse_status(response, what)
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > cap:
                    raise UpdateRefused(f"{what} is larger than {cap} bytes")
    except httpx2.HTTPError as exc:
        raise UpdateRefused(f"{what} fetch failed: {exc}") from exc
    return bytes(body)


def _refuse_status(response: httpx2.Response, what: str) -> None:
    if response.status_code != 200:
        raise UpdateRefused(f"{what} fetch answered status {response.status_code}")
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding != "identity":
        raise UpdateRefused(f"{what} fetch answered with Content-Encoding {encoding}")


def _file_name(manifest: Manifest) -> str:
    """The download's own file name when it is plain, else rigway-agent-<version>.bin."""
    name = httpx2.URL(manifest.download_url).path.rsplit("/", 1)[-1]
    if _SAFE_FILE_NAME.fullmatch(name) and not name.endswith(MANIFEST_SUFFIX):
        return name
    return f"rigway-agent-{manifest.version}.bin"


def write_atomically(path: Path, data: bytes) -> None:
    """`data` in `path`, whole or not at all, even across a crash."""
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=".write-")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            _flush_to_disk(file)
        os.replace(temp_name, path)
    finally:
        _remove_if_present(temp_name)


def _flush_to_disk(file: IO[bytes]) -> None:
    # fsync before rename: after a crash the new name holds the whole file or nothing.
    file.flush()
    os.fsync(file.fileno())


def _remove_if_present(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
