"""The gateway keeps each connected host's latest monitors: the hello's, then each
`desktop/displays` note; a note it cannot read changes nothing and keeps the link up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rigway.gateway.hostlink.connection import HostConnection
from rigway.protocol import encode_text
from rigway.protocol.displays import DESKTOP_DISPLAYS, MAX_DISPLAYS, DisplayInfo
from tests.gateway.hostlink.host_sockets import HearingHostSocket, host_connection

LEFT: dict[str, Any] = {"x": -1920, "y": 0, "width": 1920, "height": 1080, "scale": 1.5}
MAIN: dict[str, Any] = {"x": 0, "y": 0, "width": 8, "height": 8, "primary": True}


def _note(body: dict[str, Any]) -> str:
    return encode_text({"t": "note", "op": DESKTOP_DISPLAYS, "body": body})


@pytest.fixture
async def served() -> AsyncIterator[tuple[HearingHostSocket, HostConnection]]:
    socket = HearingHostSocket()
    connection = host_connection(socket)
    serving = asyncio.create_task(connection.serve())
    yield socket, connection  # deliver() waits for the connection to take each message
    await connection.close()
    await serving


def test_hello_without_displays_has_none() -> None:
    assert host_connection(HearingHostSocket()).displays == []


async def test_a_displays_note_replaces_the_displays(
    served: tuple[HearingHostSocket, HostConnection],
) -> None:
    socket, connection = served
    await socket.deliver(_note({"displays": [MAIN, LEFT]}))
    assert connection.displays == [DisplayInfo(**MAIN), DisplayInfo(**LEFT)]


async def test_a_note_with_too_many_displays_is_dropped(
    served: tuple[HearingHostSocket, HostConnection],
) -> None:
    socket, connection = served
    await socket.deliver(_note({"displays": [MAIN] * (MAX_DISPLAYS + 1)}))
    assert (connection.displays, connection.is_open) == ([], True)
