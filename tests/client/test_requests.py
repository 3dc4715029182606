"""Request shapes: method, path, query and body of every API-key endpoint."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

from rigway.client import InputEvent, Rigway, SessionHandle, Target, TargetNotFoundError
from rigway.client._core import USER_AGENT

from .conftest import API_KEY, FakeGateway, body_of, ok, session_json

RIG = {
    "id": "rig_1",
    "name": "Desk",
    "online": True,
    "gpu": "RTX",
    "os": "Windows 11",
    "api_access_enabled": True,
}
TARGETS = {
    "width": 1920,
    "height": 1080,
    "targets": [
        {"id": "t_save", "x": 100, "y": 40, "w": 80, "h": 20, "role": "button", "name": "Save"},
        {"id": "t_name", "x": 300, "y": 200, "w": 200, "h": 30, "role": "edit", "name": "Name"},
    ],
}


@pytest.fixture
def session(client: Rigway, session_gateway: FakeGateway) -> SessionHandle:
    return client.sessions.create(rig_id="rig_1")


def events_sent(gateway: FakeGateway) -> Any:
    return body_of(gateway.calls("POST", "/v1/sessions/ses_1/input")[-1])["events"]


def test_requests_carry_bearer_key_and_user_agent(client: Rigway, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/rigs", ok({"rigs": [RIG]}))
    client.rigs.list()
    assert gateway.last.headers["Authorization"] == f"Bearer {API_KEY}"
    assert gateway.last.headers["User-Agent"] == USER_AGENT
    assert gateway.last.headers["Accept"] == "application/json"


def test_rigs_list_returns_typed_rigs(client: Rigway, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/rigs", ok({"rigs": [RIG, {**RIG, "id": "rig_2", "online": False}]}))
    rigs = client.rigs.list()
    assert [(r.id, r.online, r.api_access_enabled) for r in rigs] == [
        ("rig_1", True, True),
        ("rig_2", False, True),
    ]
    assert str(gateway.last.url) == "http://gateway.test/v1/rigs"


def test_rigs_get_and_wake_paths(client: Rigway, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/rigs/rig_1", ok({**RIG, "native_width": 2560, "agent_version": "1.2"}))
    gateway.on(
        "POST", "/v1/rigs/rig_1/wake", ok({"ok": True, "rig_id": "rig_1", "via": "gateway"}, 202)
    )
    rig = client.rigs.get("rig_1")
    assert rig.native_width == 2560
    wake = client.rigs.wake("rig_1")
    assert (wake.ok, wake.via, wake.already_online) == (True, "gateway", False)
    assert gateway.last.content == b""


def test_ids_are_one_path_segment(client: Rigway, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/rigs/a%2F..%2Fkeys", ok(RIG))
    client.rigs.get("a/../keys")
    assert gateway.last.url.raw_path == b"/v1/rigs/a%2F..%2Fkeys"


def test_agent_latest(client: Rigway, gateway: FakeGateway) -> None:
    release = {
        "version": "1.4.0",
        "download_url": "https://x/a.zip",
        "sha256_url": "https://x/a.sha256",
        "sha256": None,
    }
    gateway.on("GET", "/v1/agent/latest", ok(release))
    assert client.agent.latest().version == "1.4.0"


def test_sessions_create_sends_only_given_fields(client: Rigway, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    client.sessions.create(rig_id="rig_1")
    assert body_of(gateway.last) == {"rig_id": "rig_1"}
    client.sessions.create(rig_id="rig_1", mode="app", idle_timeout_seconds=60)
    assert body_of(gateway.last) == {"rig_id": "rig_1", "mode": "app", "idle_timeout_seconds": 60}


def test_sessions_create_returns_handle_with_all_fields(
    client: Rigway, session_gateway: FakeGateway
) -> None:
    handle = client.sessions.create(rig_id="rig_1")
    assert (handle.id, handle.rig_id, handle.status) == ("ses_1", "rig_1", "active")
    assert (handle.native_width, handle.native_height) == (1920, 1080)
    assert handle.info.capture_mode == "sim"
    assert handle.info.billed_minutes == 1


def test_sessions_list_get_end(client: Rigway, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/sessions", ok({"sessions": [session_json()]}))
    gateway.on("GET", "/v1/sessions/ses_1", ok(session_json(action_count=3)))
    gateway.on(
        "DELETE", "/v1/sessions/ses_1", ok(session_json(status="ended", ended_reason="client"))
    )
    assert [s.session_id for s in client.sessions.list()] == ["ses_1"]
    assert client.sessions.get("ses_1").action_count == 3
    final = client.sessions.end("ses_1")
    assert (final.status, final.ended_reason, final.is_active) == ("ended", "client", False)


def test_screenshot_query_and_headers(session: SessionHandle, gateway: FakeGateway) -> None:
    headers = {
        "Content-Type": "image/jpeg",
        "X-Screenshot-Width": "320",
        "X-Screenshot-Height": "240",
        "X-Screenshot-Native-Width": "1920",
        "X-Screenshot-Native-Height": "1080",
    }
    gateway.on(
        "GET",
        "/v1/sessions/ses_1/screenshot",
        httpx2.Response(200, content=b"\xff\xd8jpeg", headers=headers),
    )
    shot = session.screenshot(max_width=320, quality=70, region=(0, 100, 640, 480))
    request = gateway.last
    assert dict(request.url.params) == {
        "max_width": "320",
        "quality": "70",
        "x": "0",
        "y": "100",
        "w": "640",
        "h": "480",
    }
    assert request.headers["Accept"] == "image/jpeg"
    assert shot.jpeg == b"\xff\xd8jpeg"
    assert (shot.width, shot.height, shot.native_width, shot.native_height) == (
        320,
        240,
        1920,
        1080,
    )
    assert tuple(shot.region or ()) == (0, 100, 640, 480)


def test_screenshot_without_arguments_sends_no_query(
    session: SessionHandle, gateway: FakeGateway
) -> None:
    headers = {
        "X-Screenshot-Width": "4",
        "X-Screenshot-Height": "2",
        "X-Screenshot-Native-Width": "4",
        "X-Screenshot-Native-Height": "2",
    }
    gateway.on(
        "GET", "/v1/sessions/ses_1/screenshot", httpx2.Response(200, content=b"j", headers=headers)
    )
    session.screenshot()
    assert gateway.last.url.query == b""


def test_observe_sends_mark_and_image_flags(session: SessionHandle, gateway: FakeGateway) -> None:
    gateway.on(
        "GET",
        "/v1/sessions/ses_1/observe",
        ok(
            {
                "width": 1920,
                "height": 1080,
                "native_width": 1920,
                "native_height": 1080,
                "changed": False,
                "targets": TARGETS["targets"],
            }
        ),
    )
    session.observe()
    assert gateway.last.url.query == b""
    session.observe(max_width=800, mark=True, image=False)
    assert dict(gateway.last.url.params) == {"max_width": "800", "mark": "1", "image": "0"}


def test_dirty_targets_stream_paths(session: SessionHandle, gateway: FakeGateway) -> None:
    gateway.on(
        "GET",
        "/v1/sessions/ses_1/dirty",
        ok(
            {
                "width": 1920,
                "height": 1080,
                "available": True,
                "capture_mode": "dxgi",
                "rects": [[0, 0, 10, 10]],
            }
        ),
    )
    gateway.on("GET", "/v1/sessions/ses_1/targets", ok(TARGETS))
    gateway.on(
        "GET",
        "/v1/sessions/ses_1/stream",
        ok(
            {
                "signaling_url": "ws://g/sig",
                "viewer_token": "jwt",
                "rig_id": "rig_1",
                "session_id": "ses_1",
                "connect_url": "ws://g/sig?token=jwt",
                "expires_at": "2026-11-22T11:00:00Z",
                "ice_servers": [],
            }
        ),
    )
    dirty = session.dirty()
    assert dirty.rects == [(0, 0, 10, 10)]
    assert dirty.changed
    assert session.targets().find_target(name="save") is not None
    assert session.stream().connect_url == "ws://g/sig?token=jwt"


def test_click_at_zero_is_a_real_click(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session.click(0, 0)
    assert events_sent(session_gateway) == [
        {"type": "mouse_click", "x": 0, "y": 0, "button": "left"}
    ]


def test_click_without_point_clicks_where_the_pointer_is(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session.click(button="right")
    assert events_sent(session_gateway) == [{"type": "mouse_click", "button": "right"}]


def test_double_click_is_two_clicks_in_one_batch(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    result = session.double_click(5, 6)
    assert (
        events_sent(session_gateway)
        == [{"type": "mouse_click", "x": 5, "y": 6, "button": "left"}] * 2
    )
    assert result.count == 2


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (lambda s: s.move(10, 20), {"type": "mouse_move", "x": 10, "y": 20}),
        (lambda s: s.scroll(dy=-3), {"type": "mouse_scroll", "dx": 0, "dy": -3}),
        (
            lambda s: s.scroll(1, 0, x=5, y=0),
            {"type": "mouse_scroll", "dx": 1, "dy": 0, "x": 5, "y": 0},
        ),
        (lambda s: s.key("ctrl+s"), {"type": "key_press", "key": "ctrl+s"}),
        (lambda s: s.key_down("shift"), {"type": "key_down", "key": "shift"}),
        (lambda s: s.key_up("shift"), {"type": "key_up", "key": "shift"}),
        (lambda s: s.type_text("héllo 漢字"), {"type": "type_text", "text": "héllo 漢字"}),
    ],
)
def test_input_helpers_send_one_event(
    session: SessionHandle, session_gateway: FakeGateway, call: object, expected: object
) -> None:
    call(session)  # type: ignore[operator]
    request = session_gateway.last
    assert request.url.path == "/v1/sessions/ses_1/input"
    assert body_of(request) == {"events": [expected]}


def test_input_sends_raw_batches(session: SessionHandle, session_gateway: FakeGateway) -> None:
    raw = {"type": "mouse_click", "x": 1, "y": 2, "future_field": True}
    result = session.input([InputEvent.key_press("a", delay_ms=0), raw])
    assert events_sent(session_gateway) == [{"type": "key_press", "key": "a", "delay_ms": 0}, raw]
    assert (result.ok, result.count) == (True, 2)


@pytest.mark.parametrize("count", [0, 101])
def test_input_batch_size_is_checked_before_sending(
    session: SessionHandle, session_gateway: FakeGateway, count: int
) -> None:
    sent = len(session_gateway.requests)
    with pytest.raises(ValueError, match="batch"):
        session.input([InputEvent.key_press("a")] * count)
    assert len(session_gateway.requests) == sent


def test_click_needs_both_coordinates(session: SessionHandle) -> None:
    with pytest.raises(ValueError, match="together"):
        session.click(5)


def test_click_target_id_uses_latest_targets(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("GET", "/v1/sessions/ses_1/targets", ok(TARGETS))
    session.targets()
    session.click(target="t_save")
    assert events_sent(session_gateway) == [
        {"type": "mouse_click", "x": 140, "y": 50, "button": "left"}
    ]
    assert len(session_gateway.calls("GET", "/v1/sessions/ses_1/targets")) == 1


def test_click_unknown_target_id_refetches_once_then_raises(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("GET", "/v1/sessions/ses_1/targets", ok(TARGETS))
    with pytest.raises(TargetNotFoundError) as caught:
        session.click(target="t_gone")
    assert caught.value.target_id == "t_gone"
    assert len(session_gateway.calls("GET", "/v1/sessions/ses_1/targets")) == 1
    assert session_gateway.calls("POST", "/v1/sessions/ses_1/input") == []


def test_click_target_object_prefers_its_latest_box(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    stale = Target(id="t_name", x=0, y=0, w=10, h=10)
    session.click(target=stale)  # not in any snapshot yet: used as given, no fetch
    assert events_sent(session_gateway)[0]["x"] == 5
    session_gateway.on("GET", "/v1/sessions/ses_1/targets", ok(TARGETS))
    session.targets()
    session.double_click(target=stale)
    assert events_sent(session_gateway)[0] == {
        "type": "mouse_click",
        "x": 400,
        "y": 215,
        "button": "left",
    }


def test_click_with_target_and_point_is_refused(session: SessionHandle) -> None:
    with pytest.raises(ValueError, match="not both"):
        session.click(1, 2, target="t_save")


def test_launch_and_kill_bodies(session: SessionHandle, gateway: FakeGateway) -> None:
    gateway.on("POST", "/v1/sessions/ses_1/app/launch", ok({"ok": True, "pid": 4242}))
    gateway.on("POST", "/v1/sessions/ses_1/app/kill", ok({"ok": True, "killed": [4242]}))
    assert session.launch("notepad.exe", ["a.txt"]).pid == 4242
    assert body_of(gateway.last) == {"path": "notepad.exe", "args": ["a.txt"]}
    session.launch("calc")
    assert body_of(gateway.last) == {"path": "calc"}
    assert session.kill(4242).killed == [4242]
    assert body_of(gateway.last) == {"pid": 4242}
    session.kill()
    assert body_of(gateway.last) == {}


def test_refresh_and_end_update_the_handle(
    session: SessionHandle, session_gateway: FakeGateway
) -> None:
    session_gateway.on("GET", "/v1/sessions/ses_1", ok(session_json(action_count=7)))
    assert session.refresh().action_count == 7
    assert session.info.action_count == 7
    final = session.end()
    assert session.status == "ended"
    assert final.ended_reason == "client"


def test_attach_reads_the_session(client: Rigway, gateway: FakeGateway) -> None:
    gateway.on("GET", "/v1/sessions/ses_9", ok(session_json(session_id="ses_9")))
    assert client.sessions.attach("ses_9").id == "ses_9"
