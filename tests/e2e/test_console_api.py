"""The console-token side of the API: keys, webhooks (with signed deliveries to a real
HTTPS receiver), rigs (rename, API access, unpair, wake), owner kill, tenant isolation."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trustme
from sqlalchemy import select

from rigway.agent.link import LinkAuthError
from rigway.gateway.clock import FakeClock
from rigway.gateway.db.models import Rig, Webhook
from rigway.webhooks import verify
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.gateway.webhooks.receiver import HttpsReceiver

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def ca_bundle(ca: trustme.CA, tmp_path: Path) -> str:
    path = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
async def receiver(ca: trustme.CA) -> AsyncIterator[HttpsReceiver]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    async with HttpsReceiver(context) as running:
        yield running


@pytest.fixture
def wake_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    sock.settimeout(5)
    return sock


@pytest.fixture
async def owner_stack(
    tmp_path: Path, database_url: str, ca_bundle: str, wake_socket: socket.socket
) -> AsyncIterator[Stack]:
    port = wake_socket.getsockname()[1]
    async with running_stack(
        tmp_path / "state",
        database_url,
        reaper_interval_s=3600,
        webhook_allow_private_targets=True,
        webhook_ca_bundle=ca_bundle,
        # No poll within a test's life: deliveries must come from the wake-up the
        # sessions service gives the dispatcher as it writes each event.
        webhook_poll_interval_s=3600,
        wake_broadcast=f"127.0.0.1:{port}",
        agent_settings=QUICK_AGENT,
    ) as running:
        yield running
    wake_socket.close()


def console(stack: Stack, account_id: str | None = None) -> httpx2.AsyncClient:
    identity = stack.services.identity
    assert identity is not None
    token = identity.issue("usr_test", account_id or stack.account_id)
    return httpx2.AsyncClient(
        base_url=stack.base_url, headers={"Authorization": f"Bearer {token}"}, trust_env=False
    )


async def test_sign_in_returns_a_working_console_token(owner_stack: Stack) -> None:
    identity = owner_stack.services.identity
    assert identity is not None
    await identity.create_user(owner_stack.account_id, "Owner@Example.com", "correct horse")
    signed = await owner_stack.client.post(
        "/v1/console/sign-in", json={"email": "owner@example.com", "password": "correct horse"}
    )
    assert signed.status_code == 200
    token = signed.json()["access_token"]
    keys = await owner_stack.client.get("/v1/keys", headers={"Authorization": f"Bearer {token}"})
    assert keys.status_code == 200


async def test_sign_in_with_a_wrong_password_is_refused(owner_stack: Stack) -> None:
    identity = owner_stack.services.identity
    assert identity is not None
    await identity.create_user(owner_stack.account_id, "owner@example.com", "correct horse")
    wrong = await owner_stack.client.post(
        "/v1/console/sign-in", json={"email": "owner@example.com", "password": "battery"}
    )
    unknown = await owner_stack.client.post(
        "/v1/console/sign-in", json={"email": "nobody@example.com", "password": "battery"}
    )
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()


async def test_api_key_is_refused_on_console_endpoints(owner_stack: Stack) -> None:
    for method, path in [("GET", "/v1/keys"), ("GET", "/v1/webhooks"), ("POST", "/v1/keys")]:
        response = await owner_stack.client.request(method, path, json={})
        assert response.status_code == 401
        assert response.json()["error"].startswith("invalid_console_token")


async def test_created_key_is_shown_once_and_revocation_is_immediate(owner_stack: Stack) -> None:
    async with console(owner_stack) as owner:
        created = await owner.post("/v1/keys", json={"name": "ci", "environment": "test"})
        assert created.status_code == 201
        secret = created.json()["secret"]
        assert secret.startswith("rgw_test_sk_")
        listed = (await owner.get("/v1/keys")).json()["keys"]
        assert all("secret" not in key for key in listed)
        assert secret[:20] in [key["key_prefix"] for key in listed]
        headers = {"Authorization": f"Bearer {secret}"}
        assert (await owner_stack.client.get("/v1/rigs", headers=headers)).status_code == 200
        revoked = await owner.delete(f"/v1/keys/{created.json()['id']}")
        assert revoked.status_code == 200
        after = await owner_stack.client.get("/v1/rigs", headers=headers)
        assert after.status_code == 401


async def test_fifty_first_active_key_is_refused_with_key_limit_reached(
    owner_stack: Stack,
) -> None:
    async with console(owner_stack) as owner:
        for index in range(49):  # beside the stack's own key
            created = await owner.post("/v1/keys", json={"name": f"k{index}"})
            assert created.status_code == 201, created.text
        refused = await owner.post("/v1/keys", json={"name": "one too many"})
        listed = (await owner.get("/v1/keys")).json()["keys"]
    assert refused.status_code == 409
    assert refused.json()["error"].startswith("key_limit_reached: ")
    assert len(listed) == 50
    assert "one too many" not in [key["name"] for key in listed]


async def test_revoked_keys_do_not_count_toward_the_key_limit(owner_stack: Stack) -> None:
    async with console(owner_stack) as owner:
        for index in range(49):
            assert (await owner.post("/v1/keys", json={"name": f"k{index}"})).status_code == 201
        revoked = (await owner.get("/v1/keys")).json()["keys"][-1]["id"]
        assert (await owner.delete(f"/v1/keys/{revoked}")).status_code == 200
        created = await owner.post("/v1/keys", json={"name": "in its place"})
    assert created.status_code == 201, created.text


async def test_narrowed_key_scopes_are_enforced(owner_stack: Stack) -> None:
    async with console(owner_stack) as owner:
        created = await owner.post("/v1/keys", json={"scopes": ["rigs:read"]})
    headers = {"Authorization": f"Bearer {created.json()['secret']}"}
    rigs = await owner_stack.client.get("/v1/rigs", headers=headers)
    start = await owner_stack.client.post(
        "/v1/sessions", json={"rig_id": owner_stack.rig_ids[0]}, headers=headers
    )
    assert rigs.status_code == 200
    assert start.status_code == 403
    assert start.json()["error"].startswith("insufficient_scope")


async def test_webhook_secret_is_shown_once_and_sealed_at_rest(
    owner_stack: Stack, receiver: HttpsReceiver
) -> None:
    async with console(owner_stack) as owner:
        created = await owner.post(
            "/v1/webhooks", json={"url": f"https://localhost:{receiver.port}/hook"}
        )
        assert created.status_code == 201, created.text
        secret = created.json()["webhook"]["secret"]
        assert secret.startswith("whsec_")
        assert sorted(created.json()["webhook"]["events"]) == ["session.ended", "session.started"]
        listed = (await owner.get("/v1/webhooks")).json()["webhooks"]
    assert "secret" not in listed[0]
    async with owner_stack.services.db() as db:
        stored = (await db.scalars(select(Webhook))).one()
    assert secret not in stored.secret_encrypted


async def test_sixth_webhook_is_refused_with_webhook_limit(
    owner_stack: Stack, receiver: HttpsReceiver
) -> None:
    async with console(owner_stack) as owner:
        url = f"https://localhost:{receiver.port}/hook"
        for _ in range(5):
            assert (await owner.post("/v1/webhooks", json={"url": url})).status_code == 201
        sixth = await owner.post("/v1/webhooks", json={"url": url})
    assert sixth.status_code == 409
    assert sixth.json()["error"].startswith("webhook_limit")


@pytest.mark.parametrize(
    "url",
    [
        "https://169.254.169.254/latest/meta-data",
        "https://metadata.google.internal/",
        "https://[fd00:ec2::254]/",
        "ftp://localhost/hook",
        "https://user:pw@localhost/hook",
    ],
)
async def test_unsafe_webhook_url_is_refused_at_creation(owner_stack: Stack, url: str) -> None:
    async with console(owner_stack) as owner:
        response = await owner.post("/v1/webhooks", json={"url": url})
    assert response.status_code == 400
    assert response.json()["error"].startswith("invalid_request: webhook url")


async def test_private_target_is_refused_without_the_development_setting(
    tmp_path: Path, database_url: str
) -> None:
    async with (
        running_stack(tmp_path / "state", database_url, rigs=0) as stack,
        console(stack) as owner,
    ):
        # Plain http is allowed only with the development setting, for local receivers.
        for url in [
            "https://127.0.0.1/h",
            "https://10.0.0.1/h",
            "https://localhost/h",
            "http://93.184.216.34/h",
        ]:
            response = await owner.post("/v1/webhooks", json={"url": url})
            assert response.status_code == 400, url


async def test_session_events_arrive_once_each_signed_and_verifiable(
    owner_stack: Stack, receiver: HttpsReceiver
) -> None:
    async with console(owner_stack) as owner:
        created = await owner.post(
            "/v1/webhooks", json={"url": f"https://localhost:{receiver.port}/hook"}
        )
        secret = created.json()["webhook"]["secret"]
        session_id = await owner_stack.start_session()
        await owner_stack.client.delete(f"/v1/sessions/{session_id}")
        await owner_stack.wait_until(lambda: len(receiver.requests) >= 2)
        await owner_stack.services.webhook_dispatcher.wait_idle()
        status = (await owner.get("/v1/webhooks")).json()["webhooks"][0]
    payloads = [verify(r.body, r.headers, secret) for r in receiver.requests]
    assert sorted(p["type"] for p in payloads) == ["session.ended", "session.started"]
    ended = next(p for p in payloads if p["type"] == "session.ended")
    assert ended["data"]["session_id"] == session_id
    assert ended["data"]["ended_reason"] == "client"
    assert ended["data"]["billed_minutes"] == 1
    for request, payload in zip(receiver.requests, payloads, strict=True):
        assert request.headers["X-Service-Delivery"] == payload["id"]
        assert request.headers["X-Service-Event"] == payload["type"]
    assert status["last_status"] == 204
    assert status["last_error"] is None


async def test_disabled_webhook_receives_nothing(
    owner_stack: Stack, receiver: HttpsReceiver
) -> None:
    async with console(owner_stack) as owner:
        created = await owner.post(
            "/v1/webhooks", json={"url": f"https://localhost:{receiver.port}/hook"}
        )
        webhook_id = created.json()["webhook"]["id"]
        patched = await owner.patch(f"/v1/webhooks/{webhook_id}", json={"enabled": False})
        assert patched.json()["enabled"] is False
        session_id = await owner_stack.start_session()
        await owner_stack.client.delete(f"/v1/sessions/{session_id}")
    await owner_stack.services.webhook_dispatcher.drain_once()
    await owner_stack.services.webhook_dispatcher.wait_idle()
    assert receiver.requests == []


async def test_owner_kill_ends_session_and_the_api_gets_410(
    owner_stack: Stack, receiver: HttpsReceiver
) -> None:
    async with console(owner_stack) as owner:
        await owner.post("/v1/webhooks", json={"url": f"https://localhost:{receiver.port}/h"})
        session_id = await owner_stack.start_session()
        listed = (await owner.get("/v1/sessions")).json()["sessions"]
        assert [s["session_id"] for s in listed] == [session_id]
        killed = await owner.post(f"/v1/sessions/{session_id}/kill")
    assert killed.json()["ended_reason"] == "owner_kill"
    shot = await owner_stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    assert shot.status_code == 410
    await owner_stack.wait_until(lambda: len(receiver.requests) >= 2)
    ended = [json.loads(r.body) for r in receiver.requests if b"session.ended" in r.body]
    assert [e["data"]["ended_reason"] for e in ended] == ["owner_kill"]


async def test_unpair_ends_session_unpaired_and_the_token_stops_working(
    owner_stack: Stack,
) -> None:
    session_id = await owner_stack.start_session()
    rig_id = owner_stack.rig_ids[0]
    async with console(owner_stack) as owner:
        unpaired = await owner.delete(f"/v1/rigs/{rig_id}")
    assert unpaired.status_code == 200
    session = await owner_stack.client.get(f"/v1/sessions/{session_id}")
    assert session.json()["ended_reason"] == "unpaired"
    assert (await owner_stack.client.get(f"/v1/rigs/{rig_id}")).status_code == 404
    agent = owner_stack.agents[0]
    with pytest.raises(LinkAuthError, match="4401"):
        await asyncio.wait_for(asyncio.shield(agent.task), timeout=10)
    assert owner_stack.services.registry.is_online(rig_id) is False


async def test_rename_and_api_access_toggle(owner_stack: Stack) -> None:
    rig_id = owner_stack.rig_ids[0]
    async with console(owner_stack) as owner:
        patched = await owner.patch(
            f"/v1/rigs/{rig_id}", json={"name": "desk", "api_access_enabled": False}
        )
    assert (patched.json()["name"], patched.json()["api_access_enabled"]) == ("desk", False)
    start = await owner_stack.client.post("/v1/sessions", json={"rig_id": rig_id})
    assert start.status_code == 403


async def _set_rig(stack: Stack, rig_id: str, **values: Any) -> None:
    async with stack.services.db.begin() as db:
        rig = (await db.scalars(select(Rig).where(Rig.id == rig_id))).one()
        for name, value in values.items():
            setattr(rig, name, value)


async def test_wake_of_online_rig_says_already_online(owner_stack: Stack) -> None:
    response = await owner_stack.client.post(f"/v1/rigs/{owner_stack.rig_ids[0]}/wake")
    assert response.status_code == 200
    assert response.json()["already_online"] is True


async def test_wake_without_mac_is_409_wake_unavailable(owner_stack: Stack) -> None:
    rig_id = owner_stack.rig_ids[0]
    await owner_stack.stop_agent(rig_id)
    response = await owner_stack.client.post(f"/v1/rigs/{rig_id}/wake")
    assert response.status_code == 409
    assert response.json()["error"].startswith("wake_unavailable")


async def test_wake_from_gateway_sends_the_magic_packet(
    owner_stack: Stack, wake_socket: socket.socket
) -> None:
    rig_id = owner_stack.rig_ids[0]
    await owner_stack.stop_agent(rig_id)
    await _set_rig(owner_stack, rig_id, mac="52:54:00:12:34:56", lan="192.0.2.0/24")
    response = await owner_stack.client.post(f"/v1/rigs/{rig_id}/wake")
    assert response.status_code == 202
    assert response.json() == {
        "ok": True,
        "rig_id": rig_id,
        "via": "gateway",
        "already_online": False,
    }
    packet = await asyncio.to_thread(wake_socket.recv, 1024)
    assert packet == b"\xff" * 6 + bytes.fromhex("525400123456") * 16


async def test_wake_goes_through_an_online_rig_on_the_same_lan(
    owner_stack: Stack, wake_socket: socket.socket
) -> None:
    sleeper = owner_stack.rig_ids[0]
    neighbour = await owner_stack.add_agent()
    await owner_stack.stop_agent(sleeper)
    await _set_rig(owner_stack, sleeper, mac="52:54:00:aa:bb:cc", lan="192.0.2.0/24")
    await _set_rig(owner_stack, neighbour, lan="192.0.2.0/24")
    response = await owner_stack.client.post(f"/v1/rigs/{sleeper}/wake")
    assert response.status_code == 202
    assert response.json()["via"] == neighbour
    packet = await asyncio.to_thread(wake_socket.recv, 1024)
    assert packet[6:12] == bytes.fromhex("525400aabbcc")


async def test_other_accounts_ids_are_404_on_every_console_endpoint(
    owner_stack: Stack, receiver: HttpsReceiver
) -> None:
    session_id = await owner_stack.start_session()
    rig_id = owner_stack.rig_ids[0]
    async with console(owner_stack) as owner:
        key_id = (await owner.get("/v1/keys")).json()["keys"][0]["id"]
        hook = await owner.post(
            "/v1/webhooks", json={"url": f"https://localhost:{receiver.port}/h"}
        )
        webhook_id = hook.json()["webhook"]["id"]
    intruder_account = await owner_stack.services.accounts.create("intruder")
    async with console(owner_stack, intruder_account) as intruder:
        attempts = [
            await intruder.delete(f"/v1/keys/{key_id}"),
            await intruder.patch(f"/v1/webhooks/{webhook_id}", json={"enabled": False}),
            await intruder.delete(f"/v1/webhooks/{webhook_id}"),
            await intruder.patch(f"/v1/rigs/{rig_id}", json={"name": "mine"}),
            await intruder.delete(f"/v1/rigs/{rig_id}"),
            await intruder.post(f"/v1/sessions/{session_id}/kill"),
        ]
        listings = [
            (await intruder.get("/v1/keys")).json()["keys"],
            (await intruder.get("/v1/webhooks")).json()["webhooks"],
            (await intruder.get("/v1/sessions")).json()["sessions"],
        ]
    assert [a.status_code for a in attempts] == [404] * 6
    assert listings == [[], [], []]
    still = await owner_stack.client.get(f"/v1/sessions/{session_id}")
    assert still.json()["status"] == "active"


async def test_password_guessing_is_rate_limited_per_email(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(tmp_path / "state", database_url, rigs=0, clock=FakeClock()) as stack:
        identity = stack.services.identity
        assert identity is not None
        await identity.create_user(stack.account_id, "owner@example.com", "correct horse")
        statuses = []
        for _ in range(11):
            attempt = await stack.client.post(
                "/v1/console/sign-in", json={"email": "owner@example.com", "password": "guess"}
            )
            statuses.append(attempt.status_code)
    assert statuses == [401] * 10 + [429]
    assert attempt.headers["Retry-After"] == "61"


async def test_trying_many_emails_from_one_address_is_rate_limited(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=0,
        clock=FakeClock(),
        sign_in_rate_limit_per_address="5/minute",
    ) as stack:
        statuses = []
        for index in range(6):
            attempt = await stack.client.post(
                "/v1/console/sign-in",
                json={"email": f"user{index}@example.com", "password": "guess"},
            )
            statuses.append(attempt.status_code)
    assert statuses == [401] * 5 + [429]
    assert attempt.json()["error"].startswith("rate_limited: ")
    assert attempt.headers["RateLimit-Limit"] == "5"
    assert attempt.headers["Retry-After"] == "61"


async def test_pairing_code_works_once(owner_stack: Stack) -> None:
    async with console(owner_stack) as owner:
        code = (await owner.post("/v1/rigs/pairing-codes")).json()["code"]
    body = {"code": code, "name": "desk", "os": "test-os", "gpu": ""}
    first = await owner_stack.client.post("/v1/agent/pair", json=body)
    again = await owner_stack.client.post("/v1/agent/pair", json=body)
    assert first.status_code == 201
    assert first.json()["rig_token"].startswith("rgwr_")
    assert again.status_code == 400
    assert again.json()["error"].startswith("invalid_request: pairing code")


async def test_expired_pairing_code_is_refused(tmp_path: Path, database_url: str) -> None:
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, pairing_code_ttl_s=0.0
    ) as stack:
        code = await stack.services.rigs.create_pairing_code(stack.account_id)
        body = {"code": code.code, "name": "desk"}
        refused = await stack.client.post("/v1/agent/pair", json=body)
    assert refused.status_code == 400
