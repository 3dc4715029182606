"""A person's takeover page as a test drives it: an aiortc viewer on the takeover's
connect URL that pings every half second (as the page does every second) and sends the
page's input messages; and a stack whose agents stream on loopback only."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aioice.ice
import pytest
from websockets.asyncio.client import connect

from rigway.agent.stream import StreamSettings, aiortc_adaptation
from rigway.agent.stream.publisher import pin_host_addresses_to_loopback
from tests.e2e.harness import Stack, running_stack
from tests.stream.viewer import AiortcViewer

PING_INTERVAL_S = 0.5


class TakeoverPage(AiortcViewer):
    def __init__(self, connect_url: str) -> None:
        super().__init__(connect_url)
        self._pinging: asyncio.Task[None] | None = None

    async def take(self) -> dict[str, Any]:
        """Connect and offer; returns the message after the answer (`control`), or the
        error that refused the offer. Pings from then on."""
        reply = await self.start()
        if reply["type"] != "answer":
            return reply
        self._pinging = asyncio.create_task(self._ping())
        return await self.next_message()

    async def start_socket_only(self) -> None:
        """Connect and offer nothing (for a socket the gateway is to refuse)."""
        self._ws = await connect(self.connect_url, compression=None)

    async def send(self, message: dict[str, Any]) -> None:
        assert self._ws is not None
        await self._ws.send(json.dumps(message))

    async def next_of(self, kind: str, timeout_s: float = 10.0) -> dict[str, Any]:
        """The next message of type `kind` (pongs and others in between are skipped)."""
        async with asyncio.timeout(timeout_s):
            while True:
                message = await self.next_message(timeout_s)
                if message["type"] == kind:
                    return message

    def stop_pinging(self) -> None:
        if self._pinging is not None:
            self._pinging.cancel()

    async def close(self) -> None:
        self.stop_pinging()
        await super().close()

    async def _ping(self) -> None:
        with contextlib.suppress(Exception):
            while True:
                await self.send({"type": "ping"})
                await asyncio.sleep(PING_INTERVAL_S)


@contextlib.asynccontextmanager
async def streaming_stack(
    tmp_path: Path,
    database_url: str,
    monkeypatch: pytest.MonkeyPatch,
    *,
    keep_remote_candidates: bool = False,
) -> AsyncIterator[Stack]:
    """One sim rig whose agent streams on 127.0.0.1 only (aioice offers only it, to the
    test's aiortc viewers too); aiortc's own encoders put back after.

    `keep_remote_candidates`: the agent keeps a browser's candidates whatever their
    address. Chromium may offer none on loopback; with them dropped the agent's ICE
    hears end-of-candidates with nothing to pair, and the media then connects only when
    Chromium's first check (a peer-reflexive candidate) happens to arrive before it."""
    monkeypatch.setattr(aioice.ice, "get_host_addresses", aioice.ice.get_host_addresses)
    pin_host_addresses_to_loopback()
    try:
        async with running_stack(
            tmp_path / "state",
            database_url,
            reaper_interval_s=3600,
            agent_settings={
                "heartbeat_interval_s": 1.0,
                "session_grace_s": 1.0,
                "stream": StreamSettings(loopback_only=not keep_remote_candidates),
            },
        ) as running:
            yield running
    finally:
        aiortc_adaptation.uninstall()
