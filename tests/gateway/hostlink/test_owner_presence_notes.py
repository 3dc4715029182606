"""The gateway keeps whether each connected host's owner uses its own input: "not
active" at connect, then each `owner/presence` note; a note it cannot read changes
nothing and keeps the link up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rigway.gateway.hostlink.connection import HostConnection
from rigway.protocol import encode_text, ops
from tests.gateway.hostlink.host_sockets import HearingHostSocket, host_connection


def _note(body: dict[str, Any]) -> str:
    return encode_text({"t": "note", "op": ops.OWNER_PRESENCE, "body": body})


@pytest.fixture
async def served() -> AsyncIterator[tuple[HearingHostSocket, HostConnection]]:
    socket = HearingHostSocket()
    connection = host_connection(socket, "normal")
    serving = asyncio.create_task(connection.serve())
    yield socket, connection
    await connection.close()
    await serving


def test_a_connection_starts_not_active() -> None:
    assert host_connection(HearingHostSocket(), "normal").owner_active is False


async def test_notes_set_and_clear_it(served: tuple[HearingHostSocket, HostConnection]) -> None:
    socket, connection = served
    await socket.deliver(_note({"active": True}))
    assert connection.owner_active is True
    await socket.deliver(_note({"active": False}))
    assert connection.owner_active is False


async def test_a_note_it_cannot_read_is_dropped(
    served: tuple[HearingHostSocket, HostConnection],
) -> None:
    socket, connection = served
    await socket.deliver(_note({"active": "very"}))
    assert (connection.owner_active, connection.is_open) == (False, True)
