"""Starting a session: the rig chosen when none is named, and a busy rig's answer."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from rigway.client import (
    AmbiguousRigError,
    AsyncRigway,
    NoRigAvailableError,
    RigBusyError,
    Rigway,
)

from .conftest import FakeGateway, body_of, ok, session_json


def rig_json(rig_id: str, name: str, *, online: bool = True, api: bool = True) -> dict[str, Any]:
    return {"id": rig_id, "name": name, "online": online, "api_access_enabled": api}


def busy_answer(active_session_id: str | None) -> httpx2.Response:
    return httpx2.Response(
        409,
        json={
            "error": "rig_busy: the rig already has an active session",
            "active_session_id": active_session_id,
        },
    )


@pytest.fixture
def starting_gateway(session_gateway: FakeGateway) -> FakeGateway:
    session_gateway.on("POST", "/v1/sessions", lambda r: ok(session_json(**body_of(r)), 201))
    return session_gateway


def test_without_a_rig_the_only_online_api_enabled_rig_is_used(
    client: Rigway, starting_gateway: FakeGateway
) -> None:
    starting_gateway.on(
        "GET",
        "/v1/rigs",
        ok(
            {
                "rigs": [
                    rig_json("rig_off", "attic", online=False),
                    rig_json("rig_closed", "desk", api=False),
                    rig_json("rig_ok", "lab"),
                ]
            }
        ),
    )
    with client.sessions.create() as session:
        assert session.rig_id == "rig_ok"
    assert body_of(starting_gateway.calls("POST", "/v1/sessions")[0]) == {"rig_id": "rig_ok"}


def test_several_usable_rigs_raise_naming_each_and_start_nothing(
    client: Rigway, starting_gateway: FakeGateway
) -> None:
    starting_gateway.on(
        "GET",
        "/v1/rigs",
        ok({"rigs": [rig_json("rig_a", "lab"), rig_json("rig_b", "studio")]}),
    )
    with pytest.raises(AmbiguousRigError) as caught:
        client.sessions.create()
    message = str(caught.value)
    assert all(text in message for text in ("rig_a", "'lab'", "rig_b", "'studio'", "rig_id="))
    assert [rig.id for rig in caught.value.candidates] == ["rig_a", "rig_b"]
    assert caught.value.code == "ambiguous_rig"
    assert starting_gateway.calls("POST", "/v1/sessions") == []


def test_no_usable_rig_raises_naming_the_rigs_there_are(
    client: Rigway, starting_gateway: FakeGateway
) -> None:
    starting_gateway.on(
        "GET", "/v1/rigs", ok({"rigs": [rig_json("rig_off", "attic", online=False)]})
    )
    with pytest.raises(NoRigAvailableError, match=r"rig_off \('attic'\)") as caught:
        client.sessions.create()
    assert caught.value.code == "no_rig_available"
    assert starting_gateway.calls("POST", "/v1/sessions") == []


def test_an_account_without_rigs_is_told_how_to_get_one(
    client: Rigway, starting_gateway: FakeGateway
) -> None:
    starting_gateway.on("GET", "/v1/rigs", ok({"rigs": []}))
    with pytest.raises(NoRigAvailableError, match="rigway up"):
        client.sessions.create()


def test_a_named_rig_is_used_without_listing_rigs(
    client: Rigway, starting_gateway: FakeGateway
) -> None:
    with client.sessions.create(rig_id="rig_named") as session:
        assert session.rig_id == "rig_named"
    assert starting_gateway.calls("GET", "/v1/rigs") == []


async def test_async_create_without_a_rig_chooses_it_too(
    async_client: AsyncRigway, starting_gateway: FakeGateway
) -> None:
    starting_gateway.on("GET", "/v1/rigs", ok({"rigs": [rig_json("rig_ok", "lab")]}))
    async with async_client.sessions.create() as session:
        assert session.rig_id == "rig_ok"


async def test_async_create_with_several_rigs_raises(
    async_client: AsyncRigway, starting_gateway: FakeGateway
) -> None:
    starting_gateway.on(
        "GET", "/v1/rigs", ok({"rigs": [rig_json("rig_a", "a"), rig_json("rig_b", "b")]})
    )
    with pytest.raises(AmbiguousRigError):
        await async_client.sessions.create()


def test_rig_busy_names_the_active_session_and_how_to_end_it(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions", busy_answer("ses_holder"))
    with pytest.raises(RigBusyError) as caught:
        client.sessions.create(rig_id="rig_1")
    assert caught.value.active_session_id == "ses_holder"
    assert caught.value.code == "rig_busy"
    assert caught.value.status == 409
    assert "client.sessions.end('ses_holder')" in str(caught.value)


def test_rig_busy_without_a_session_id_still_reads_as_rig_busy(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions", busy_answer(None))
    with pytest.raises(RigBusyError) as caught:
        client.sessions.create(rig_id="rig_1")
    assert caught.value.active_session_id is None
    assert "sessions.end" not in str(caught.value)
