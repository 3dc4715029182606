"""Computer-use adapters on recorded action samples, geometry, and the runners."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from rigway.client import Rigway, UnsupportedActionError, WaitResult
from rigway.client.computer_use import (
    ActionPlan,
    AsyncComputerUseRunner,
    ComputerUseRunner,
    HostWait,
    ScreenGeometry,
    anthropic_key,
    anthropic_tool_param,
    openai_keys,
    openai_tool_param,
    plan_anthropic_action,
    plan_openai_action,
)

from .conftest import FakeGateway, body_of, ok

FIXTURES = Path(__file__).parent / "fixtures"
ANTHROPIC = json.loads((FIXTURES / "anthropic_actions.json").read_text(encoding="utf-8"))
OPENAI = json.loads((FIXTURES / "openai_actions.json").read_text(encoding="utf-8"))


def geometry_of(fixture: dict[str, Any]) -> ScreenGeometry:
    return ScreenGeometry(**fixture["geometry"])


def check_plan(plan: ActionPlan, case: dict[str, Any]) -> None:
    assert [event.to_json() for event in plan.events] == case["events"]
    assert plan.wait_s == case.get("wait_s", 0.0)
    assert plan.wants_screenshot is case.get("screenshot", True)
    assert plan.wants_cursor is case.get("cursor", False)
    expected_zoom = case.get("zoom")
    assert (None if plan.zoom is None else list(plan.zoom)) == expected_zoom


@pytest.mark.parametrize("case", ANTHROPIC["cases"], ids=lambda c: c["name"])
def test_anthropic_samples(case: dict[str, Any]) -> None:
    check_plan(plan_anthropic_action(case["block"]["input"], geometry_of(ANTHROPIC)), case)


@pytest.mark.parametrize("case", OPENAI["cases"], ids=lambda c: c["name"])
def test_openai_samples(case: dict[str, Any]) -> None:
    check_plan(plan_openai_action(case["item"]["action"], geometry_of(OPENAI)), case)


@pytest.mark.parametrize("block", ANTHROPIC["unsupported"], ids=lambda b: b["id"])
def test_anthropic_unsupported_or_malformed_actions_raise(block: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedActionError):
        plan_anthropic_action(block["input"], geometry_of(ANTHROPIC))


@pytest.mark.parametrize("item", OPENAI["unsupported"], ids=lambda i: i["id"])
def test_openai_unsupported_or_malformed_actions_raise(item: dict[str, Any]) -> None:
    with pytest.raises(UnsupportedActionError):
        plan_openai_action(item["action"], geometry_of(OPENAI))


def test_drag_without_an_end_tells_the_model_what_is_missing() -> None:
    with pytest.raises(UnsupportedActionError, match="coordinate is required"):
        plan_anthropic_action(
            {"action": "left_click_drag", "start_coordinate": [1, 1]}, geometry_of(ANTHROPIC)
        )


def test_a_drag_leaves_the_pointer_at_its_end() -> None:
    plan = plan_openai_action(
        {"type": "drag", "path": [{"x": 0, "y": 0}, {"x": 5, "y": 5}]}, geometry_of(OPENAI)
    )
    assert plan.pointer == (11, 11)


@pytest.mark.parametrize(
    ("native", "image"),
    [
        ((1920, 1080), (1429, 804)),  # the 1.15 MP limit binds
        ((3840, 2160), (1429, 804)),
        ((2560, 1600), (1356, 847)),
        ((5120, 1440), (1568, 441)),  # the 1568 px long-edge limit binds
        ((1024, 768), (1024, 768)),  # already small: never upscaled
    ],
)
def test_anthropic_geometry_fits_both_limits(
    native: tuple[int, int], image: tuple[int, int]
) -> None:
    geometry = ScreenGeometry.for_anthropic(*native)
    assert (geometry.image_w, geometry.image_h) == image
    assert geometry.image_w * geometry.image_h <= 1_150_000
    assert geometry.long_edge <= 1568


def test_geometry_round_trips_every_image_pixel() -> None:
    geometry = ScreenGeometry.for_anthropic(1920, 1080)
    for x in range(geometry.image_w):
        native = geometry.to_native(x, x % geometry.image_h)
        assert geometry.to_image(*native) == (x, x % geometry.image_h)


def test_openai_geometry_is_the_declared_display() -> None:
    geometry = ScreenGeometry.for_openai(1920, 1080, 1024, 576)
    assert geometry.to_native(512, 288) == (960, 540)
    assert geometry.to_native(1023, 575) == (1919, 1079)


def test_tool_params_declare_the_image_size() -> None:
    geometry = ScreenGeometry.for_anthropic(1920, 1080)
    assert anthropic_tool_param(geometry) == {
        "type": "computer_20250124",
        "name": "computer",
        "display_width_px": 1429,
        "display_height_px": 804,
    }
    assert openai_tool_param(ScreenGeometry.for_openai(1920, 1080, 1280, 720)) == {
        "type": "computer_use_preview",
        "display_width": 1280,
        "display_height": 720,
        "environment": "windows",
    }


def test_key_name_helpers() -> None:
    assert anthropic_key("alt+Tab") == ["alt+tab"]
    assert anthropic_key("Control_L+c") == ["ctrl+c"]
    assert anthropic_key("+") == ["+"]
    assert anthropic_key("ctrl++") == ["ctrl++"]
    assert openai_keys(["CMD", "OPTION", "Esc"]) == "win+alt+escape"
    with pytest.raises(UnsupportedActionError):
        anthropic_key("   ")
    with pytest.raises(UnsupportedActionError):
        anthropic_key("ctrl++a")


def test_long_text_is_split_into_type_events() -> None:
    text = "a" * 25_000
    plan = plan_openai_action({"type": "type", "text": text}, geometry_of(OPENAI))
    assert [len(e.text or "") for e in plan.events] == [10_000, 10_000, 5_000]


# ----------------------------------------------------------------------- runners

SHOT_HEADERS = {
    "X-Screenshot-Width": "1429",
    "X-Screenshot-Height": "804",
    "X-Screenshot-Native-Width": "1920",
    "X-Screenshot-Native-Height": "1080",
}


@pytest.fixture
def runner_gateway(session_gateway: FakeGateway) -> FakeGateway:
    session_gateway.on(
        "GET",
        "/v1/sessions/ses_1/screenshot",
        httpx2.Response(200, content=b"\xff\xd8jpeg", headers=SHOT_HEADERS),
    )
    return session_gateway


@pytest.fixture
def runner(client: Rigway, runner_gateway: FakeGateway) -> ComputerUseRunner:
    session = client.sessions.create(rig_id="rig_1")
    geometry = ScreenGeometry.for_anthropic(1920, 1080)
    return ComputerUseRunner(session, geometry, dialect="anthropic")


def test_runner_sends_native_events_then_a_model_sized_screenshot(
    runner: ComputerUseRunner, runner_gateway: FakeGateway
) -> None:
    result = runner.run({"action": "left_click", "coordinate": [714, 402]})
    (input_request,) = runner_gateway.calls("POST", "/v1/sessions/ses_1/input")
    assert body_of(input_request) == {
        "events": [{"type": "mouse_click", "x": 960, "y": 540, "button": "left"}],
        "settle": {},
    }
    assert dict(runner_gateway.last.url.params) == {"max_width": "1429"}
    assert result.screenshot is not None
    content = result.anthropic_content()
    assert content[0]["type"] == "image"
    assert content[0]["source"]["media_type"] == "image/jpeg"


def test_runner_reports_the_pointer_for_cursor_position(
    runner: ComputerUseRunner, runner_gateway: FakeGateway
) -> None:
    with pytest.raises(UnsupportedActionError, match="unknown"):
        runner.run({"action": "cursor_position"})
    runner.run({"action": "mouse_move", "coordinate": [714, 402]})
    sent = len(runner_gateway.requests)
    result = runner.run({"action": "cursor_position"})
    assert result.text == "X=714,Y=402"
    assert result.screenshot is None
    assert len(runner_gateway.requests) == sent  # nothing sent to the rig


def test_runner_waits_on_the_rig_for_a_change_then_for_quiet(
    runner: ComputerUseRunner, runner_gateway: FakeGateway
) -> None:
    runner_gateway.on(
        "POST",
        "/v1/sessions/ses_1/wait",
        ok({"met": True, "waited_ms": 500}),
        ok({"met": True, "waited_ms": 300}),
    )
    result = runner.run({"action": "wait", "duration": 2})
    waits = [body_of(r) for r in runner_gateway.calls("POST", "/v1/sessions/ses_1/wait")]
    assert waits == [
        {"until": "change", "timeout_ms": 2000},
        {"until": "quiet", "timeout_ms": 1500, "quiet_ms": 300},
    ]
    assert runner_gateway.calls("POST", "/v1/sessions/ses_1/input") == []
    assert result.screenshot is not None


def test_runner_without_settle_sends_bare_batches(
    client: Rigway, runner_gateway: FakeGateway
) -> None:
    session = client.sessions.create(rig_id="rig_1")
    geometry = ScreenGeometry.for_anthropic(1920, 1080)
    runner = ComputerUseRunner(session, geometry, dialect="anthropic", settle=False)
    runner.run({"action": "key", "text": "Return"})
    last_input = runner_gateway.calls("POST", "/v1/sessions/ses_1/input")[-1]
    assert body_of(last_input) == {"events": [{"type": "key_press", "key": "enter"}]}


def test_runner_drags_in_one_settled_batch(
    runner: ComputerUseRunner, runner_gateway: FakeGateway
) -> None:
    runner.run({"action": "left_click_drag", "start_coordinate": [0, 0], "coordinate": [714, 402]})
    (input_request,) = runner_gateway.calls("POST", "/v1/sessions/ses_1/input")
    sent = body_of(input_request)
    assert [e["type"] for e in sent["events"]] == ["mouse_down", "mouse_move", "mouse_up"]
    assert sent["settle"] == {}


@pytest.mark.parametrize(
    ("seconds", "results", "expected"),
    [
        # nothing changes: one change wait takes the whole duration, as a sleep would
        (2.0, [(False, 2000)], [("change", 2000, None)]),
        # a change, then still: quiet in what is left
        (1.0, [(True, 100), (True, 300)], [("change", 1000, None), ("quiet", 900, 300)]),
        # a change with too little left for a quiet wait
        (1.0, [(True, 990)], [("change", 1000, None)]),
        # longer than one host wait: in turns
        (
            45.0,
            [(False, 30000), (False, 15000)],
            [("change", 30000, None), ("change", 15000, None)],
        ),
        (0.0, [], []),
    ],
)
def test_host_wait_is_never_longer_than_the_duration(
    seconds: float,
    results: list[tuple[bool, int]],
    expected: list[tuple[str, int, int | None]],
) -> None:
    wait = HostWait(seconds)
    steps = []
    for met, waited_ms in results:
        step = wait.next()
        assert step is not None
        steps.append(step)
        wait.record(WaitResult(met=met, waited_ms=waited_ms))
    assert steps == expected
    assert wait.next() is None


def test_runner_zoom_asks_for_the_native_region(
    runner: ComputerUseRunner, runner_gateway: FakeGateway
) -> None:
    runner.run({"action": "zoom", "region": [0, 0, 714, 402]})
    params = dict(runner_gateway.last.url.params)
    assert params == {"max_width": "1429", "x": "0", "y": "0", "w": "960", "h": "540"}


def test_runner_refuses_unsupported_actions_before_sending(
    runner: ComputerUseRunner, runner_gateway: FakeGateway
) -> None:
    sent = len(runner_gateway.requests)
    with pytest.raises(UnsupportedActionError):
        runner.run({"action": "teleport", "coordinate": [1, 1]})
    assert len(runner_gateway.requests) == sent


async def test_async_runner_with_openai_actions(
    async_client: Any, runner_gateway: FakeGateway
) -> None:
    runner_gateway.on("POST", "/v1/sessions/ses_1/wait", ok({"met": False, "waited_ms": 1000}))
    session = await async_client.sessions.create(rig_id="rig_1")
    geometry = ScreenGeometry.for_openai(1920, 1080, 1280, 720)
    runner = AsyncComputerUseRunner(session, geometry, dialect="openai")
    result = await runner.run({"type": "click", "button": "left", "x": 640, "y": 360})
    input_request = runner_gateway.calls("POST", "/v1/sessions/ses_1/input")[-1]
    assert body_of(input_request)["events"] == [
        {"type": "mouse_click", "x": 960, "y": 540, "button": "left"}
    ]
    output = result.openai_output()
    assert output["type"] == "computer_screenshot"
    assert output["image_url"].startswith("data:image/jpeg;base64,")
    await runner.run({"type": "wait"})
    assert body_of(runner_gateway.calls("POST", "/v1/sessions/ses_1/wait")[-1]) == {
        "until": "change",
        "timeout_ms": 1000,
    }


def test_openai_output_needs_a_screenshot() -> None:
    from rigway.client.computer_use import ActionResult

    with pytest.raises(ValueError, match="screenshot"):
        ActionResult(plan=ActionPlan(wants_screenshot=False)).openai_output()
