"""AsyncRigway behaves like Rigway: same requests, errors, retries and session ending."""

from __future__ import annotations

import httpx2
import pytest

from rigway.client import (
    AsyncRigway,
    AsyncSessionHandle,
    AuthenticationError,
    SessionEndedError,
    TargetNotFoundError,
)

from .conftest import FakeGateway, FakeSleep, body_of, error, ok, session_json

END = ("DELETE", "/v1/sessions/ses_1")
TARGETS = {
    "width": 100,
    "height": 100,
    "targets": [{"id": "t1", "x": 10, "y": 10, "w": 10, "h": 4, "name": "OK"}],
}


class BodyFailed(Exception):
    pass


async def test_rigs_list_and_get(async_client: AsyncRigway, gateway: FakeGateway) -> None:
    rig = {"id": "rig_1", "name": "n", "online": True, "api_access_enabled": True}
    gateway.on("GET", "/v1/rigs", ok({"rigs": [rig]}))
    gateway.on("GET", "/v1/rigs/rig_1", ok(rig))
    assert [r.id for r in await async_client.rigs.list()] == ["rig_1"]
    assert (await async_client.rigs.get("rig_1")).online


async def test_awaited_create_returns_a_handle(
    async_client: AsyncRigway, session_gateway: FakeGateway
) -> None:
    session = await async_client.sessions.create(rig_id="rig_1", idle_timeout_seconds=120)
    assert isinstance(session, AsyncSessionHandle)
    assert body_of(session_gateway.last) == {"rig_id": "rig_1", "idle_timeout_seconds": 120}
    await session.click(0, 5)
    assert body_of(session_gateway.last) == {
        "events": [{"type": "mouse_click", "x": 0, "y": 5, "button": "left"}]
    }
    await session.end()
    assert session.status == "ended"


async def test_async_with_create_ends_the_session_on_exception(
    async_client: AsyncRigway, session_gateway: FakeGateway
) -> None:
    async def body() -> None:
        async with async_client.sessions.create(rig_id="rig_1") as session:
            await session.type_text("x")
            raise BodyFailed

    with pytest.raises(BodyFailed):
        await body()
    assert len(session_gateway.calls(*END)) == 1
    assert len(session_gateway.calls("POST", "/v1/sessions")) == 1


async def test_async_end_failure_is_a_note_not_a_mask(
    async_client: AsyncRigway, session_gateway: FakeGateway
) -> None:
    session_gateway.on(*END, httpx2.ConnectError("refused"))
    with pytest.raises(BodyFailed) as caught:
        async with await async_client.sessions.create(rig_id="rig_1"):
            raise BodyFailed
    assert "ses_1" in caught.value.__notes__[0]


async def test_async_already_ended_session_is_quiet(
    async_client: AsyncRigway, session_gateway: FakeGateway
) -> None:
    session_gateway.on(*END, error(410, "session_ended"))
    async with async_client.sessions.create(rig_id="rig_1"):
        pass
    assert len(session_gateway.calls(*END)) == 1


async def test_async_429_is_waited_out(
    async_client: AsyncRigway, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    gateway.on(
        "GET",
        "/v1/sessions",
        error(429, "rate_limited", **{"Retry-After": "2"}),
        ok({"sessions": [session_json()]}),
    )
    assert len(await async_client.sessions.list()) == 1
    assert sleeps.waits == [2.0]


@pytest.mark.parametrize(
    ("status", "code", "error_class"),
    [(401, "invalid_api_key", AuthenticationError), (410, "session_ended", SessionEndedError)],
)
async def test_async_stop_errors_are_raised_at_once(
    async_client: AsyncRigway,
    gateway: FakeGateway,
    sleeps: FakeSleep,
    status: int,
    code: str,
    error_class: type[Exception],
) -> None:
    gateway.on("GET", "/v1/sessions/ses_1", error(status, code, **{"X-Request-Id": "r1"}))
    with pytest.raises(error_class) as caught:
        await async_client.sessions.get("ses_1")
    assert getattr(caught.value, "request_id", None) == "r1"
    assert len(gateway.requests) == 1
    assert sleeps.waits == []


async def test_async_screenshot_and_target_click(
    async_client: AsyncRigway, session_gateway: FakeGateway
) -> None:
    headers = {
        "X-Screenshot-Width": "960",
        "X-Screenshot-Height": "540",
        "X-Screenshot-Native-Width": "1920",
        "X-Screenshot-Native-Height": "1080",
    }
    session_gateway.on(
        "GET", "/v1/sessions/ses_1/screenshot", httpx2.Response(200, content=b"j", headers=headers)
    )
    session_gateway.on("GET", "/v1/sessions/ses_1/targets", ok(TARGETS))
    session = await async_client.sessions.create(rig_id="rig_1")
    shot = await session.screenshot(max_width=960)
    assert dict(session_gateway.last.url.params) == {"max_width": "960"}
    assert shot.to_native(480, 270) == (961, 541)
    await session.click(target="t1")  # unknown yet: fetched once
    assert body_of(session_gateway.last)["events"][0] == {
        "type": "mouse_click",
        "x": 15,
        "y": 12,
        "button": "left",
    }
    with pytest.raises(TargetNotFoundError):
        await session.click(target="nope")


async def test_async_client_closes_its_http_client(gateway: FakeGateway) -> None:
    client = AsyncRigway("k", "http://g", transport=httpx2.MockTransport(gateway))
    async with client:
        pass
    assert client._http.is_closed


SHOT_HEADERS = {
    "X-Screenshot-Width": "4",
    "X-Screenshot-Height": "2",
    "X-Screenshot-Native-Width": "4",
    "X-Screenshot-Native-Height": "2",
}
OBSERVE = {"width": 4, "height": 2, "native_width": 4, "native_height": 2, "changed": True}
DIRTY = {"width": 4, "height": 2, "available": True, "capture_mode": "sim", "rects": []}
STREAM = {"signaling_url": "ws://g/s", "viewer_token": "t", "rig_id": "rig_1"}


def parity_gateway() -> FakeGateway:
    gateway = FakeGateway()
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    gateway.on("GET", "/v1/sessions/ses_1", ok(session_json()))
    gateway.on("DELETE", "/v1/sessions/ses_1", ok(session_json(status="ended")))
    gateway.on("POST", "/v1/sessions/ses_1/input", ok({"ok": True, "count": 1}))
    gateway.on(
        "GET",
        "/v1/sessions/ses_1/screenshot",
        lambda r: httpx2.Response(200, content=b"j", headers=SHOT_HEADERS),
    )
    gateway.on("GET", "/v1/sessions/ses_1/observe", ok(OBSERVE))
    gateway.on("GET", "/v1/sessions/ses_1/dirty", ok(DIRTY))
    gateway.on("GET", "/v1/sessions/ses_1/targets", ok(TARGETS))
    gateway.on("GET", "/v1/sessions/ses_1/stream", ok(STREAM))
    gateway.on("POST", "/v1/sessions/ses_1/app/launch", ok({"ok": True, "pid": 1}))
    gateway.on("POST", "/v1/sessions/ses_1/app/kill", ok({"ok": True, "killed": [1]}))
    return gateway


def recorded(gateway: FakeGateway) -> list[tuple[str, str, bytes, bytes]]:
    return [(r.method, r.url.path, r.url.query, r.content) for r in gateway.requests]


async def test_async_session_methods_send_what_the_sync_ones_send() -> None:
    from rigway.client import Rigway

    sync_gateway, async_gateway = parity_gateway(), parity_gateway()
    with Rigway("k", "http://g", transport=httpx2.MockTransport(sync_gateway)) as client:
        with client.sessions.create(rig_id="rig_1", mode="desktop") as s:
            s.refresh()
            s.screenshot(max_width=2, quality=50, region=(0, 0, 4, 2))
            s.observe(quality=40, mark=True)
            s.dirty()
            s.targets()
            s.stream()
            s.click(1, 1, button="middle")
            s.double_click(target="t1")
            s.move(2, 2)
            s.scroll(0, -1, 3, 1)
            s.key("ctrl+s")
            s.key_down("shift")
            s.key_up("shift")
            s.type_text("x")
            s.input([{"type": "key_press", "key": "a"}])
            s.launch("calc", ["-x"])
            s.kill(1)
        client.sessions.attach("ses_1")
    transport = httpx2.MockTransport(async_gateway)
    async with AsyncRigway("k", "http://g", transport=transport) as aclient:
        async with aclient.sessions.create(rig_id="rig_1", mode="desktop") as a:
            await a.refresh()
            await a.screenshot(max_width=2, quality=50, region=(0, 0, 4, 2))
            await a.observe(quality=40, mark=True)
            await a.dirty()
            await a.targets()
            await a.stream()
            await a.click(1, 1, button="middle")
            await a.double_click(target="t1")
            await a.move(2, 2)
            await a.scroll(0, -1, 3, 1)
            await a.key("ctrl+s")
            await a.key_down("shift")
            await a.key_up("shift")
            await a.type_text("x")
            await a.input([{"type": "key_press", "key": "a"}])
            await a.launch("calc", ["-x"])
            await a.kill(1)
        await aclient.sessions.attach("ses_1")
    assert recorded(async_gateway) == recorded(sync_gateway)
    assert len(sync_gateway.requests) == 20
