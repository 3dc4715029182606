"""Viewer tokens: one connection each, one hour, this gateway's key, this session."""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import UTC, datetime, timedelta
from typing import TypedDict

import httpx2
import jwt
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from rigway.agent.backends.sim import SimDesktop
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.clock import FakeClock
from rigway.gateway.stream.service import signaling_url_for
from rigway.gateway.stream.tokens import TokenRejectedError, ViewerTokens
from tests.e2e.harness import Stack

# ---- the token rules, unit ----------------------------------------------------------


def test_a_token_carries_its_session_rig_and_hour() -> None:
    clock = FakeClock()
    tokens = ViewerTokens(clock.now)
    issued = tokens.issue("ses_1", "rig_1")
    claims = tokens.verify(issued.token)
    assert (claims.session_id, claims.rig_id) == ("ses_1", "rig_1")
    assert claims.expires_at == clock.now() + timedelta(hours=1)
    assert len(claims.jti) == 32
    assert tokens.issue("ses_1", "rig_1").claims.jti != claims.jti


def test_a_token_opens_one_connection_only() -> None:
    tokens = ViewerTokens(FakeClock().now)
    token = tokens.issue("ses_1", "rig_1").token
    tokens.verify(token)  # the viewer page looks without using it up
    tokens.consume(token)
    with pytest.raises(TokenRejectedError) as refused:
        tokens.consume(token)
    assert refused.value.reason == "token_used"


def test_a_token_expires_after_an_hour() -> None:
    clock = FakeClock()
    tokens = ViewerTokens(clock.now)
    token = tokens.issue("ses_1", "rig_1").token
    clock.advance(3599)
    tokens.verify(token)
    clock.advance(1)
    with pytest.raises(TokenRejectedError) as refused:
        tokens.verify(token)
    assert refused.value.reason == "token_expired"


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(
            lambda t, now: ViewerTokens(now).issue("ses_1", "rig_1").token, id="other-key"
        ),
        pytest.param(lambda t, now: _with_claim(t, "session_id", "ses_2"), id="edited-claims"),
        pytest.param(lambda t, now: _unsigned(t), id="alg-none"),
        pytest.param(
            lambda t, now: t[:-4] + ("AAAA" if t[-4:] != "AAAA" else "BBBB"), id="bad-mac"
        ),
        pytest.param(lambda t, now: "not.a.jwt", id="garbage"),
    ],
)
def test_a_forged_token_is_refused(forge: object) -> None:
    clock = FakeClock()
    tokens = ViewerTokens(clock.now)
    token = tokens.issue("ses_1", "rig_1").token
    assert callable(forge)
    with pytest.raises(TokenRejectedError) as refused:
        tokens.verify(forge(token, clock.now))
    assert refused.value.reason == "invalid_token"


def test_used_tokens_are_forgotten_once_expired() -> None:
    clock = FakeClock()
    tokens = ViewerTokens(clock.now)
    tokens.consume(tokens.issue("ses_1", "rig_1").token)
    clock.advance(3601)
    tokens.consume(tokens.issue("ses_1", "rig_1").token)
    assert len(tokens._used) == 1  # the memory stays bounded


def _segments(token: str) -> list[str]:
    return token.split(".")


def _b64(data: dict[str, object]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def _payload(token: str) -> dict[str, object]:
    segment = _segments(token)[1]
    decoded: dict[str, object] = json.loads(base64.urlsafe_b64decode(segment + "=="))
    return decoded


def _with_claim(token: str, name: str, value: str) -> str:
    header, _, signature = _segments(token)
    return f"{header}.{_b64({**_payload(token), name: value})}.{signature}"


def _unsigned(token: str) -> str:
    return f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(_payload(token))}."


# ---- the same rules at the signaling socket -------------------------------------------


async def _close_of(url: str) -> tuple[int | None, str | None]:
    """Open the socket and read until the gateway closes it."""
    async with connect(url, compression=None, open_timeout=10) as ws:
        try:
            async with asyncio.timeout(5):
                while True:
                    await ws.recv()
        except ConnectionClosed:
            pass
        return ws.close_code, ws.close_reason


class _Credentials(TypedDict):
    """The JSON body of `GET /v1/sessions/{id}/stream`."""

    signaling_url: str
    viewer_token: str
    rig_id: str
    session_id: str
    connect_url: str
    viewer_url: str
    expires_at: str
    ice_servers: list[dict[str, object]]


async def _credentials(stack: Stack, session_id: str) -> _Credentials:
    response = await stack.client.get(f"/v1/sessions/{session_id}/stream")
    assert response.status_code == 200, response.text
    body: _Credentials = response.json()
    return body


async def test_reused_expired_forged_and_foreign_tokens_are_refused(stream_stack: Stack) -> None:
    await stream_stack.add_agent(SimDesktop())
    await stream_stack.add_agent(SimDesktop())
    first = await stream_stack.start_session(0)
    second = await stream_stack.start_session(1)
    signal = signaling_url_for(stream_stack.base_url)

    # Reuse: the first connection uses the token up (it need not even offer).
    credentials = await _credentials(stream_stack, first)
    async with connect(credentials["connect_url"], compression=None) as ws:
        await ws.send(json.dumps({"type": "ping"}))
        assert json.loads(await ws.recv()) == {"type": "pong"}
    assert await _close_of(credentials["connect_url"]) == (4403, "token_used")

    # Expired: issued more than an hour ago.
    tokens = stream_stack.services.stream.tokens
    old = tokens.issue(first, stream_stack.rig_ids[0], now=datetime.now(UTC) - timedelta(hours=2))
    assert await _close_of(f"{signal}?token={old.token}") == (4401, "token_expired")

    # Forged: signed with a key that is not the gateway's, or no token at all.
    forged = ViewerTokens(lambda: datetime.now(UTC)).issue(first, stream_stack.rig_ids[0])
    assert await _close_of(f"{signal}?token={forged.token}") == (4401, "invalid_token")
    assert await _close_of(signal) == (4401, "invalid_token")

    # Another session's token: refused where this session is asked for.
    other = await _credentials(stream_stack, second)
    mismatch = f"{other['connect_url']}&session_id={first}"
    assert await _close_of(mismatch) == (4403, "token_session_mismatch")


async def test_a_token_of_an_ended_session_opens_nothing(stream_stack: Stack) -> None:
    await stream_stack.add_agent(SimDesktop())
    ended = await stream_stack.start_session()
    credentials = await _credentials(stream_stack, ended)
    assert (await stream_stack.client.delete(f"/v1/sessions/{ended}")).status_code == 200
    await stream_stack.start_session()  # the rig's next session
    assert await _close_of(credentials["connect_url"]) == (4410, "session_ended")


async def test_credentials_need_the_stream_scope(stream_stack: Stack) -> None:
    await stream_stack.add_agent(SimDesktop())
    session_id = await stream_stack.start_session()
    key = await stream_stack.services.keys.create(
        stream_stack.account_id, CreateKeyIn(name="no stream", scopes=["sessions", "input"])
    )
    async with httpx2.AsyncClient(
        base_url=stream_stack.base_url,
        headers={"Authorization": f"Bearer {key.secret}"},
        trust_env=False,
    ) as client:
        response = await client.get(f"/v1/sessions/{session_id}/stream")
    assert response.status_code == 403
    assert response.json()["error"].startswith("insufficient_scope")
    missing = await stream_stack.client.get("/v1/sessions/ses_nope/stream")
    assert missing.status_code == 404


async def test_credentials_name_the_signaling_socket_and_the_hour(stream_stack: Stack) -> None:
    await stream_stack.add_agent(SimDesktop())
    session_id = await stream_stack.start_session()
    body = await _credentials(stream_stack, session_id)
    ws_base = stream_stack.base_url.replace("http://", "ws://")
    assert body["signaling_url"] == f"{ws_base}/v1/stream/signal"
    assert body["connect_url"] == f"{body['signaling_url']}?token={body['viewer_token']}"
    assert (
        body["viewer_url"] == f"{stream_stack.base_url}/v1/stream/view?token={body['viewer_token']}"
    )
    assert body["session_id"] == session_id
    assert body["rig_id"] == stream_stack.rig_ids[0]
    assert body["ice_servers"] == []
    claims = jwt.decode(body["viewer_token"], options={"verify_signature": False})
    assert claims["session_id"] == session_id
    assert claims["rig_id"] == body["rig_id"]
    assert claims["exp"] - claims["iat"] == 3600
    expires_at = datetime.fromisoformat(body["expires_at"].replace("Z", "+00:00"))
    assert expires_at == datetime.fromtimestamp(claims["exp"], UTC)
