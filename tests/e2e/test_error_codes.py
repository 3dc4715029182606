"""Every error code of docs/api.md that the rigs, sessions, screen, input and app
endpoints can answer, each provoked for real against the running stack.

Each error body is exactly `{"error": "<code>"}` or `{"error": "<code>: <detail>"}`.
The host errors (502, 504) come from a fake host: a raw WebSocket client that pairs,
says hello and then answers each operation as the test tells it to (or never).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import pytest
import pytest_asyncio
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.pairing import pair
from rigway.gateway.api_keys.schemas import CreateKeyIn
from rigway.gateway.auth.api_key_auth import generate_api_key
from rigway.gateway.clock import FakeClock
from rigway.protocol import (
    PROTOCOL_VERSION,
    Hello,
    Pong,
    Request,
    decode_frame,
    encode_text,
    ops,
)
from tests.e2e.harness import ROOMY_RATE_LIMITS, Stack, batch_ran, stack_on_own_database
from tests.e2e.raw_host import host_link
from tests.support.session_ends import wait_session_ended

# Every test runs on the module's event loop: most share one stack (`stack`), the ones
# that need their own settings or break the rig build one inside the test.
pytestmark = [pytest.mark.postgres, pytest.mark.asyncio(loop_scope="module")]

TYPE_X = {"events": [{"type": "type_text", "text": "x"}]}


def assert_error(response: httpx2.Response, status: int, code: str) -> str:
    """The response is `status` with body exactly {"error": "<code>[: <detail>]"};
    returns the detail ("" when there is none)."""
    assert response.status_code == status, f"{response.status_code} {response.text}"
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    assert isinstance(body, dict), body
    assert list(body) == ["error"], body
    error = body["error"]
    assert isinstance(error, str), body
    if error == code:
        return ""
    assert error.startswith(f"{code}: "), f"expected code {code!r}, got {error!r}"
    detail = error.removeprefix(f"{code}: ")
    assert detail.strip(), f"empty detail in {error!r}"
    return detail


@dataclass(frozen=True)
class Op:
    """One endpoint; `{rig}` and `{sid}` in the path are filled per test."""

    method: str
    path: str
    body: dict[str, Any] | None = None

    async def call(self, client: httpx2.AsyncClient, **ids: str) -> httpx2.Response:
        url = self.path.format(**ids)
        if self.body is None:
            return await client.request(self.method, url)
        return await client.request(self.method, url, json=self.body)


SCREENSHOT = Op("GET", "/v1/sessions/{sid}/screenshot")
DIRTY = Op("GET", "/v1/sessions/{sid}/dirty")
OBSERVE = Op("GET", "/v1/sessions/{sid}/observe")
TARGETS = Op("GET", "/v1/sessions/{sid}/targets")
INPUT = Op("POST", "/v1/sessions/{sid}/input", TYPE_X)
# Never runs in these tests (every call is refused); `true` would be harmless if it did.
LAUNCH = Op("POST", "/v1/sessions/{sid}/app/launch", {"path": "true"})
KILL = Op("POST", "/v1/sessions/{sid}/app/kill", {})
SESSION_READ = Op("GET", "/v1/sessions/{sid}")
SESSION_DELETE = Op("DELETE", "/v1/sessions/{sid}")
SESSION_END = Op("POST", "/v1/sessions/{sid}/end")

SESSION_SCOPED = {
    "screenshot": SCREENSHOT,
    "dirty": DIRTY,
    "observe": OBSERVE,
    "targets": TARGETS,
    "input": INPUT,
    "app_launch": LAUNCH,
    "app_kill": KILL,
}
SESSION_ANY = {
    "session_read": SESSION_READ,
    "session_delete": SESSION_DELETE,
    "session_end": SESSION_END,
    **SESSION_SCOPED,
}
EVERY_ENDPOINT = {
    "rigs_list": Op("GET", "/v1/rigs"),
    "rig_read": Op("GET", "/v1/rigs/{rig}"),
    "session_create": Op("POST", "/v1/sessions", {"rig_id": "{rig}"}),
    "sessions_list": Op("GET", "/v1/sessions"),
    **SESSION_ANY,
}


def _client(stack: Stack, authorization: str | None) -> httpx2.AsyncClient:
    headers = {} if authorization is None else {"Authorization": authorization}
    return httpx2.AsyncClient(
        base_url=stack.base_url, headers=headers, timeout=30.0, trust_env=False
    )


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    async with stack_on_own_database(
        tmp_path_factory.mktemp("errors"), **ROOMY_RATE_LIMITS
    ) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module")
async def stack(shared: Stack) -> AsyncIterator[Stack]:
    """The shared stack (one sim rig), with no session of the main key left behind."""
    yield shared
    for session in (await shared.client.get("/v1/sessions")).json()["sessions"]:
        await shared.client.delete(f"/v1/sessions/{session['session_id']}")


async def _other_account(stack: Stack) -> tuple[str, str]:
    """A second account and an API key of it: (account_id, secret)."""
    account_id = await stack.services.accounts.create("other account")
    key = await stack.services.keys.create(account_id, CreateKeyIn(name="other"))
    return account_id, key.secret


async def _session_status(stack: Stack, session_id: str) -> str:
    response = await stack.client.get(f"/v1/sessions/{session_id}")
    assert response.status_code == 200, response.text
    status = response.json()["status"]
    assert isinstance(status, str)
    return status


# ---- 400 invalid_request ----------------------------------------------------------------


async def test_malformed_json_400_invalid_request(stack: Stack) -> None:
    response = await stack.client.post(
        "/v1/sessions",
        content=b'{"rig_id": "' + stack.rig_ids[0].encode() + b'",',
        headers={"Content-Type": "application/json"},
    )
    assert_error(response, 400, "invalid_request")
    assert (await stack.client.get("/v1/sessions")).json() == {"sessions": []}


@pytest.mark.parametrize("idle_timeout_seconds", [59, 3601])
async def test_idle_timeout_out_of_bounds_400_invalid_request(
    stack: Stack, idle_timeout_seconds: int
) -> None:
    response = await stack.client.post(
        "/v1/sessions",
        json={"rig_id": stack.rig_ids[0], "idle_timeout_seconds": idle_timeout_seconds},
    )
    detail = assert_error(response, 400, "invalid_request")
    assert "idle_timeout_seconds" in detail
    assert (await stack.client.get("/v1/sessions")).json() == {"sessions": []}


async def test_unknown_event_type_400_invalid_request(stack: Stack) -> None:
    session_id = await stack.start_session()
    response = await stack.client.post(
        f"/v1/sessions/{session_id}/input", json={"events": [{"type": "teleport"}]}
    )
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize(
    "event",
    [
        {"type": "key_press"},
        {"type": "key_up"},
        {"type": "type_text"},
        {"type": "mouse_move", "x": 10},
        {"x": 10, "y": 10},
    ],
    ids=["key_press_key", "key_up_key", "type_text_text", "mouse_move_y", "type"],
)
async def test_event_missing_required_field_400_invalid_request(
    stack: Stack, event: dict[str, Any]
) -> None:
    session_id = await stack.start_session()
    response = await stack.client.post(f"/v1/sessions/{session_id}/input", json={"events": [event]})
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize("op", [SCREENSHOT, OBSERVE], ids=["screenshot", "observe"])
@pytest.mark.parametrize(
    "region",
    [
        {"x": 1900, "y": 0, "w": 100, "h": 10},
        {"x": 0, "y": 1000, "w": 10, "h": 81},
    ],
    ids=["past_right", "past_bottom"],
)
async def test_region_outside_desktop_400_invalid_request(
    stack: Stack, op: Op, region: dict[str, int]
) -> None:
    session_id = await stack.start_session()
    response = await stack.client.get(op.path.format(sid=session_id), params=region)
    detail = assert_error(response, 400, "invalid_request")
    assert "1920x1080" in detail


async def test_region_touching_desktop_edge_is_accepted(stack: Stack) -> None:
    """The boundary case of the rule above: a region ending exactly at the edge is inside."""
    session_id = await stack.start_session()
    response = await stack.client.get(
        f"/v1/sessions/{session_id}/screenshot", params={"x": 1820, "y": 980, "w": 100, "h": 100}
    )
    assert response.status_code == 200, response.text
    assert response.headers["x-screenshot-width"] == "100"


@pytest.mark.parametrize(
    ("event", "name"),
    [
        ({"type": "key_press", "key": "hyperspace"}, "hyperspace"),
        ({"type": "key_press", "key": "ctrl+blorp"}, "blorp"),
        ({"type": "key_down", "key": "f25"}, "f25"),
        ({"type": "key_up", "key": "shiftt"}, "shiftt"),
    ],
    ids=["key_press", "chord", "key_down", "key_up"],
)
async def test_unknown_key_name_400_names_the_key(
    stack: Stack, event: dict[str, Any], name: str
) -> None:
    session_id = await stack.start_session()
    response = await stack.client.post(f"/v1/sessions/{session_id}/input", json={"events": [event]})
    detail = assert_error(response, 400, "invalid_request")
    assert name in detail


@pytest.mark.parametrize(
    "event",
    [
        {"type": "mouse_click", "x": 5},
        {"type": "mouse_click", "y": 5},
        {"type": "mouse_scroll", "x": 5, "dy": -1},
    ],
    ids=["click_x", "click_y", "scroll_x"],
)
async def test_x_without_y_400_invalid_request(stack: Stack, event: dict[str, Any]) -> None:
    session_id = await stack.start_session()
    response = await stack.client.post(f"/v1/sessions/{session_id}/input", json={"events": [event]})
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize("op", [SCREENSHOT, OBSERVE], ids=["screenshot", "observe"])
@pytest.mark.parametrize(
    "params",
    [{"x": 0}, {"x": 0, "y": 0, "w": 10}],
    ids=["x", "xyw"],
)
async def test_partial_region_400_invalid_request(
    stack: Stack, op: Op, params: dict[str, int]
) -> None:
    session_id = await stack.start_session()
    response = await stack.client.get(op.path.format(sid=session_id), params=params)
    assert_error(response, 400, "invalid_request")


@pytest.mark.parametrize("op", [SCREENSHOT, OBSERVE], ids=["screenshot", "observe"])
@pytest.mark.parametrize("max_width", [15, 16385])
async def test_max_width_out_of_range_400_invalid_request(
    stack: Stack, op: Op, max_width: int
) -> None:
    session_id = await stack.start_session()
    response = await stack.client.get(
        op.path.format(sid=session_id), params={"max_width": max_width}
    )
    detail = assert_error(response, 400, "invalid_request")
    assert "max_width" in detail


async def test_unstartable_app_path_400_invalid_request(stack: Stack) -> None:
    session_id = await stack.start_session()
    response = await stack.client.post(
        f"/v1/sessions/{session_id}/app/launch", json={"path": "/nonexistent/rigway-no-such-app"}
    )
    detail = assert_error(response, 400, "invalid_request")
    assert "/nonexistent/rigway-no-such-app" in detail


# ---- 401 invalid_api_key ----------------------------------------------------------------


@pytest.mark.parametrize("endpoint", EVERY_ENDPOINT.values(), ids=EVERY_ENDPOINT.keys())
async def test_missing_api_key_401_invalid_api_key(stack: Stack, endpoint: Op) -> None:
    session_id = await stack.start_session()
    op = endpoint
    if op.body is not None and op.body.get("rig_id") == "{rig}":
        op = Op(op.method, op.path, {"rig_id": stack.rig_ids[0]})
    async with _client(stack, None) as anonymous:
        response = await op.call(anonymous, rig=stack.rig_ids[0], sid=session_id)
    assert_error(response, 401, "invalid_api_key")
    assert await _session_status(stack, session_id) == "active"


@pytest.mark.parametrize(
    "authorization",
    [
        "Bearer not-a-key",
        "Bearer rgw_live_sk_" + "A" * 48,
        "Bearer rgw_prod_sk_" + "a" * 48,
        "Bearer rgw_live_sk_" + "a" * 47,
        "Bearer",
        "{key}",
        "Basic {key}",
        "Bearer {key} extra",
    ],
    ids=[
        "garbage",
        "uppercase_hex",
        "bad_environment",
        "short",
        "scheme_only",
        "no_scheme",
        "basic_scheme",
        "trailing_junk",
    ],
)
async def test_malformed_api_key_401_invalid_api_key(stack: Stack, authorization: str) -> None:
    async with _client(stack, authorization.format(key=stack.api_key)) as client:
        response = await client.get("/v1/rigs")
    assert_error(response, 401, "invalid_api_key")


@pytest.mark.parametrize("kind", ["random", "known_prefix"])
async def test_unknown_api_key_401_invalid_api_key(stack: Stack, kind: str) -> None:
    if kind == "random":
        secret = generate_api_key("live").secret
    else:
        # Same lookup prefix as the real key, different secret: the hash must not match.
        tail = "0" * 8 if not stack.api_key.endswith("0" * 8) else "1" * 8
        secret = stack.api_key[:-8] + tail
    async with _client(stack, f"Bearer {secret}") as client:
        response = await client.get("/v1/rigs")
    assert_error(response, 401, "invalid_api_key")


async def test_revoked_api_key_401_on_next_request(stack: Stack) -> None:
    created = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="doomed"))
    async with _client(stack, f"Bearer {created.secret}") as client:
        assert (await client.get("/v1/rigs")).status_code == 200
        await stack.services.keys.revoke(stack.account_id, created.id)
        response = await client.get("/v1/rigs")
    assert_error(response, 401, "invalid_api_key")


# ---- 403 ---------------------------------------------------------------------------------


async def test_rig_without_api_access_403_api_access_disabled(stack: Stack) -> None:
    rig_id = await stack.add_agent(enable_api=False)
    response = await stack.client.post("/v1/sessions", json={"rig_id": rig_id})
    assert_error(response, 403, "api_access_disabled")
    assert (await stack.client.get("/v1/sessions")).json() == {"sessions": []}


async def test_key_without_sessions_scope_403_insufficient_scope(stack: Stack) -> None:
    narrow = await stack.services.keys.create(
        stack.account_id, CreateKeyIn(name="read only", scopes=["rigs:read"])
    )
    async with _client(stack, f"Bearer {narrow.secret}") as client:
        assert (await client.get("/v1/rigs")).status_code == 200
        response = await client.post("/v1/sessions", json={"rig_id": stack.rig_ids[0]})
    assert_error(response, 403, "insufficient_scope")
    assert (await stack.client.get(f"/v1/rigs/{stack.rig_ids[0]}")).json()[
        "active_session_id"
    ] is None


@pytest.mark.parametrize(
    ("scopes", "endpoint"),
    [
        (["sessions", "apps"], INPUT),
        (["sessions", "input"], LAUNCH),
        (["sessions", "input"], KILL),
        (["input", "apps"], SCREENSHOT),
        (["input", "apps"], SESSION_DELETE),
        (["sessions"], Op("GET", "/v1/rigs")),
    ],
    ids=["input", "app_launch", "app_kill", "screenshot", "session_delete", "rigs_list"],
)
async def test_key_lacking_operation_scope_403_insufficient_scope(
    stack: Stack, scopes: list[Any], endpoint: Op
) -> None:
    session_id = await stack.start_session()
    typed = stack.sim().field_text("username")
    narrow = await stack.services.keys.create(
        stack.account_id, CreateKeyIn(name="narrow", scopes=scopes)
    )
    async with _client(stack, f"Bearer {narrow.secret}") as client:
        response = await endpoint.call(client, sid=session_id)
    assert_error(response, 403, "insufficient_scope")
    assert await _session_status(stack, session_id) == "active"
    assert stack.sim().field_text("username") == typed


# ---- 404 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rig_id", ["rig_000000000000000000000000", "nope", "rig_%20"])
async def test_unknown_rig_404_rig_not_found(stack: Stack, rig_id: str) -> None:
    assert_error(await stack.client.get(f"/v1/rigs/{rig_id}"), 404, "rig_not_found")


@pytest.mark.parametrize(
    ("endpoint", "code"),
    [
        (Op("GET", "/v1/rigs/rig_%00"), "rig_not_found"),
        (Op("POST", "/v1/sessions", {"rig_id": "rig_\u0000"}), "rig_not_found"),
        (SESSION_READ, "session_not_found"),
        (SESSION_DELETE, "session_not_found"),
        (SCREENSHOT, "session_not_found"),
    ],
    ids=["rig_read", "session_create", "session_read", "session_delete", "screenshot"],
)
async def test_id_with_nul_byte_404_not_found(stack: Stack, endpoint: Op, code: str) -> None:
    """A NUL byte cannot be stored in PostgreSQL text: an id holding one is simply unknown."""
    assert_error(await endpoint.call(stack.client, sid="ses_%00"), 404, code)


async def test_session_on_unknown_rig_404_rig_not_found(stack: Stack) -> None:
    response = await stack.client.post(
        "/v1/sessions", json={"rig_id": "rig_000000000000000000000000"}
    )
    assert_error(response, 404, "rig_not_found")


async def test_other_accounts_rig_404_rig_not_found(stack: Stack) -> None:
    other_account, _ = await _other_account(stack)
    code = await stack.services.rigs.create_pairing_code(other_account)
    paired = await pair(stack.base_url, code.code, name="theirs", os="test-os", gpu="")
    await stack.services.rigs.set_api_access(other_account, paired.rig_id, True)
    assert_error(await stack.client.get(f"/v1/rigs/{paired.rig_id}"), 404, "rig_not_found")
    response = await stack.client.post("/v1/sessions", json={"rig_id": paired.rig_id})
    assert_error(response, 404, "rig_not_found")
    rigs = (await stack.client.get("/v1/rigs")).json()["rigs"]
    assert paired.rig_id not in {rig["id"] for rig in rigs}


@pytest.mark.parametrize("endpoint", SESSION_ANY.values(), ids=SESSION_ANY.keys())
async def test_unknown_session_404_session_not_found(stack: Stack, endpoint: Op) -> None:
    response = await endpoint.call(stack.client, sid="ses_000000000000000000000000")
    assert_error(response, 404, "session_not_found")


@pytest.mark.parametrize("endpoint", SESSION_ANY.values(), ids=SESSION_ANY.keys())
async def test_other_accounts_session_404_session_not_found(stack: Stack, endpoint: Op) -> None:
    session_id = await stack.start_session()
    typed = stack.sim().field_text("username")
    _, other_key = await _other_account(stack)
    async with _client(stack, f"Bearer {other_key}") as other:
        response = await endpoint.call(other, sid=session_id)
        assert (await other.get("/v1/sessions")).json() == {"sessions": []}
    assert_error(response, 404, "session_not_found")
    assert await _session_status(stack, session_id) == "active"
    assert stack.sim().field_text("username") == typed


async def test_kill_of_pid_not_launched_by_session_404_app_not_found(stack: Stack) -> None:
    session_id = await stack.start_session()
    response = await stack.client.post(
        f"/v1/sessions/{session_id}/app/kill", json={"pid": 2**31 - 1}
    )
    assert_error(response, 404, "app_not_found")


# ---- 409 ---------------------------------------------------------------------------------


async def test_session_on_offline_rig_409_rig_offline(tmp_path: Path) -> None:
    async with stack_on_own_database(tmp_path) as stack:
        rig_id = stack.rig_ids[0]
        await stack.stop_agent(rig_id)
        response = await stack.client.post("/v1/sessions", json={"rig_id": rig_id})
        assert_error(response, 409, "rig_offline")
        assert (await stack.client.get("/v1/sessions")).json() == {"sessions": []}


def assert_rig_busy(response: httpx2.Response, active_session_id: str) -> None:
    """409 rig_busy whose body is the error and the session holding the rig, no more."""
    assert response.status_code == 409, response.text
    body = response.json()
    assert list(body) == ["error", "active_session_id"], body
    assert body["error"].startswith("rig_busy: "), body
    assert active_session_id in body["error"], body
    assert body["active_session_id"] == active_session_id, body


async def test_second_session_on_busy_rig_409_rig_busy(stack: Stack) -> None:
    first = await stack.start_session()
    response = await stack.client.post("/v1/sessions", json={"rig_id": stack.rig_ids[0]})
    assert_rig_busy(response, first)
    sessions = (await stack.client.get("/v1/sessions")).json()["sessions"]
    assert [s["session_id"] for s in sessions] == [first]


async def test_concurrent_sessions_on_one_rig_one_wins_409_rig_busy(stack: Stack) -> None:
    body = {"rig_id": stack.rig_ids[0]}
    responses = await asyncio.gather(
        *(stack.client.post("/v1/sessions", json=body) for _ in range(3))
    )
    statuses = sorted(response.status_code for response in responses)
    assert statuses == [201, 409, 409], [r.text for r in responses]
    winner = next(r.json()["session_id"] for r in responses if r.status_code == 201)
    for response in responses:
        if response.status_code == 409:
            assert_rig_busy(response, winner)


# ---- 410 session_ended ----------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", SESSION_SCOPED.values(), ids=SESSION_SCOPED.keys())
async def test_operation_on_ended_session_410_session_ended(stack: Stack, endpoint: Op) -> None:
    session_id = await stack.start_session()
    typed = stack.sim().field_text("username")
    assert (await stack.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
    response = await endpoint.call(stack.client, sid=session_id)
    assert_error(response, 410, "session_ended")
    assert stack.sim().field_text("username") == typed


async def test_agent_restart_mid_session_410_matches_the_record(tmp_path: Path) -> None:
    """The agent restarts within the host-gone grace and comes back without the session.
    The gateway then answers 410 session_ended (a stop error: the caller will not end
    it), so the record must say ended too, and the rig must be free again; an `active`
    session nobody can use would bill and hold the rig until its idle timeout."""
    async with stack_on_own_database(tmp_path) as stack:
        session_id = await stack.start_session()
        agent = await stack.stop_agent(stack.rig_ids[0])
        stack.start_agent(agent.rig_id, agent.rig_token, SimDesktop())
        await stack.wait_online(agent.rig_id)
        response = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
        assert_error(response, 410, "session_ended")
        with contextlib.suppress(TimeoutError):
            await wait_session_ended(stack.services, session_id, timeout_s=5)
        status = await _session_status(stack, session_id)
        assert status == "ended", f"answered 410 session_ended, yet the session is {status}"
        again = await stack.client.post("/v1/sessions", json={"rig_id": agent.rig_id})
        assert again.status_code == 201, again.text


@pytest.mark.parametrize(
    ("first", "second"),
    [(SESSION_DELETE, SESSION_DELETE), (SESSION_END, SESSION_END), (SESSION_END, SESSION_DELETE)],
    ids=["delete_delete", "end_end", "end_delete"],
)
async def test_ending_ended_session_200_same_record_and_reason(
    stack: Stack, first: Op, second: Op
) -> None:
    session_id = await stack.start_session()
    ended = await first.call(stack.client, sid=session_id)
    assert ended.status_code == 200, ended.text
    assert ended.json()["status"] == "ended"
    assert ended.json()["ended_reason"] == "client"
    again = await second.call(stack.client, sid=session_id)
    assert again.status_code == 200, again.text
    assert again.json() == ended.json()
    assert (await stack.client.get(f"/v1/sessions/{session_id}")).json() == ended.json()


# ---- 429 ---------------------------------------------------------------------------------


def _assert_rate_limit_headers(response: httpx2.Response, limit: int) -> None:
    headers = response.headers
    for name in ("retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"):
        assert name in headers, f"{name} missing from {dict(headers)}"
    # Used up in the first window of a clock that has not moved since it started (at a
    # window's start): there is room again the second after that window closes.
    assert headers["retry-after"] == "61"
    assert int(headers["ratelimit-limit"]) == limit
    assert headers["ratelimit-remaining"] == "0"
    assert headers["ratelimit-reset"] == "61"


async def test_request_quota_exceeded_429_rate_limited_with_headers(
    tmp_path: Path,
) -> None:
    async with stack_on_own_database(
        tmp_path, rigs=0, clock=FakeClock(), request_rate_limit="5/minute"
    ) as stack:
        for _ in range(5):
            assert (await stack.client.get("/v1/rigs")).status_code == 200
        response = await stack.client.get("/v1/rigs")
        assert_error(response, 429, "rate_limited")
        _assert_rate_limit_headers(response, limit=5)
        # The quota is per key: another key of the same account is not limited.
        other = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="b"))
        async with _client(stack, f"Bearer {other.secret}") as client:
            assert (await client.get("/v1/rigs")).status_code == 200


async def test_account_request_ceiling_429_rate_limited_across_keys(tmp_path: Path) -> None:
    async with stack_on_own_database(
        tmp_path,
        rigs=0,
        clock=FakeClock(),
        request_rate_limit="5/minute",
        account_request_rate_limit="7/minute",
    ) as stack:
        for _ in range(5):
            assert (await stack.client.get("/v1/rigs")).status_code == 200
        second = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="b"))
        third = await stack.services.keys.create(stack.account_id, CreateKeyIn(name="c"))
        async with _client(stack, f"Bearer {second.secret}") as client:
            for _ in range(2):
                assert (await client.get("/v1/rigs")).status_code == 200
        async with _client(stack, f"Bearer {third.secret}") as client:
            response = await client.get("/v1/rigs")
        detail = assert_error(response, 429, "rate_limited")
        assert "account" in detail
        _assert_rate_limit_headers(response, limit=7)
        # Another account's keys have a ceiling of their own.
        other_account = await stack.services.accounts.create("other")
        other = await stack.services.keys.create(other_account, CreateKeyIn(name="d"))
        async with _client(stack, f"Bearer {other.secret}") as client:
            assert (await client.get("/v1/rigs")).status_code == 200


async def test_input_quota_counts_each_event_429_rate_limited(
    tmp_path: Path,
) -> None:
    async with stack_on_own_database(
        tmp_path, clock=FakeClock(), input_event_rate_limit="10/minute"
    ) as stack:
        session_id = await stack.start_session()
        ten = {"events": [{"type": "type_text", "text": "a"}] * 10}
        accepted = await stack.client.post(f"/v1/sessions/{session_id}/input", json=ten)
        assert batch_ran(accepted) == 10
        response = await stack.client.post(
            f"/v1/sessions/{session_id}/input",
            json={"events": [{"type": "type_text", "text": "b"}]},
        )
        assert_error(response, 429, "rate_limited")
        _assert_rate_limit_headers(response, limit=10)
        assert stack.sim().field_text("username") == "a" * 10
        # Only input is limited: the session's other operations still answer.
        assert (await stack.client.get(f"/v1/sessions/{session_id}/dirty")).status_code == 200


async def test_session_over_concurrency_cap_429_concurrency_limit(
    tmp_path: Path,
) -> None:
    async with stack_on_own_database(tmp_path, rigs=2, max_concurrent_sessions=1) as stack:
        await stack.start_session(0)
        response = await stack.client.post("/v1/sessions", json={"rig_id": stack.rig_ids[1]})
        assert_error(response, 429, "concurrency_limit")
        assert int(response.headers["retry-after"]) >= 1
        rig = (await stack.client.get(f"/v1/rigs/{stack.rig_ids[1]}")).json()
        assert rig["active_session_id"] is None


async def test_concurrency_limit_429_carries_ratelimit_headers(tmp_path: Path) -> None:
    """docs/api.md: every 429 (rate_limited and concurrency_limit) carries Retry-After
    and RateLimit-Limit/Remaining/Reset."""
    async with stack_on_own_database(tmp_path, rigs=2, max_concurrent_sessions=1) as stack:
        await stack.start_session(0)
        response = await stack.client.post("/v1/sessions", json={"rig_id": stack.rig_ids[1]})
        assert_error(response, 429, "concurrency_limit")
        headers = response.headers
        for name in ("retry-after", "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset"):
            assert name in headers, f"{name} missing from {dict(headers)}"
        assert headers["ratelimit-limit"] == "1"
        assert headers["ratelimit-remaining"] == "0"


async def test_concurrent_creates_over_cap_admit_one_429_concurrency_limit(
    tmp_path: Path,
) -> None:
    async with stack_on_own_database(tmp_path, rigs=2, max_concurrent_sessions=1) as stack:
        responses = await asyncio.gather(
            *(stack.client.post("/v1/sessions", json={"rig_id": rig}) for rig in stack.rig_ids)
        )
        statuses = sorted(response.status_code for response in responses)
        assert statuses == [201, 429], [r.text for r in responses]
        assert len((await stack.client.get("/v1/sessions")).json()["sessions"]) == 1


# ---- 502 / 504 from a fake host ---------------------------------------------------------

STARTED = {
    "ok": True,
    "body": ops.SessionStarted(
        native_width=1920, native_height=1080, capture_mode="fake"
    ).model_dump(),
}
DONE: dict[str, Any] = {"ok": True, "body": {}}


def _failed(code: str, detail: str) -> dict[str, Any]:
    return {"ok": False, "error": {"code": code, "detail": detail}}


@dataclass
class FakeHost:
    """A host agent by hand: `replies` maps an op to the reply fields it answers with;
    an op that is absent (or maps to None) is never answered."""

    rig_id: str
    rig_token: str
    replies: dict[str, dict[str, Any] | None]
    requests: list[Request] = field(default_factory=list)
    # An op mapped here is answered with these raw frame contents instead of a reply.
    raw_answers: dict[str, str | bytes] = field(default_factory=dict)
    close_code: int | None = None

    def session_ids(self, op: str) -> list[str]:
        return [str(r.body["session_id"]) for r in self.requests if r.op == op]

    async def serve(self, ws: ClientConnection) -> None:
        with contextlib.suppress(ConnectionClosed):
            async for raw in ws:
                header, _ = decode_frame(raw)
                if header.get("t") == "ping":
                    await ws.send(encode_text(Pong(sent_at=header["sent_at"]).model_dump()))
                elif header.get("t") == "req":
                    request = Request.model_validate(header)
                    self.requests.append(request)
                    reply = self.replies.get(request.op)
                    if request.op in self.raw_answers:
                        await ws.send(self.raw_answers[request.op])
                    elif reply is not None:
                        await ws.send(encode_text({"t": "res", "id": request.id, **reply}))
        self.close_code = ws.close_code


@contextlib.asynccontextmanager
async def fake_host(
    stack: Stack, replies: Mapping[str, dict[str, Any] | None]
) -> AsyncIterator[FakeHost]:
    """A newly paired rig, API access on, its host connected by hand."""
    code = await stack.services.rigs.create_pairing_code(stack.account_id)
    paired = await pair(stack.base_url, code.code, name="fake", os="fake-os", gpu="")
    await stack.services.rigs.set_api_access(stack.account_id, paired.rig_id, True)
    async with reconnect_fake_host(stack, paired.rig_id, paired.rig_token, replies) as host:
        yield host


@contextlib.asynccontextmanager
async def reconnect_fake_host(
    stack: Stack, rig_id: str, rig_token: str, replies: Mapping[str, dict[str, Any] | None]
) -> AsyncIterator[FakeHost]:
    """A host of an already paired rig connecting (again), running no session."""
    async with host_link(stack.base_url, rig_token) as (ws, welcome):
        assert welcome.rig_id == rig_id
        host = FakeHost(rig_id, rig_token, dict(replies))
        serving = asyncio.create_task(host.serve(ws))
        try:
            await stack.wait_online(rig_id)
            yield host
        finally:
            serving.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await serving


@pytest_asyncio.fixture(loop_scope="module")
async def bare_stack(tmp_path: Path) -> AsyncIterator[Stack]:
    """No sim rig; short host deadlines so the 504 paths answer within a second (the
    'other' deadline stays longer than the screen one, as in production)."""
    async with stack_on_own_database(
        tmp_path, rigs=0, screen_timeout_s=0.5, host_timeout_s=1.0, session_start_timeout_s=0.5
    ) as running:
        yield running


@pytest.mark.parametrize("op", [SCREENSHOT, OBSERVE], ids=["screenshot", "observe"])
async def test_host_error_reply_to_capture_502_host_error(bare_stack: Stack, op: Op) -> None:
    replies = {
        ops.SESSION_START: STARTED,
        ops.SCREEN_CAPTURE: _failed(ops.ERROR_HOST, "capture device lost"),
        ops.SCREEN_DIRTY: {
            "ok": True,
            "body": {"width": 1920, "height": 1080, "available": True, "capture_mode": "fake"}
            | {"rects": []},
        },
        ops.A11Y_TARGETS: _failed(ops.ERROR_HOST, "no accessibility"),
    }
    async with fake_host(bare_stack, replies) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
        response = await op.call(bare_stack.client, sid=session_id)
        detail = assert_error(response, 502, "host_error")
        assert "capture device lost" in detail
        assert await _session_status(bare_stack, session_id) == "active"


async def test_a_restore_the_host_missed_while_away_is_sent_when_it_returns(
    bare_stack: Stack,
) -> None:
    """The session ends while its host is away and the host comes back running none:
    the welcome has nothing to list, yet the host still gets its session/end."""
    replies = {ops.SESSION_START: STARTED, ops.SESSION_END: {"ok": True, "body": {}}}
    async with fake_host(bare_stack, replies) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
    await bare_stack.wait_until(lambda: not bare_stack.services.registry.is_online(host.rig_id))
    ended = await bare_stack.client.delete(f"/v1/sessions/{session_id}")
    assert ended.json()["status"] == "ended"
    async with reconnect_fake_host(bare_stack, host.rig_id, host.rig_token, replies) as back:
        await bare_stack.wait_until(lambda: session_id in back.session_ids(ops.SESSION_END))


async def test_a_reconnect_that_fails_its_handshake_leaves_the_host_gone_timer_running(
    tmp_path: Path,
) -> None:
    async with stack_on_own_database(tmp_path, rigs=0, host_gone_grace_s=0.3) as stack:
        replies = {ops.SESSION_START: STARTED}
        async with fake_host(stack, replies) as host:
            session_id = await stack.start_session_on(host.rig_id)
        await stack.wait_until(lambda: not stack.services.registry.is_online(host.rig_id))

        async def store_down(*_args: object) -> None:
            raise OSError("the store went away mid-handshake")

        stack.services.rigs.record_hello = store_down  # type: ignore[method-assign,assignment]
        url = "ws" + stack.base_url.removeprefix("http") + "/v1/agent/connect"
        hello = Hello(protocol=PROTOCOL_VERSION, agent_version="0", native_width=8, native_height=8)
        async with connect(
            url, additional_headers={"Authorization": f"Bearer {host.rig_token}"}
        ) as ws:
            await ws.send(encode_text(hello.model_dump()))
            with contextlib.suppress(ConnectionClosed):
                await ws.recv()  # no welcome: the gateway fails and closes
        await wait_session_ended(stack.services, session_id)
        status = (await stack.client.get(f"/v1/sessions/{session_id}")).json()
        assert status["ended_reason"] == "host_gone"


async def test_a_rig_unpaired_while_its_link_connects_is_not_attached(bare_stack: Stack) -> None:
    code = await bare_stack.services.rigs.create_pairing_code(bare_stack.account_id)
    paired = await pair(bare_stack.base_url, code.code, name="racing", os="fake-os", gpu="")
    url = "ws" + bare_stack.base_url.removeprefix("http") + "/v1/agent/connect"
    hello = Hello(protocol=PROTOCOL_VERSION, agent_version="0", native_width=8, native_height=8)
    auth = {"Authorization": f"Bearer {paired.rig_token}"}
    async with connect(url, additional_headers=auth) as ws:
        # The token was good when the link opened; the owner unpairs before its hello.
        await bare_stack.services.rig_owner.unpair(bare_stack.account_id, paired.rig_id)
        await ws.send(encode_text(hello.model_dump()))
        with contextlib.suppress(ConnectionClosed):
            while True:
                await ws.recv()
        assert ws.close_code == 4401
    assert not bare_stack.services.registry.is_online(paired.rig_id)


async def test_observe_answers_the_screenshot_legs_error_first(bare_stack: Stack) -> None:
    """Both legs failed: the refused capture's 400 says more than the dirty leg's 502
    (a caller would retry a 502 with the same bad region)."""
    replies = {
        ops.SESSION_START: STARTED,
        ops.SCREEN_CAPTURE: _failed(ops.ERROR_INVALID_REQUEST, "region outside the desktop"),
        ops.SCREEN_DIRTY: _failed(ops.ERROR_HOST, "damage lost"),
    }
    async with fake_host(bare_stack, replies) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
        response = await OBSERVE.call(bare_stack.client, sid=session_id)
        assert "region outside the desktop" in assert_error(response, 400, "invalid_request")
        assert host.session_ids(ops.SCREEN_DIRTY_RETURN) == []  # the dirty leg took nothing


async def test_observe_hands_the_dirty_take_back_to_the_host(bare_stack: Stack) -> None:
    dirty = {"width": 1920, "height": 1080, "available": True, "capture_mode": "fake"}
    replies = {
        ops.SESSION_START: STARTED,
        ops.SCREEN_CAPTURE: _failed(ops.ERROR_HOST, "capture device lost"),
        ops.SCREEN_DIRTY: {"ok": True, "body": dirty | {"rects": [[10, 20, 30, 40]]}},
        ops.SCREEN_DIRTY_RETURN: {"ok": True, "body": {}},
    }
    async with fake_host(bare_stack, replies) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
        response = await OBSERVE.call(bare_stack.client, sid=session_id)
        assert_error(response, 502, "host_error")
        [returned] = [r for r in host.requests if r.op == ops.SCREEN_DIRTY_RETURN]
        assert returned.body == {"session_id": session_id, "rects": [[10, 20, 30, 40]]}


@pytest.mark.parametrize("op", [SCREENSHOT, DIRTY, OBSERVE], ids=["screenshot", "dirty", "observe"])
async def test_host_silent_on_screen_504_host_timeout(bare_stack: Stack, op: Op) -> None:
    async with fake_host(bare_stack, {ops.SESSION_START: STARTED}) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
        started = asyncio.get_running_loop().time()
        response = await op.call(bare_stack.client, sid=session_id)
        elapsed = asyncio.get_running_loop().time() - started
        assert_error(response, 504, "host_timeout")
        assert 0.4 <= elapsed < 5.0
        assert await _session_status(bare_stack, session_id) == "active"


async def test_host_silent_on_targets_200_empty_list(bare_stack: Stack) -> None:
    """docs/api.md (Screen): the target list is empty when the host is unavailable, not an error."""
    async with fake_host(bare_stack, {ops.SESSION_START: STARTED}) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
        response = await bare_stack.client.get(f"/v1/sessions/{session_id}/targets")
        assert response.status_code == 200, response.text
        assert response.json() == {"width": 1920, "height": 1080, "targets": [], "truncated": False}


async def test_unacknowledged_session_start_504_and_session_failed(bare_stack: Stack) -> None:
    async with fake_host(bare_stack, {ops.SESSION_START: None}) as host:
        response = await bare_stack.client.post("/v1/sessions", json={"rig_id": host.rig_id})
        assert_error(response, 504, "host_timeout")
        [session_id] = host.session_ids(ops.SESSION_START)
        assert await _session_status(bare_stack, session_id) == "failed"
        failed = (await bare_stack.client.get(f"/v1/sessions/{session_id}")).json()
        assert failed["billed_minutes"] == 0  # it never started: nothing to bill
        assert (await bare_stack.client.get("/v1/sessions")).json() == {"sessions": []}
        rig = (await bare_stack.client.get(f"/v1/rigs/{host.rig_id}")).json()
        assert rig["active_session_id"] is None


async def test_host_error_detail_does_not_repeat_the_code(bare_stack: Stack) -> None:
    """`host_error: <detail>` where the detail says what failed, not `host_error` again."""
    replies = {
        ops.SESSION_START: STARTED,
        ops.SCREEN_CAPTURE: _failed(ops.ERROR_HOST, "capture device lost"),
    }
    async with fake_host(bare_stack, replies) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
        response = await SCREENSHOT.call(bare_stack.client, sid=session_id)
        detail = assert_error(response, 502, "host_error")
        assert "capture device lost" in detail
        assert not detail.startswith("host_error"), response.json()


async def test_refused_session_start_502_and_session_failed(bare_stack: Stack) -> None:
    replies = {ops.SESSION_START: _failed(ops.ERROR_HOST, "input cannot be armed")}
    async with fake_host(bare_stack, replies) as host:
        response = await bare_stack.client.post("/v1/sessions", json={"rig_id": host.rig_id})
        detail = assert_error(response, 502, "host_error")
        assert "input cannot be armed" in detail
        [session_id] = host.session_ids(ops.SESSION_START)
        assert await _session_status(bare_stack, session_id) == "failed"


@pytest.mark.parametrize("endpoint", SESSION_SCOPED.values(), ids=SESSION_SCOPED.keys())
async def test_operation_on_failed_session_410_session_ended(
    bare_stack: Stack, endpoint: Op
) -> None:
    async with fake_host(bare_stack, {ops.SESSION_START: None}) as host:
        response = await bare_stack.client.post("/v1/sessions", json={"rig_id": host.rig_id})
        assert_error(response, 504, "host_timeout")
        [session_id] = host.session_ids(ops.SESSION_START)
        response = await endpoint.call(bare_stack.client, sid=session_id)
        assert_error(response, 410, "session_ended")
        # Only the start and the gateway's stand-down after it timed out reach the host.
        lifecycle = (ops.SESSION_START, ops.SESSION_END)
        assert not [r for r in host.requests if r.op not in lifecycle]


async def test_failed_session_start_frees_the_rig_for_the_next(bare_stack: Stack) -> None:
    async with fake_host(bare_stack, {ops.SESSION_START: None}) as host:
        response = await bare_stack.client.post("/v1/sessions", json={"rig_id": host.rig_id})
        assert_error(response, 504, "host_timeout")
        host.replies[ops.SESSION_START] = STARTED
        host.replies[ops.SESSION_END] = DONE
        session_id = await bare_stack.start_session_on(host.rig_id)
        assert await _session_status(bare_stack, session_id) == "active"


@pytest.mark.parametrize(
    ("op", "endpoint"),
    [(ops.SCREEN_CAPTURE, SCREENSHOT), (ops.SCREEN_DIRTY, DIRTY)],
    ids=["screenshot", "dirty"],
)
async def test_malformed_host_reply_502_host_error(
    bare_stack: Stack, op: str, endpoint: Op
) -> None:
    """A host's reply is untrusted input: a wrong shape is the host's error, never a 500."""
    replies = {ops.SESSION_START: STARTED, op: {"ok": True, "body": {"width": "wide"}}}
    async with fake_host(bare_stack, replies) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
        response = await endpoint.call(bare_stack.client, sid=session_id)
    assert_error(response, 502, "host_error")


@pytest.mark.parametrize("garbage", ["not json", b"\x00\x00"], ids=["text", "binary"])
async def test_an_undecodable_host_frame_closes_the_link_and_fails_the_call_502(
    bare_stack: Stack, garbage: str | bytes
) -> None:
    """A frame the gateway cannot decode ends the link (1007): its pending call gets a
    502 at once, not a 504 after the deadline, and the rig goes offline."""
    async with fake_host(bare_stack, {ops.SESSION_START: STARTED}) as host:
        session_id = await bare_stack.start_session_on(host.rig_id)
        host.raw_answers[ops.SCREEN_CAPTURE] = garbage
        response = await SCREENSHOT.call(bare_stack.client, sid=session_id)
        await bare_stack.wait_until(lambda: not bare_stack.services.registry.is_online(host.rig_id))
        await bare_stack.wait_until(lambda: host.close_code is not None)
    assert_error(response, 502, "host_error")
    assert host.close_code == 1007
