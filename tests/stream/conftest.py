"""A running stack whose agents stream on loopback only, with their publishers in
reach (captured where the runner builds them)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aioice.ice
import aiortc.codecs.h264 as aiortc_h264
import pytest

from rigway.agent import runner
from rigway.agent.screen import ScreenService
from rigway.agent.stream import StreamControl, StreamSettings
from rigway.agent.stream.publisher import StreamPublisher, pin_host_addresses_to_loopback
from tests.e2e.harness import Stack, running_stack

# Media stays on 127.0.0.1: aioice offers only it, and the agent drops every other
# candidate of the viewer.
LOOPBACK = StreamSettings(loopback_only=True)


@pytest.fixture
def publishers(monkeypatch: pytest.MonkeyPatch) -> list[StreamPublisher]:
    built: list[StreamPublisher] = []
    real_open = runner.open_streams

    def capture(settings: StreamSettings, screen: ScreenService) -> StreamControl | None:
        streams = real_open(settings, screen)
        assert isinstance(streams, StreamPublisher)
        built.append(streams)
        return streams

    monkeypatch.setattr(runner, "open_streams", capture)
    # The publisher patches aioice and aiortc's encoder module process-wide; these
    # no-op settings make monkeypatch put the originals back after the test.
    monkeypatch.setattr(aioice.ice, "get_host_addresses", aioice.ice.get_host_addresses)
    for name in ("av", "MIN_BITRATE", "DEFAULT_BITRATE", "MAX_BITRATE", "MAX_FRAME_RATE"):
        monkeypatch.setattr(aiortc_h264, name, getattr(aiortc_h264, name))
    # The test's own aiortc viewers offer 127.0.0.1 too.
    pin_host_addresses_to_loopback()
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
