"""`SessionHandle.takeover()`: one POST, a typed link back; a 409 human_in_control
while a person drives is a ConflictError with that code."""

from __future__ import annotations

import httpx2
import pytest

from rigway.client import ConflictError, Rigway, SessionHandle, Takeover

from .conftest import FakeGateway, ok

LINK = {
    "connect_url": "ws://g/v1/takeover/signal?token=t",
    "viewer_url": "http://g/v1/takeover/view?token=t",
    "expires_at": "2026-11-22T11:00:00Z",
}


@pytest.fixture
def session(client: Rigway, session_gateway: FakeGateway) -> SessionHandle:
    return client.sessions.create(rig_id="rig_1")


def test_takeover_posts_and_returns_the_link(session: SessionHandle, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/sessions/ses_1/takeover", ok(LINK, status=201))
    link = session.takeover()
    assert isinstance(link, Takeover)
    assert link.viewer_url == "http://g/v1/takeover/view?token=t"
    assert link.connect_url == "ws://g/v1/takeover/signal?token=t"
    assert link.expires_at is not None
    assert gateway.last.method == "POST"


def test_a_second_takeover_is_a_conflict_with_its_code(
    session: SessionHandle, gateway: FakeGateway
) -> None:
    refused = httpx2.Response(409, json={"error": "human_in_control: a person took control"})
    gateway.on("POST", "/v1/sessions/ses_1/takeover", refused)
    with pytest.raises(ConflictError) as raised:
        session.takeover()
    assert raised.value.code == "human_in_control"
