"""Recordings in the SDK: `record=True` on create, the zip as bytes from the handle or
`client.sessions`, sync and async; a session that did not record is a NotFoundError
with code `recording_not_found`."""

from __future__ import annotations

import httpx2
import pytest

from rigway.client import AsyncRigway, NotFoundError, Rigway

from .conftest import FakeGateway, body_of, error, ok, session_json

ZIP = b"PK\x03\x04 a zip"


def _zip_answer(request: httpx2.Request) -> httpx2.Response:
    return httpx2.Response(200, content=ZIP, headers={"Content-Type": "application/zip"})


def test_create_with_record_asks_for_a_recording(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    session_gateway.on("POST", "/v1/sessions", ok(session_json(record=True), 201))
    session = client.sessions.create(rig_id="rig_1", record=True)
    assert body_of(session_gateway.last) == {"rig_id": "rig_1", "record": True}
    assert session.info.record is True


def test_create_without_record_leaves_it_to_the_gateway(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    session = client.sessions.create(rig_id="rig_1")
    assert "record" not in body_of(session_gateway.last)
    assert session.info.record is False


def test_the_handle_reads_its_recording_as_bytes(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    session_gateway.on("GET", "/v1/sessions/ses_1/recording", _zip_answer)
    session = client.sessions.create(rig_id="rig_1", record=True)
    assert session.recording() == ZIP
    assert session_gateway.last.headers["accept"] == "application/zip"


def test_the_sessions_resource_reads_a_recording_by_id(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("GET", "/v1/sessions/ses_9/recording", _zip_answer)
    assert client.sessions.recording("ses_9") == ZIP


def test_a_session_that_did_not_record_is_not_found(client: Rigway, gateway: FakeGateway) -> None:
    answer = error(404, "recording_not_found: the session was not started with record: true")
    gateway.on("GET", "/v1/sessions/ses_1/recording", answer)
    with pytest.raises(NotFoundError) as raised:
        client.sessions.recording("ses_1")
    assert raised.value.code == "recording_not_found"


async def test_async_create_with_record_and_read_the_recording(
    async_client: AsyncRigway, session_gateway: FakeGateway
) -> None:
    session_gateway.on("GET", "/v1/sessions/ses_1/recording", _zip_answer)
    session = await async_client.sessions.create(rig_id="rig_1", record=True)
    assert body_of(session_gateway.requests[0]) == {"rig_id": "rig_1", "record": True}
    assert await session.recording() == ZIP
    assert await async_client.sessions.recording("ses_1") == ZIP
