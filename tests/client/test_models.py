"""Models: screenshot coordinate mapping, target search, forward-compatible parsing."""

from __future__ import annotations

import base64

import httpx2

from rigway.client import (
    DirtyRects,
    ObserveResult,
    Region,
    Rig,
    Rigway,
    Screenshot,
    Session,
    Target,
    TargetList,
)

from .conftest import FakeGateway, ok, session_json


def shot(width: int, height: int, region: Region | None = None) -> Screenshot:
    return Screenshot(
        jpeg=b"j", width=width, height=height, native_width=1920, native_height=1080, region=region
    )


def test_to_native_is_identity_at_native_size() -> None:
    s = shot(1920, 1080)
    assert s.to_native(0, 0) == (0, 0)
    assert s.to_native(1919, 1079) == (1919, 1079)
    assert s.to_native(640, 360) == (640, 360)


def test_to_native_maps_region_and_max_width() -> None:
    # Region 800x600 at (100, 200), capped to max_width=400: a 400x300 image, scale 2.
    s = shot(400, 300, Region(100, 200, 800, 600))
    assert s.to_native(0, 0) == (101, 201)  # centre of the 2x2 native block
    assert s.to_native(200, 150) == (501, 501)
    assert s.to_native(399, 299) == (899, 799)
    assert s.to_native(400, 300) == (899, 799)  # clamped into the region
    assert s.from_native(501, 501) == (200, 150)
    assert s.from_native(0, 0) == (0, 0)


def test_to_native_with_uneven_scale() -> None:
    s = shot(1280, 720)  # 1920 / 1280 = 1.5
    assert s.to_native(0, 0) == (0, 0)
    assert s.to_native(1, 1) == (2, 2)
    assert s.to_native(1279, 719) == (1919, 1079)
    assert s.to_native(639.6, 359.2) == (960, 539)


def test_screenshot_from_the_handle_maps_region_and_max_width(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    headers = {
        "X-Screenshot-Width": "400",
        "X-Screenshot-Height": "300",
        "X-Screenshot-Native-Width": "1920",
        "X-Screenshot-Native-Height": "1080",
    }
    gateway.on(
        "GET", "/v1/sessions/ses_1/screenshot", httpx2.Response(200, content=b"j", headers=headers)
    )
    session = client.sessions.create(rig_id="rig_1")
    s = session.screenshot(max_width=400, region=Region(100, 200, 800, 600))
    assert s.to_native(200, 150) == (501, 501)


def test_observe_result_decodes_image_and_keeps_region(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    body = {
        "width": 400,
        "height": 300,
        "native_width": 1920,
        "native_height": 1080,
        "timestamp": 1,
        "jpeg_base64": base64.b64encode(b"\xff\xd8x").decode(),
        "dirty": {"width": 1920, "height": 1080, "rects": []},
        "changed": False,
        "targets": [],
        "text": {
            "window_title": "Notepad",
            "window_role": "frame",
            "targets": [],
            "summary": "focus: none",
        },
        "marked": False,
        "timing": {
            "total_ms": 12,
            "screenshot_rtt_ms": 8,
            "dirty_rtt_ms": 1,
            "targets_rtt_ms": 3,
            "host_jpeg_ms": None,
            "host_uia_ms": 2,
            "image": True,
        },
    }
    gateway.on("GET", "/v1/sessions/ses_1/observe", ok(body))
    session = client.sessions.create(rig_id="rig_1")
    result = session.observe(max_width=400, region=(100, 200, 800, 600))
    assert result.jpeg == b"\xff\xd8x"
    assert result.text is not None
    assert result.text.window_title == "Notepad"
    assert result.timing is not None
    assert result.timing.host_jpeg_ms is None
    assert result.to_native(200, 150) == (501, 501)
    image = result.screenshot()
    assert image is not None
    assert image.to_native(200, 150) == (501, 501)


def test_observe_without_image() -> None:
    result = ObserveResult.model_validate(
        {"width": 10, "height": 10, "native_width": 10, "native_height": 10, "changed": True}
    )
    assert result.jpeg is None
    assert result.screenshot() is None


TARGETS = [
    Target(id="a", x=0, y=0, w=10, h=10, role="button", name="Save as…"),
    Target(id="b", x=20, y=0, w=10, h=10, role="menu item", name="Save"),
    Target(id="c", x=40, y=0, w=10, h=10, role="button", name="Save"),
]


def test_find_target_prefers_exact_name_and_filters_role() -> None:
    result = TargetList(width=100, height=100, targets=TARGETS)
    assert result.find_target(name="save") is TARGETS[1]
    assert result.find_target(name="save", role="Button") is TARGETS[2]
    assert result.find_target(name="save a", role="button") is TARGETS[0]
    assert result.find_target(role="menu item") is TARGETS[1]
    assert result.find_target(name="open") is None


def test_find_target_on_observe_result() -> None:
    result = ObserveResult(width=1, height=1, native_width=1, native_height=1, targets=TARGETS)
    assert result.find_target(name="Save", role="button") is TARGETS[2]


def test_target_centre_and_contains() -> None:
    target = Target(id="t", x=10, y=20, w=31, h=10)
    assert target.center == (25, 25)
    assert target.contains(10, 20)
    assert not target.contains(41, 20)


def test_session_parses_every_documented_field_and_tolerates_new_ones() -> None:
    record = session_json(
        status="ended",
        ended_reason="owner_kill",
        ended_at="2026-11-22T10:03:00Z",
        billed_minutes=4,
        duration_seconds=181.5,
        last_activity_at="2026-11-22T10:02:00Z",
        brand_new_field={"x": 1},
    )
    session = Session.model_validate(record)
    assert (session.ended_reason, session.billed_minutes, session.duration_seconds) == (
        "owner_kill",
        4,
        181.5,
    )
    assert session.ended_at is not None
    assert session.last_activity_at is not None
    assert session.model_extra == {"brand_new_field": {"x": 1}}


def test_rig_tolerates_extra_fields() -> None:
    rig = Rig.model_validate(
        {
            "id": "r",
            "name": "n",
            "online": True,
            "api_access_enabled": False,
            "gpu": "g",
            "os": "o",
            "tpm": "2.0",
        }
    )
    assert rig.model_extra == {"tpm": "2.0"}


def test_dirty_changed_rule() -> None:
    assert not DirtyRects(width=1, height=1, available=True, rects=[]).changed
    assert DirtyRects(width=1, height=1, available=True, rects=[(0, 0, 1, 1)]).changed
    assert DirtyRects(width=1, height=1, available=False, rects=[]).changed


def test_screenshot_repr_hides_the_bytes() -> None:
    assert "jpeg" not in repr(shot(10, 10))


def test_an_app_sessions_screenshot_maps_through_its_window(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    headers = {
        "X-Screenshot-Width": "240",
        "X-Screenshot-Height": "160",
        "X-Screenshot-Native-Width": "1920",
        "X-Screenshot-Native-Height": "1080",
        "X-App-Window": "80,60,480,320",
    }
    gateway.on(
        "GET", "/v1/sessions/ses_1/screenshot", httpx2.Response(200, content=b"j", headers=headers)
    )
    session = client.sessions.create(rig_id="rig_1", mode="app")
    s = session.screenshot(max_width=240)
    assert s.region == Region(80, 60, 480, 320)
    assert s.to_native(120, 80) == (321, 221)  # the centre of the 2x2 native pixels


def test_an_app_sessions_observe_maps_through_its_window(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    body = {
        "width": 480,
        "height": 320,
        "native_width": 1920,
        "native_height": 1080,
        "jpeg_base64": base64.b64encode(b"\xff\xd8x").decode(),
        "app_window": [80, 60, 480, 320],
    }
    gateway.on("GET", "/v1/sessions/ses_1/observe", ok(body))
    session = client.sessions.create(rig_id="rig_1", mode="app")
    result = session.observe()
    assert result.app_window == (80, 60, 480, 320)
    assert result.to_native(10, 20) == (90, 80)
    shown = result.screenshot()
    assert shown is not None
    assert shown.region == Region(80, 60, 480, 320)
