"""The gateway keeps each connected host's latest desktop state: the hello's, then each
`desktop/state` note; a note it cannot read changes nothing and keeps the link up."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from rigway.gateway.hostlink.connection import HostConnection
from rigway.protocol import encode_text, ops
from tests.gateway.hostlink.host_sockets import HearingHostSocket, host_connection


def _note(op: str, body: dict[str, Any]) -> str:
    return encode_text({"t": "note", "op": op, "body": body})


@pytest.fixture
async def served() -> AsyncIterator[tuple[HearingHostSocket, HostConnection]]:
    socket = HearingHostSocket()
    connection = host_connection(socket, "normal")
    serving = asyncio.create_task(connection.serve())
    yield socket, connection  # deliver() waits for the connection to take each message
    await connection.close()
    await serving


def test_hello_state_is_the_first_state() -> None:
    assert host_connection(HearingHostSocket(), "screensaver").desktop_state == "screensaver"


def test_hello_without_a_state_reads_unknown() -> None:
    assert host_connection(HearingHostSocket(), None).desktop_state == "unknown"


async def test_a_state_note_replaces_the_state(
    served: tuple[HearingHostSocket, HostConnection],
) -> None:
    socket, connection = served
    await socket.deliver(_note(ops.DESKTOP_STATE, {"state": "locked"}))
    assert connection.desktop_state == "locked"


async def test_a_note_naming_no_known_state_is_dropped(
    served: tuple[HearingHostSocket, HostConnection],
) -> None:
    socket, connection = served
    await socket.deliver(_note(ops.DESKTOP_STATE, {"state": "asleep"}))
    assert (connection.desktop_state, connection.is_open) == ("normal", True)


async def test_a_note_of_an_unknown_op_is_ignored(
    served: tuple[HearingHostSocket, HostConnection],
) -> None:
    socket, connection = served
    await socket.deliver(_note("desktop/weather", {"state": "locked"}))
    assert (connection.desktop_state, connection.is_open) == ("normal", True)
