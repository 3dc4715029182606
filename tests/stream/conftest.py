"""A running stack whose agents stream on loopback only, with their publishers in
reach (captured where the runner builds them)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import aioice.ice
import pytest

from rigway.agent import runner
from rigway.agent.screen import ScreenService
from rigway.agent.stream import StreamControl, StreamSettings, aiortc_adaptation
from rigway.agent.stream.publisher import StreamPublisher, pin_host_addresses_to_loopback
from rigway.agent.worker import SerialWorker
from tests.e2e.harness import Stack, running_stack

# Media stays on 127.0.0.1: aioice offers only it, and the agent drops every other
# candidate of the viewer.
LOOPBACK = StreamSettings(loopback_only=True)


@pytest.fixture
def screen_worker() -> Iterator[SerialWorker]:
    worker = SerialWorker("test-screen")
    yield worker
    worker.shutdown(wait=True)


@pytest.fixture
def aiortc_encoders_restored() -> Iterator[None]:
    """A publisher installs its encoder into aiortc process-wide: aiortc's own again after."""
    yield
    aiortc_adaptation.uninstall()


@pytest.fixture
def loopback_media(monkeypatch: pytest.MonkeyPatch) -> None:
    """aioice offers 127.0.0.1 only, for the test's own aiortc viewers too; the no-op
    setting makes monkeypatch put aioice's lookup back after the test."""
    monkeypatch.setattr(aioice.ice, "get_host_addresses", aioice.ice.get_host_addresses)
    pin_host_addresses_to_loopback()


@pytest.fixture
def publishers(
    monkeypatch: pytest.MonkeyPatch, aiortc_encoders_restored: None, loopback_media: None
) -> list[StreamPublisher]:
    built: list[StreamPublisher] = []
    real_open = runner.open_streams

    def capture(settings: StreamSettings, screen: ScreenService) -> StreamControl | None:
        streams = real_open(settings, screen)
        assert isinstance(streams, StreamPublisher)
        built.append(streams)
        return streams

    monkeypatch.setattr(runner, "open_streams", capture)
    return built


@pytest.fixture
async def stream_stack(
    tmp_path: Path, database_url: str, publishers: list[StreamPublisher]
) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=0,
        reaper_interval_s=3600,
        agent_settings={"heartbeat_interval_s": 1.0, "session_grace_s": 1.0, "stream": LOOPBACK},
    ) as running:
        yield running
