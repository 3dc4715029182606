"""RigwayConsole: console-token endpoints (keys, webhooks, rigs, sessions)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from rigway.client import AsyncRigwayConsole, AuthenticationError, RigwayConsole

from .conftest import BASE_URL, FakeGateway, FakeSleep, body_of, error, ok, session_json

TOKEN = "console.jwt.token"
KEY = {
    "id": "6f1c…",
    "name": "ci",
    "key_prefix": "rgw_live_sk_0123abcd",
    "environment": "live",
    "scopes": ["rigs:read", "sessions"],
    "created_at": "2026-11-22T10:00:00Z",
    "last_used_at": None,
}
HOOK = {
    "id": "wh-1",
    "url": "https://example.com/hook",
    "events": ["session.ended"],
    "enabled": True,
    "created_at": "2026-11-22T10:00:00Z",
    "last_delivery_at": None,
    "last_status": None,
    "last_error": None,
}
RIG = {"id": "rig_1", "name": "Desk", "online": True, "api_access_enabled": True}


@pytest.fixture
def console(gateway: FakeGateway, sleeps: FakeSleep) -> Iterator[RigwayConsole]:
    with RigwayConsole(
        TOKEN, BASE_URL, transport=httpx2.MockTransport(gateway), sleep=sleeps, jitter=lambda: 0.0
    ) as client:
        yield client


def test_console_sends_the_console_token(console: RigwayConsole, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/keys", ok({"keys": [KEY]}))
    keys = console.keys.list()
    assert gateway.last.headers["Authorization"] == f"Bearer {TOKEN}"
    assert keys[0].key_prefix == "rgw_live_sk_0123abcd"


def test_keys_create_and_revoke(console: RigwayConsole, gateway: FakeGateway) -> None:
    secret = "rgw_test_sk_" + "a" * 48
    gateway.on("POST", "/v1/keys", ok({**KEY, "environment": "test", "secret": secret}, 201))
    gateway.on("DELETE", "/v1/keys/6f1c%E2%80%A6", ok(KEY))
    created = console.keys.create("ci", environment="test", scopes=["input"])
    assert body_of(gateway.last) == {"name": "ci", "environment": "test", "scopes": ["input"]}
    assert created.secret == secret
    assert secret not in repr(created)
    console.keys.create("bare")
    assert body_of(gateway.last) == {"name": "bare"}
    revoked = console.keys.revoke("6f1c…")
    assert revoked is not None
    assert revoked.key_prefix == KEY["key_prefix"]
    assert gateway.last.method == "DELETE"


def test_keys_create_accepts_an_enveloped_answer(
    console: RigwayConsole, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/keys", ok({"key": KEY, "secret": "rgw_live_sk_x"}, 201))
    assert console.keys.create("ci").secret == "rgw_live_sk_x"


def test_webhooks_crud(console: RigwayConsole, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/webhooks", ok({"webhooks": [HOOK]}))
    gateway.on(
        "POST",
        "/v1/webhooks",
        ok({"webhook": {**HOOK, "secret": "whsec_abc"}, "warning": "store it"}, 201),
    )
    gateway.on("PATCH", "/v1/webhooks/wh-1", ok({**HOOK, "enabled": False}))
    gateway.on("DELETE", "/v1/webhooks/wh-1", ok({"ok": True}))  # no record: tolerated
    assert console.webhooks.list()[0].url == "https://example.com/hook"
    created = console.webhooks.create("https://example.com/hook", events=["session.ended"])
    assert body_of(gateway.last) == {"url": "https://example.com/hook", "events": ["session.ended"]}
    assert (created.secret, created.warning) == ("whsec_abc", "store it")
    console.webhooks.create("https://example.com/other")
    assert body_of(gateway.last) == {"url": "https://example.com/other"}
    assert console.webhooks.update("wh-1", enabled=False).enabled is False
    assert body_of(gateway.last) == {"enabled": False}
    assert console.webhooks.delete("wh-1") is None
    assert gateway.last.method == "DELETE"


def test_rigs_update_unpair_and_pairing_code(console: RigwayConsole, gateway: FakeGateway) -> None:
    gateway.on("PATCH", "/v1/rigs/rig_1", ok({**RIG, "api_access_enabled": False}))
    gateway.on("DELETE", "/v1/rigs/rig_1", ok({**RIG, "online": False}))
    gateway.on(
        "POST",
        "/v1/rigs/pairing-codes",
        ok({"code": "ABCD-1234", "expires_at": "2026-11-22T10:10:00Z"}, 201),
    )
    assert console.rigs.update("rig_1", api_access_enabled=False).api_access_enabled is False
    assert body_of(gateway.last) == {"api_access_enabled": False}
    console.rigs.update("rig_1", name="Studio")
    assert body_of(gateway.last) == {"name": "Studio"}
    unpaired = console.rigs.unpair("rig_1")
    assert unpaired is not None
    assert unpaired.online is False
    assert console.rigs.create_pairing_code().code == "ABCD-1234"


def test_rigs_update_sends_only_the_owner_controls_given(
    console: RigwayConsole, gateway: FakeGateway
) -> None:
    controls = {"app_mode_only": True, "owner_idle_s": 0, "recordings_allowed": False}
    gateway.on("PATCH", "/v1/rigs/rig_1", ok({**RIG, **controls}))
    rig = console.rigs.update("rig_1", app_mode_only=True, owner_idle_s=0, recordings_allowed=False)
    assert body_of(gateway.last) == controls
    assert (rig.app_mode_only, rig.owner_idle_s, rig.recordings_allowed) == (True, 0, False)
    console.rigs.update("rig_1", owner_idle_s=30)
    assert body_of(gateway.last) == {"owner_idle_s": 30}


def test_sessions_list_and_owner_kill(console: RigwayConsole, gateway: FakeGateway) -> None:
    gateway.on(
        "GET", "/v1/sessions", ok({"sessions": [session_json(), session_json(session_id="ses_2")]})
    )
    gateway.on(
        "POST",
        "/v1/sessions/ses_1/kill",
        ok(session_json(status="ended", ended_reason="owner_kill")),
    )
    assert len(console.sessions.list()) == 2
    assert console.sessions.kill("ses_1").ended_reason == "owner_kill"


def test_api_key_on_console_endpoint_is_an_authentication_error(
    console: RigwayConsole, gateway: FakeGateway
) -> None:
    gateway.on("GET", "/v1/webhooks", error(401, "invalid_console_token"))
    with pytest.raises(AuthenticationError) as caught:
        console.webhooks.list()
    assert caught.value.code == "invalid_console_token"
    assert len(gateway.requests) == 1


def test_console_token_from_environment(
    monkeypatch: pytest.MonkeyPatch, gateway: FakeGateway
) -> None:
    monkeypatch.setenv("RIGWAY_CONSOLE_TOKEN", "env.jwt")
    gateway.on("GET", "/v1/keys", ok({"keys": []}))
    with RigwayConsole(base_url=BASE_URL, transport=httpx2.MockTransport(gateway)) as console:
        console.keys.list()
    assert gateway.last.headers["Authorization"] == "Bearer env.jwt"


async def test_async_console_parity(gateway: FakeGateway) -> None:
    gateway.on(
        "POST",
        "/v1/sessions/ses_1/kill",
        ok(session_json(status="ended", ended_reason="owner_kill")),
    )
    gateway.on("PATCH", "/v1/webhooks/wh-1", ok({"webhook": HOOK}))
    async with AsyncRigwayConsole(
        TOKEN, BASE_URL, transport=httpx2.MockTransport(gateway)
    ) as console:
        assert (await console.sessions.kill("ses_1")).status == "ended"
        assert (await console.webhooks.update("wh-1", events=["session.started"])).id == "wh-1"
        assert body_of(gateway.last) == {"events": ["session.started"]}


async def test_async_rigs_update_sends_the_owner_controls(gateway: FakeGateway) -> None:
    gateway.on("PATCH", "/v1/rigs/rig_1", ok({**RIG, "app_mode_only": True}))
    async with AsyncRigwayConsole(
        TOKEN, BASE_URL, transport=httpx2.MockTransport(gateway)
    ) as console:
        rig = await console.rigs.update("rig_1", app_mode_only=True)
    assert body_of(gateway.last) == {"app_mode_only": True}
    assert (rig.app_mode_only, rig.owner_idle_s, rig.recordings_allowed) == (True, 10, True)
