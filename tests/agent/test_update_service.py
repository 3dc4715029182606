"""The update loop beside a running agent, against an httpx2.MockTransport gateway that
offers a tiny locally signed wheel: a newer release is installed beside the running
one and put on trial; nothing newer, a bad version, a refusal or a failure leaves
everything as it was and never raises; checks wait for the link, restarts for the end
of the session."""

from __future__ import annotations

import asyncio
import logging
import os
import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from rigway import __version__
from rigway.agent.install_root import InstallRoot, Pointer, read_health_marker
from rigway.agent.update_service import (
    DEFAULT_UPDATE_INTERVAL_S,
    IDLE_RECHECK_S,
    SelfUpdate,
    SelfUpdateSettings,
    UpdateService,
    latest_url,
    self_update_settings,
)
from rigway.agent.updater import Updater, UpdateRefused, release_keys_file, save_release_keys
from rigway.releases.manifest import SignedManifest, public_key_to_text
from tests.support.tiny_release import HEALTHY, build_wheel, sign_release

KEY = Ed25519PrivateKey.generate()
GATEWAY = "http://gw.example"
LATEST = f"{GATEWAY}/v1/agent/latest"
NEWER = "99.0.0"


class Gateway:
    """Offers `latest` at /v1/agent/latest and serves `files` by path."""

    def __init__(self) -> None:
        self.latest: SignedManifest | None = None
        self.files: dict[str, bytes] = {}
        self.downloads: list[str] = []
        self.fail_with: Exception | None = None

    def offer(
        self, tmp_path: Path, version: str = NEWER, *, wheel_version: str | None = None
    ) -> None:
        wheel = build_wheel(tmp_path / "published", wheel_version or version, HEALTHY)
        url = f"{GATEWAY}/v1/agent/releases/{wheel.name}"
        self.latest = sign_release(wheel, version, KEY, url)
        self.files[httpx2.URL(url).path] = wheel.read_bytes()

    def transport(self) -> httpx2.MockTransport:
        return httpx2.MockTransport(self._handle)

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        if self.fail_with is not None:
            raise self.fail_with
        if str(request.url) == LATEST and self.latest is not None:
            return httpx2.Response(200, content=self.latest.to_json())
        if request.url.path in self.files:
            self.downloads.append(request.url.path)
            return httpx2.Response(200, content=self.files[request.url.path])
        return httpx2.Response(404)


class FakeLink:
    def __init__(self) -> None:
        self.connected = asyncio.Event()
        self.waited_for = asyncio.Event()  # someone began waiting for the link
        self.active_session_id: str | None = None

    async def wait_connected(self) -> None:
        self.waited_for.set()
        await self.connected.wait()


class Sleeps:
    """A sleep that returns at once, recording how long it was asked to take, and runs
    `then` (what time would have brought) on each call."""

    def __init__(self) -> None:
        self.asked_s: list[float] = []
        self.then: list[object] = []

    async def __call__(self, seconds: float) -> None:
        self.asked_s.append(seconds)
        if self.then:
            action = self.then.pop(0)
            assert callable(action)
            action()
        # No time passes, but the caller still gives way to the loop as a real sleep does.
        await asyncio.sleep(0)


def _service(
    tmp_path: Path, gateway: Gateway, sleeps: Sleeps | None = None
) -> tuple[UpdateService, InstallRoot]:
    installs = InstallRoot(tmp_path / "root")
    updater = Updater(
        current_version=__version__,
        trusted_public_keys=[KEY.public_key()],
        staging_dir=installs.staging_dir,
        transport=gateway.transport(),
    )
    service = UpdateService(
        updater, installs, LATEST, rng=random.Random(7), sleep=sleeps or Sleeps()
    )
    return service, installs


async def test_newer_release_is_installed_beside_and_put_on_trial(tmp_path: Path) -> None:
    gateway = Gateway()
    gateway.offer(tmp_path)
    service, installs = _service(tmp_path, gateway)
    assert await service.check_once() == NEWER
    assert installs.pointer() == Pointer(NEWER, None, is_trial=True)
    assert (installs.version_dir(NEWER) / "rigway" / "cli" / "main.py").is_file()
    assert [p.name for p in installs.staging_dir.iterdir()] == ["highest-staged-version"]


async def test_nothing_newer_changes_nothing(tmp_path: Path) -> None:
    gateway = Gateway()
    gateway.offer(tmp_path, __version__)
    service, installs = _service(tmp_path, gateway)
    assert await service.check_once() is None
    assert gateway.downloads == []
    assert installs.pointer() == Pointer()


async def test_version_that_failed_its_trial_is_not_downloaded_again(tmp_path: Path) -> None:
    gateway = Gateway()
    gateway.offer(tmp_path)
    service, installs = _service(tmp_path, gateway)
    await service.check_once()
    installs.roll_back(NEWER)
    assert await service.check_once() is None
    assert len(gateway.downloads) == 1
    assert installs.pointer() == Pointer()


async def test_refused_release_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = Gateway()
    gateway.offer(tmp_path)
    assert gateway.latest is not None
    gateway.latest = SignedManifest({**gateway.latest.fields, "size": 1}, gateway.latest.signature)
    service, installs = _service(tmp_path, gateway)
    with caplog.at_level(logging.WARNING):
        assert await service.check_once() is None
    assert "update refused" in caplog.text
    assert installs.pointer() == Pointer()


async def test_unexpected_failure_is_logged_not_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = Gateway()
    gateway.fail_with = RuntimeError("boom")
    service, _installs = _service(tmp_path, gateway)
    with caplog.at_level(logging.ERROR):
        assert await service.check_once() is None
    assert "update check failed" in caplog.text


async def test_wheel_of_another_version_is_not_installed(tmp_path: Path) -> None:
    gateway = Gateway()
    gateway.offer(tmp_path, NEWER, wheel_version="98.0.0")
    service, installs = _service(tmp_path, gateway)
    assert await service.check_once() is None
    assert installs.pointer() == Pointer()
    assert list(installs.versions_dir.iterdir()) == []


async def test_first_check_waits_for_the_link(tmp_path: Path) -> None:
    gateway = Gateway()
    gateway.offer(tmp_path)
    service, _installs = _service(tmp_path, gateway)
    link = FakeLink()
    running = asyncio.create_task(service.run(link))
    async with asyncio.timeout(5):
        await link.waited_for.wait()
    assert gateway.downloads == []
    assert not running.done()
    link.connected.set()
    assert await running == NEWER


async def test_restart_waits_for_the_session_to_end(tmp_path: Path) -> None:
    gateway = Gateway()
    gateway.offer(tmp_path)
    sleeps = Sleeps()
    service, _installs = _service(tmp_path, gateway, sleeps)
    link = FakeLink()
    link.connected.set()
    link.active_session_id = "ses_1"
    sleeps.then = [lambda: None, lambda: setattr(link, "active_session_id", None)]
    assert await service.run(link) == NEWER
    assert sleeps.asked_s == [IDLE_RECHECK_S, IDLE_RECHECK_S]


async def test_checks_repeat_at_the_interval_with_jitter(tmp_path: Path) -> None:
    gateway = Gateway()
    sleeps = Sleeps()
    service, _installs = _service(tmp_path, gateway, sleeps)
    sleeps.then = [lambda: None, lambda: gateway.offer(tmp_path)]
    link = FakeLink()
    link.connected.set()
    assert await service.run(link) == NEWER
    assert len(sleeps.asked_s) == 2
    for asked in sleeps.asked_s:
        assert DEFAULT_UPDATE_INTERVAL_S * 0.9 <= asked <= DEFAULT_UPDATE_INTERVAL_S * 1.1
    assert sleeps.asked_s[0] != sleeps.asked_s[1]


@pytest.mark.parametrize(
    ("gateway_url", "expected"),
    [
        ("https://gw.example", "https://gw.example/v1/agent/latest"),
        ("https://gw.example/base/", "https://gw.example/base/v1/agent/latest"),
        ("wss://gw.example/v1/agent/connect", "https://gw.example/v1/agent/latest"),
        ("ws://127.0.0.1:8080/v1/agent/connect", "http://127.0.0.1:8080/v1/agent/latest"),
    ],
)
def test_latest_url_is_beside_the_connect_url(gateway_url: str, expected: str) -> None:
    assert latest_url(gateway_url) == expected


def _settings(tmp_path: Path) -> SelfUpdateSettings:
    return SelfUpdateSettings(
        GATEWAY,
        install_root=tmp_path / "root",
        health_file=tmp_path / "root" / "health",
        trusted_keys=(KEY.public_key(),),
    )


@pytest.mark.parametrize(
    "overrides",
    [{"is_enabled": False}, {"install_root": None}, {"trusted_keys": ()}],
    ids=["no-update", "no-launcher", "no-key"],
)
def test_updates_are_off_without_a_launcher_a_key_or_when_disabled(
    tmp_path: Path, overrides: dict[str, Any]
) -> None:
    assert not SelfUpdate(replace(_settings(tmp_path), **overrides)).is_updating


async def test_linked_agent_writes_its_health_marker_and_asks_for_a_restart(
    tmp_path: Path,
) -> None:
    gateway = Gateway()
    gateway.offer(tmp_path)
    self_update = SelfUpdate(_settings(tmp_path), transport=gateway.transport())
    link, stop = FakeLink(), asyncio.Event()
    self_update.start(link, stop)
    link.connected.set()
    await asyncio.wait_for(stop.wait(), 10)
    await self_update.aclose()
    assert self_update.restart_requested
    assert read_health_marker(tmp_path / "root" / "health") == os.getpid()
    assert InstallRoot(tmp_path / "root").pointer() == Pointer(NEWER, None, is_trial=True)


def test_settings_trust_the_pinned_keys_and_the_given_ones(tmp_path: Path) -> None:
    token_file = tmp_path / "rig.token"
    other = Ed25519PrivateKey.generate().public_key()
    save_release_keys(release_keys_file(token_file), [public_key_to_text(KEY.public_key())])
    settings = self_update_settings(
        GATEWAY,
        token_file,
        install_root=None,
        health_file=None,
        is_enabled=True,
        interval_s=60,
        extra_keys=[public_key_to_text(other)],
    )
    raw = [key.public_bytes_raw() for key in settings.trusted_keys]
    assert raw == [KEY.public_key().public_bytes_raw(), other.public_bytes_raw()]


def test_settings_refuse_a_given_key_that_is_no_key(tmp_path: Path) -> None:
    with pytest.raises(UpdateRefused, match="--release-key"):
        self_update_settings(
            GATEWAY,
            tmp_path / "rig.token",
            install_root=None,
            health_file=None,
            is_enabled=True,
            interval_s=60,
            extra_keys=["not-a-key"],
        )
