"""The screenshot fast lane: what it takes, what it leaves to the app, and that its
answers are the app's answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx2
import pytest

from rigway.gateway import http_server
from rigway.gateway.desktop.fast_lane import ScreenshotFastLane, parse_screen_query
from rigway.gateway.desktop.service import ScreenParams
from rigway.gateway.keys.schemas import CreateKeyIn
from rigway.protocol import ops
from tests.e2e.harness import Stack, running_stack

pytestmark = pytest.mark.postgres

# ---- the query it reads ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (b"", ScreenParams()),
        (b"quality=40", ScreenParams(quality=40)),
        (b"quality=100&max_width=16", ScreenParams(quality=100, max_width=16)),
        (
            b"x=0&y=0&w=1&h=65535",
            ScreenParams(region=ops.Region(x=0, y=0, w=1, h=65535)),
        ),
    ],
)
def test_plain_queries_are_read(query: bytes, expected: ScreenParams) -> None:
    assert parse_screen_query(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        b"quality=39",
        b"quality=101",
        b"quality=085x",
        b"quality=8.5",
        b"quality=%38%35",
        b"quality=",
        b"quality",
        b"quality=85&quality=90",
        b"max_width=15",
        b"max_width=1234567890",
        b"x=0&y=0&w=1",
        b"w=0&h=1&x=0&y=0",
        b"mark=1",
        b"quality=85&",
        b"&quality=85",
    ],
)
def test_anything_else_is_left_to_the_app(query: bytes) -> None:
    assert parse_screen_query(query) is None


# ---- who answers ---------------------------------------------------------------------------


class RecordingApp:
    """The app behind the lane: records the paths it was asked for, answers 299."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.paths.append(scope["path"])
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> Any:
    async with running_stack(tmp_path / "state", database_url) as running:
        yield running


async def _lane_client(stack: Stack, inner: RecordingApp) -> httpx2.AsyncClient:
    lane = ScreenshotFastLane(inner, services=stack.services)
    return httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=lane),
        base_url="http://lane",
        headers={"Authorization": f"Bearer {stack.api_key}"},
    )


async def test_the_lane_answers_a_well_formed_screenshot_itself(stack: Stack) -> None:
    session_id = await stack.start_session()
    inner = RecordingApp()
    async with await _lane_client(stack, inner) as lane:
        shot = await lane.get(f"/v1/sessions/{session_id}/screenshot", params={"quality": 70})
        missing = await lane.get("/v1/sessions/ses_000000000000000000000000/screenshot")
    assert shot.status_code == 200
    assert shot.content[:2] == b"\xff\xd8"
    assert missing.status_code == 404
    assert inner.paths == []


@pytest.mark.parametrize(
    ("method", "path", "query"),
    [
        ("GET", "/v1/sessions/{sid}/screenshot", "quality=8.5"),
        ("GET", "/v1/sessions/{sid}/screenshot", "mark=1"),
        ("POST", "/v1/sessions/{sid}/screenshot", ""),
        ("GET", "/v1/sessions/{sid}/observe", ""),
        ("GET", "/v1/sessions/a%00b/screenshot", ""),
    ],
)
async def test_the_lane_leaves_the_rest_to_the_app(
    stack: Stack, method: str, path: str, query: str
) -> None:
    session_id = await stack.start_session()
    inner = RecordingApp()
    async with await _lane_client(stack, inner) as lane:
        url = path.format(sid=session_id) + (f"?{query}" if query else "")
        response = await lane.request(method, url)
    assert response.status_code == 299
    assert len(inner.paths) == 1


# ---- the lane's answers are the route's answers ------------------------------------------

# An unknown query name makes the lane step aside, so the same call reaches the route.
VIA_ROUTE = {"via": "route"}


async def _both(
    stack: Stack, path: str, params: dict[str, Any] | None = None, key: str | None = None
) -> tuple[httpx2.Response, httpx2.Response]:
    headers = None if key is None else {"Authorization": f"Bearer {key}"}
    params = params or {}
    lane = await stack.client.get(path, params=params, headers=headers)
    route = await stack.client.get(path, params={**params, **VIA_ROUTE}, headers=headers)
    return lane, route


def _same_answer(lane: httpx2.Response, route: httpx2.Response, status: int = 200) -> None:
    assert lane.status_code == route.status_code == status, lane.text
    # Each screenshot names a frame of its own.
    ignored = {"date", "x-request-id", "server-timing", "content-length", "x-frame-id"}
    assert {k: v for k, v in lane.headers.items() if k not in ignored} == {
        k: v for k, v in route.headers.items() if k not in ignored
    }
    assert "x-request-id" in lane.headers
    if lane.headers["content-type"].startswith("application/json"):
        assert lane.json() == route.json()


async def test_a_screenshot_is_the_same_either_way(stack: Stack) -> None:
    session_id = await stack.start_session()
    lane, route = await _both(stack, f"/v1/sessions/{session_id}/screenshot", {"max_width": 640})
    _same_answer(lane, route)
    assert lane.headers["x-screenshot-width"] == "640"
    assert lane.headers["x-frame-id"].startswith("frm_")
    assert route.headers["x-frame-id"].startswith("frm_")
    assert lane.headers["x-frame-id"] != route.headers["x-frame-id"]


async def test_errors_are_the_same_either_way(stack: Stack) -> None:
    session_id = await stack.start_session()
    url = f"/v1/sessions/{session_id}/screenshot"
    outside = {"x": 1900, "y": 0, "w": 100, "h": 10}
    _same_answer(*await _both(stack, url, outside), 400)  # region outside the desktop
    bad_key = "rgw_live_sk_" + "0" * 48
    _same_answer(*await _both(stack, url, key=bad_key), 401)
    other_account = await stack.services.accounts.create("other account")
    other_key = await stack.services.keys.create(other_account, CreateKeyIn(name="other"))
    _same_answer(*await _both(stack, url, key=other_key.secret), 404)
    input_only = await stack.services.keys.create(
        stack.account_id, CreateKeyIn(name="input only", scopes=["input"])
    )
    _same_answer(*await _both(stack, url, key=input_only.secret), 403)
    await stack.client.delete(f"/v1/sessions/{session_id}")
    _same_answer(*await _both(stack, url), 410)


# ---- in front of every middleware, it does their work ------------------------------------


async def test_a_get_with_a_body_is_left_to_the_app(stack: Stack) -> None:
    session_id = await stack.start_session()
    inner = RecordingApp()
    async with await _lane_client(stack, inner) as lane:
        response = await lane.request(
            "GET", f"/v1/sessions/{session_id}/screenshot", content=b"x" * 10
        )
    assert response.status_code == 299
    assert inner.paths == [f"/v1/sessions/{session_id}/screenshot"]


async def test_an_unexpected_error_is_a_500_with_a_request_id(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = await stack.start_session()

    async def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.setattr(stack.services.desktop, "screenshot", broken)
    response = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
    assert response.status_code == 500
    assert response.json() == {"error": "internal_error"}
    assert response.headers["x-request-id"].startswith("req_")


# ---- answered from the host's reply ----------------------------------------------------------


async def test_the_lane_answers_from_the_hosts_reply_under_the_gateways_server(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> None:
    answered: list[tuple[int, bool]] = []
    answer_now = http_server.answer_now

    def recording_answer_now(cycle: Any, status: int, headers: Any, body: Any) -> bool:
        sent = answer_now(cycle, status, headers, body)
        answered.append((status, sent))
        return sent

    monkeypatch.setattr(http_server, "answer_now", recording_answer_now)
    session_id = await stack.start_session()
    url = f"/v1/sessions/{session_id}/screenshot"
    early = await stack.client.get(url, params={"max_width": 640})
    assert answered == [(200, True)]
    route = await stack.client.get(url, params={"max_width": 640, **VIA_ROUTE})
    _same_answer(early, route)
    assert early.content[:2] == b"\xff\xd8"
    assert early.headers["x-frame-id"].startswith("frm_")  # the frame rides the early answer
    assert len(early.content) == int(early.headers["content-length"])
    missing = await stack.client.get("/v1/sessions/ses_000000000000000000000000/screenshot")
    assert missing.status_code == 404  # errors still go the ASGI way
    assert answered == [(200, True)]
