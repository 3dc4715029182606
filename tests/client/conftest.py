"""A fake gateway behind `httpx2.MockTransport`, and clients wired to it with fake time."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx2
import pytest

from rigway.client import AsyncRigway, Rigway

BASE_URL = "http://gateway.test"
API_KEY = "rgw_test_sk_" + "0" * 48
NOW = 1_700_000_000.0

Reply = httpx2.Response | Exception | Callable[[httpx2.Request], httpx2.Response]


def _raw_path(request: httpx2.Request) -> str:
    # Still percent-encoded, so a test can see that an id stayed one path segment.
    return request.url.raw_path.split(b"?")[0].decode()


class FakeGateway:
    """Answers from per-route queues (the last reply repeats) and records every request."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self._routes: dict[tuple[str, str], list[Reply]] = {}

    def on(self, method: str, path: str, *replies: Reply) -> None:
        self._routes[(method, path)] = list(replies)

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        queue = self._routes.get((request.method, _raw_path(request)))
        if not queue:
            return httpx2.Response(404, json={"error": "route_not_faked"})
        reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if isinstance(reply, Exception):
            raise reply
        if isinstance(reply, httpx2.Response):
            return reply
        return reply(request)

    def calls(self, method: str, path: str) -> list[httpx2.Request]:
        return [r for r in self.requests if r.method == method and _raw_path(r) == path]

    @property
    def last(self) -> httpx2.Request:
        return self.requests[-1]


def body_of(request: httpx2.Request) -> Any:
    return json.loads(request.content)


def session_json(**overrides: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "session_id": "ses_1",
        "rig_id": "rig_1",
        "mode": "desktop",
        "status": "active",
        "started_at": "2026-11-22T10:00:00Z",
        "action_count": 0,
        "idle_timeout_seconds": 900,
        "capture_mode": "sim",
        "ended_at": None,
        "ended_reason": None,
        "billed_minutes": 1,
        "duration_seconds": 5,
        "last_activity_at": None,
        "native_width": 1920,
        "native_height": 1080,
    }
    record.update(overrides)
    return record


def square_observation(targets: list[dict[str, Any]], **overrides: Any) -> dict[str, Any]:
    """An observe answer of a 100x100 desktop at its own size, with `targets`."""
    answer: dict[str, Any] = {
        "width": 100,
        "height": 100,
        "native_width": 100,
        "native_height": 100,
        "targets": targets,
    }
    answer.update(overrides)
    return answer


def error(status: int, text: str, **headers: str) -> httpx2.Response:
    return httpx2.Response(status, json={"error": text}, headers=headers)


def ok(payload: Any, status: int = 200) -> httpx2.Response:
    return httpx2.Response(status, json=payload)


class FakeSleep:
    """Records the waits instead of sleeping (sync and async)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)

    async def async_sleep(self, seconds: float) -> None:
        self.waits.append(seconds)


@pytest.fixture
def gateway() -> FakeGateway:
    return FakeGateway()


@pytest.fixture
def sleeps() -> FakeSleep:
    return FakeSleep()


@pytest.fixture
def client(gateway: FakeGateway, sleeps: FakeSleep) -> Iterator[Rigway]:
    with Rigway(
        API_KEY,
        BASE_URL,
        transport=httpx2.MockTransport(gateway),
        sleep=sleeps,
        clock=lambda: NOW,
        jitter=lambda: 0.0,
    ) as rigway:
        yield rigway


@pytest.fixture
async def async_client(gateway: FakeGateway, sleeps: FakeSleep) -> AsyncIterator[AsyncRigway]:
    async with AsyncRigway(
        API_KEY,
        BASE_URL,
        transport=httpx2.MockTransport(gateway),
        sleep=sleeps.async_sleep,
        clock=lambda: NOW,
        jitter=lambda: 0.0,
    ) as rigway:
        yield rigway


@pytest.fixture
def session_gateway(gateway: FakeGateway) -> FakeGateway:
    """A gateway that starts and ends `ses_1` and accepts input."""
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    gateway.on(
        "DELETE",
        "/v1/sessions/ses_1",
        ok(session_json(status="ended", ended_reason="client", ended_at="2026-11-22T10:01:00Z")),
    )
    gateway.on(
        "POST",
        "/v1/sessions/ses_1/input",
        lambda r: ok({"ok": True, "count": len(body_of(r)["events"])}),
    )
    return gateway
