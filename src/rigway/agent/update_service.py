"""Beside a running agent: the periodic update check, and the health marker.

`rigway agent run`, started by `rigway agent launch`, is told its install root and
health marker. Once its link is up it writes the marker (the launcher's sign that this
version works) and checks `/v1/agent/latest`: then again every `interval_s` (6 hours by
default, ±10 % so a fleet started together does not ask together). A newer release that
verifies is downloaded and checked (`Updater`), unpacked beside the running version and
put on trial (`InstallRoot`); once no session is running the agent stops and exits with
`RESTART_EXIT_CODE`, and the launcher starts the new version.

A failed check is logged and tried again at the next interval: it never stops the
agent. A version that failed its trial (`bad-versions`) is not installed again.
Updates are off without an install root (no launcher to restart into), with
`--no-update`, or without a trusted release key.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx2
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from rigway import __version__
from rigway.agent.install_root import InstallRoot, ReleaseInstallError, write_health_marker
from rigway.agent.updater import (
    MANIFEST_SUFFIX,
    Updater,
    UpdateRefused,
    load_release_keys,
    release_keys_file,
)
from rigway.releases.manifest import ManifestError, load_public_key

__all__ = [
    "DEFAULT_UPDATE_INTERVAL_S",
    "LATEST_PATH",
    "LinkState",
    "SelfUpdate",
    "SelfUpdateSettings",
    "UpdateService",
    "latest_url",
    "self_update_settings",
]

_log = logging.getLogger(__name__)

DEFAULT_UPDATE_INTERVAL_S = 6 * 3600.0
LATEST_PATH = "/v1/agent/latest"
JITTER_FRACTION = 0.1
# How often a staged restart looks again for the end of the running session.
IDLE_RECHECK_S = 30.0
_CONNECT_PATH = "/v1/agent/connect"
_HTTP_SCHEMES = {"ws": "http", "wss": "https", "http": "http", "https": "https"}

Sleep = Callable[[float], Awaitable[None]]


class LinkState(Protocol):
    """What the update loop needs of the host link."""

    async def wait_connected(self) -> None: ...

    @property
    def active_session_id(self) -> str | None: ...


def latest_url(gateway_url: str) -> str:
    """`/v1/agent/latest` of the gateway the agent dials (an http(s) base or its
    ws(s) connect URL)."""
    parts = urlsplit(gateway_url)
    scheme = _HTTP_SCHEMES.get(parts.scheme.lower())
    if scheme is None or parts.netloc == "":
        raise ValueError(f"gateway URL {gateway_url!r} must be http(s):// or ws(s)://host")
    path = parts.path.rstrip("/").removesuffix(_CONNECT_PATH)
    return urlunsplit((scheme, parts.netloc, path + LATEST_PATH, "", ""))


class UpdateService:
    def __init__(
        self,
        updater: Updater,
        installs: InstallRoot,
        latest_url: str,
        *,
        interval_s: float = DEFAULT_UPDATE_INTERVAL_S,
        rng: random.Random | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        if interval_s <= 0:
            raise ValueError("interval_s must be > 0")
        self._updater = updater
        self._installs = installs
        self._latest_url = latest_url
        self._interval_s = interval_s
        self._rng = rng if rng is not None else random.Random()  # noqa: S311 (jitter only)
        self._sleep = sleep

    async def run(self, link: LinkState) -> str:
        """Check once the link is up, then at each interval, until a new version is on
        trial and no session runs; that version."""
        await link.wait_connected()
        while True:
            version = await self.check_once()
            if version is not None:
                while link.active_session_id is not None:
                    await self._sleep(IDLE_RECHECK_S)
                return version
            await self._sleep(self.next_delay_s())

    def next_delay_s(self) -> float:
        return self._interval_s * self._rng.uniform(1 - JITTER_FRACTION, 1 + JITTER_FRACTION)

    async def check_once(self) -> str | None:
        """The version put on trial, or None (nothing newer, refused, or failed: logged)."""
        try:
            return await self._install_newer()
        except UpdateRefused as exc:
            _log.warning("update refused: %s", exc)
        except ReleaseInstallError as exc:
            _log.error("update not installed: %s", exc)
        except Exception:
            _log.exception("update check failed")
        return None

    async def _install_newer(self) -> str | None:
        signed = await self._updater.check(self._latest_url)
        if signed is None:
            return None
        version = str(signed.fields["version"])
        if version in self._installs.bad_versions():
            _log.info("release %s failed its trial here before: not installed again", version)
            return None
        staged = await self._updater.stage(signed)
        await asyncio.to_thread(self._installs.install_wheel, staged, version)
        self._installs.begin_trial(version)
        # Installed: the download has served its purpose.
        for path in (staged, staged.with_name(staged.name + MANIFEST_SUFFIX)):
            path.unlink(missing_ok=True)
        _log.warning("agent %s installed beside %s; restarting into it", version, __version__)
        return version


@dataclass(frozen=True, slots=True)
class SelfUpdateSettings:
    gateway_url: str
    install_root: Path | None = None  # None: not started by the launcher, no updates
    health_file: Path | None = None
    is_enabled: bool = True
    interval_s: float = DEFAULT_UPDATE_INTERVAL_S
    trusted_keys: tuple[Ed25519PublicKey, ...] = ()

    def __post_init__(self) -> None:
        if self.interval_s <= 0:
            raise ValueError("the update interval must be > 0 seconds")
        latest_url(self.gateway_url)


def self_update_settings(
    gateway_url: str,
    token_file: Path,
    *,
    install_root: Path | None,
    health_file: Path | None,
    is_enabled: bool,
    interval_s: float,
    extra_keys: Sequence[str] = (),
) -> SelfUpdateSettings:
    """Settings from `rigway agent run`'s options: the keys pinned beside the token at
    pairing, plus any given as `--release-key`. Raises UpdateRefused for a damaged key
    and ValueError for a bad interval or gateway URL."""
    keys = load_release_keys(release_keys_file(token_file))
    try:
        keys += [load_public_key(text) for text in extra_keys]
    except ManifestError as exc:
        raise UpdateRefused(f"--release-key is not an Ed25519 public key: {exc}") from exc
    return SelfUpdateSettings(
        gateway_url,
        install_root=install_root,
        health_file=health_file,
        is_enabled=is_enabled,
        interval_s=interval_s,
        trusted_keys=tuple(keys),
    )


class SelfUpdate:
    """What `rigway agent run` starts beside its link: the health marker and the update
    loop. `restart_requested` is True once the agent should exit with
    `RESTART_EXIT_CODE`; `stop` has then been set."""

    def __init__(
        self,
        settings: SelfUpdateSettings,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._settings = settings
        self._service = _update_service(settings, transport, sleep)
        self._tasks: set[asyncio.Task[None]] = set()
        self.restart_requested = False

    @property
    def is_updating(self) -> bool:
        return self._service is not None

    def start(self, link: LinkState, stop: asyncio.Event) -> None:
        if self._settings.health_file is not None:
            self._spawn(self._mark_healthy(link, self._settings.health_file))
        if self._service is not None:
            self._spawn(self._update(self._service, link, stop))

    async def aclose(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _mark_healthy(self, link: LinkState, health_file: Path) -> None:
        await link.wait_connected()
        try:
            await asyncio.to_thread(write_health_marker, health_file, os.getpid())
        except OSError as exc:
            _log.error("cannot write the health marker %s: %s", health_file, exc)

    async def _update(self, service: UpdateService, link: LinkState, stop: asyncio.Event) -> None:
        await service.run(link)
        self.restart_requested = True
        stop.set()

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            _log.error("agent self-update stopped: %s", task.exception())


def _update_service(
    settings: SelfUpdateSettings, transport: httpx2.AsyncBaseTransport | None, sleep: Sleep
) -> UpdateService | None:
    reason = _why_no_updates(settings)
    if reason is not None:
        _log.info("agent updates are off: %s", reason)
        return None
    assert settings.install_root is not None
    installs = InstallRoot(settings.install_root)
    updater = Updater(
        current_version=__version__,
        trusted_public_keys=settings.trusted_keys,
        staging_dir=installs.staging_dir,
        transport=transport,
    )
    return UpdateService(
        updater,
        installs,
        latest_url(settings.gateway_url),
        interval_s=settings.interval_s,
        sleep=sleep,
    )


def _why_no_updates(settings: SelfUpdateSettings) -> str | None:
    if not settings.is_enabled:
        return "--no-update"
    if settings.install_root is None:
        return "not started by `rigway agent launch` (no install root to restart into)"
    if not settings.trusted_keys:
        return "no trusted release key (pair again, or pass --release-key)"
    return None
