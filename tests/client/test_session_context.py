"""The session context manager always ends the session and never masks the body's error."""

from __future__ import annotations

import httpx2
import pytest

from rigway.client import InternalServerError, Rigway

from .conftest import FakeGateway, error, ok, session_json

END = ("DELETE", "/v1/sessions/ses_1")


class BodyFailed(Exception):
    pass


def test_session_ends_on_normal_exit(client: Rigway, session_gateway: FakeGateway) -> None:
    with client.sessions.create(rig_id="rig_1") as session:
        session.key("enter")
    assert len(session_gateway.calls(*END)) == 1
    assert session.status == "ended"
    assert session.info.ended_reason == "client"


def test_session_ends_on_exception_and_the_exception_propagates(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    with pytest.raises(BodyFailed), client.sessions.create(rig_id="rig_1"):
        raise BodyFailed
    assert len(session_gateway.calls(*END)) == 1


@pytest.mark.parametrize("status", [410, 404])
def test_already_gone_session_does_not_mask_the_exception(
    client: Rigway, session_gateway: FakeGateway, status: int
) -> None:
    session_gateway.on(
        *END, error(status, "session_ended" if status == 410 else "session_not_found")
    )
    with pytest.raises(BodyFailed) as caught, client.sessions.create(rig_id="rig_1"):
        raise BodyFailed
    assert getattr(caught.value, "__notes__", []) == []


def test_failed_end_is_noted_on_the_original_exception(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    session_gateway.on(*END, error(503, "unavailable"))
    with pytest.raises(BodyFailed) as caught, client.sessions.create(rig_id="rig_1"):
        raise BodyFailed
    (note,) = caught.value.__notes__
    assert "ses_1" in note
    assert "unavailable" in note
    assert len(session_gateway.calls(*END)) == 3  # ending is idempotent, so it was retried


def test_unreachable_gateway_on_end_does_not_mask_the_exception(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    session_gateway.on(*END, httpx2.ConnectError("refused"))
    with pytest.raises(BodyFailed) as caught, client.sessions.create(rig_id="rig_1"):
        raise BodyFailed
    assert "connection failed" in caught.value.__notes__[0]


def test_ending_an_already_ended_session_after_a_clean_body_is_quiet(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    session_gateway.on(*END, error(410, "session_ended"))
    with client.sessions.create(rig_id="rig_1"):
        pass
    assert len(session_gateway.calls(*END)) == 1


def test_failed_end_after_a_clean_body_raises(client: Rigway, session_gateway: FakeGateway) -> None:
    session_gateway.on(*END, error(500, "internal_error"))
    with pytest.raises(InternalServerError), client.sessions.create(rig_id="rig_1"):
        pass


def test_keyboard_interrupt_still_ends_the_session(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    with pytest.raises(KeyboardInterrupt), client.sessions.create(rig_id="rig_1"):
        raise KeyboardInterrupt
    assert len(session_gateway.calls(*END)) == 1


def test_explicitly_ended_session_is_not_ended_again_on_exit(
    client: Rigway, gateway: FakeGateway
) -> None:
    final = session_json(status="ended", ended_reason="idle_timeout")
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    gateway.on(*END, ok(final))
    with client.sessions.create(rig_id="rig_1") as session:
        assert session.end().ended_reason == "idle_timeout"
    assert session.info.ended_reason == "idle_timeout"
    assert len(gateway.calls(*END)) == 1
