"""The MCP tools over a fake gateway: every acting tool settles and observes in one
batch, click by number, id or name, drag, wait, and what the model reads back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, ImageContent, TextContent

from rigway.client import AsyncRigway
from rigway.mcp.server import LazySession, RigTools
from tests.client.conftest import API_KEY, BASE_URL, FakeGateway, body_of, ok, session_json

INPUT = "/v1/sessions/ses_1/input"
WAIT = "/v1/sessions/ses_1/wait"
OBSERVE = "/v1/sessions/ses_1/observe"
JPEG = "/9j/4AAQ"  # any base64: the tools pass it on
TARGETS = [
    {"id": "t_user", "x": 100, "y": 100, "w": 200, "h": 20, "role": "edit", "name": "Username"},
    {"id": "t_ok", "x": 400, "y": 300, "w": 80, "h": 20, "role": "button", "name": "OK"},
    {"id": "t_ok2", "x": 600, "y": 300, "w": 80, "h": 20, "role": "button", "name": "OK"},
]


def observation(**overrides: Any) -> dict[str, Any]:
    """A half-size observation of a 1920x1080 desktop."""
    result: dict[str, Any] = {
        "width": 960,
        "height": 540,
        "native_width": 1920,
        "native_height": 1080,
        "jpeg_base64": JPEG,
        "targets": TARGETS,
        "text": {"summary": "window Sign in (dialog), 3 targets", "targets": []},
        "frame_id": "frm_1",
    }
    result.update(overrides)
    return result


def acted(request: httpx2.Request) -> httpx2.Response:
    sent = body_of(request)
    answer: dict[str, Any] = {"ok": True, "count": len(sent["events"]), "events": []}
    if "settle" in sent:
        answer["settle"] = {"settled": True, "waited_ms": 120}
    if "observe" in sent:
        answer["observe"] = observation()
    return ok(answer)


@pytest.fixture
def gateway() -> FakeGateway:
    fake = FakeGateway()
    fake.on("POST", "/v1/sessions", ok(session_json(), 201))
    fake.on("POST", INPUT, acted)
    fake.on("GET", OBSERVE, ok(observation()))
    return fake


@pytest.fixture
async def tools(gateway: FakeGateway) -> AsyncIterator[RigTools]:
    async with AsyncRigway(API_KEY, BASE_URL, transport=httpx2.MockTransport(gateway)) as client:
        yield RigTools(LazySession(client, "rig_1"), max_width=960)


def text_of(answer: CallToolResult) -> str:
    return "\n".join(block.text for block in answer.content if isinstance(block, TextContent))


def images_in(answer: CallToolResult) -> int:
    return sum(isinstance(block, ImageContent) for block in answer.content)


def sent_events(gateway: FakeGateway) -> Any:
    return body_of(gateway.calls("POST", INPUT)[-1])["events"]


async def test_click_by_number_settles_and_observes_in_one_batch(
    tools: RigTools, gateway: FakeGateway
) -> None:
    await tools.observe()
    content = await tools.click(index=2)

    sent = body_of(gateway.calls("POST", INPUT)[0])
    assert sent == {
        "events": [{"type": "mouse_click", "x": 440, "y": 310, "button": "left"}],
        "settle": {},
        "observe": {"max_width": 960},
    }
    assert images_in(content) == 1
    lines = text_of(content).splitlines()
    assert lines[0] == "clicked left on target [2]; the screen settled after 120 ms"
    assert "[1] Username (edit) id=t_user" in lines
    assert len(gateway.calls("GET", OBSERVE)) == 1  # the click's own observe sufficed


async def test_click_by_id_or_name(tools: RigTools, gateway: FakeGateway) -> None:
    await tools.observe()
    await tools.click(target="t_ok2")
    by_id = sent_events(gateway)[0]["x"]
    await tools.click(target="username", double=True)
    by_name = [event["x"] for event in sent_events(gateway)]

    assert (by_id, by_name) == (640, [200, 200])


async def test_an_ambiguous_name_is_a_tool_error_with_the_candidates(
    tools: RigTools, gateway: FakeGateway
) -> None:
    await tools.observe()
    with pytest.raises(ToolError, match="t_ok2"):
        await tools.click(target="OK")
    assert gateway.calls("POST", INPUT) == []


async def test_observe_false_settles_and_answers_with_text_only(
    tools: RigTools, gateway: FakeGateway
) -> None:
    content = await tools.key("enter", observe=False)

    press = {"type": "key_press", "key": "enter"}
    assert body_of(gateway.last) == {"events": [press], "settle": {}}
    assert [type(block) for block in content.content] == [TextContent]
    assert text_of(content) == "pressed enter; the screen settled after 120 ms"


async def test_points_are_pixels_of_the_latest_image(tools: RigTools, gateway: FakeGateway) -> None:
    await tools.type_text("ada")  # its observe is a 960-wide image of 1920: scale 2
    await tools.click(x=100, y=50)
    clicked = sent_events(gateway)[0]
    await tools.drag([[10, 10], [20, 10], [30, 40]], button="right")
    dragged = sent_events(gateway)

    assert (clicked["x"], clicked["y"]) == (201, 101)
    assert dragged == [
        {"type": "mouse_down", "x": 21, "y": 21, "button": "right"},
        {"type": "mouse_move", "x": 41, "y": 21},
        {"type": "mouse_move", "x": 61, "y": 81},
        {"type": "mouse_up", "x": 61, "y": 81, "button": "right"},
    ]


async def test_scroll_and_drag_say_what_they_did(tools: RigTools) -> None:
    scrolled = await tools.scroll(dy=-2, observe=False)
    dragged = await tools.drag([[1, 2], [3, 4]], observe=False)

    assert text_of(scrolled).startswith("scrolled dx=0 dy=-2")
    assert text_of(dragged).startswith("dragged left from image 1,2 to 3,4")


async def test_a_malformed_path_or_click_is_refused_before_sending(
    tools: RigTools, gateway: FakeGateway
) -> None:
    with pytest.raises(ToolError, match=r"\[x, y\]"):
        await tools.drag([[1, 2, 3], [4, 5]])
    with pytest.raises(ToolError, match="one of"):
        await tools.click(index=1, x=1, y=2)
    with pytest.raises(ToolError, match="one of"):
        await tools.click()
    assert gateway.calls("POST", INPUT) == []


async def test_wait_for_a_target_then_observes(tools: RigTools, gateway: FakeGateway) -> None:
    gateway.on("POST", WAIT, ok({"met": True, "waited_ms": 240, "target": TARGETS[0]}))

    content = await tools.wait("target", name="user", timeout_ms=3000)

    assert body_of(gateway.calls("POST", WAIT)[0]) == {
        "until": "target",
        "timeout_ms": 3000,
        "target": {"name": "user"},
    }
    assert text_of(content).splitlines()[0] == "target after 240 ms: Username (edit) id=t_user"
    assert images_in(content) == 1


async def test_wait_not_met_without_observe(tools: RigTools, gateway: FakeGateway) -> None:
    gateway.on("POST", WAIT, ok({"met": False, "waited_ms": 5000}))

    content = await tools.wait("change", observe=False)

    assert text_of(content) == "not met: no change within 5000 ms"
    assert gateway.calls("GET", OBSERVE) == []
    with pytest.raises(ToolError, match="until=target"):
        await tools.wait("quiet", name="x")


async def test_launch_waits_for_the_window_then_observes(
    tools: RigTools, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions/ses_1/app/launch", ok({"ok": True, "pid": 42}))
    gateway.on("POST", WAIT, ok({"met": True, "waited_ms": 300}))

    content = await tools.launch("/usr/bin/xterm")

    waits = [body_of(request)["until"] for request in gateway.calls("POST", WAIT)]
    assert waits == ["change", "quiet"]
    assert text_of(content).startswith("launched /usr/bin/xterm as pid 42\n")
    assert images_in(content) == 1


async def test_a_stopped_batch_is_a_tool_error_with_its_code(
    tools: RigTools, gateway: FakeGateway
) -> None:
    body = {"error": "target_gone: event 0: t_user is gone", "events": [], "stopped_at": 0}
    gateway.on("POST", INPUT, httpx2.Response(409, json=body))
    await tools.observe()

    with pytest.raises(ToolError, match="target_gone"):
        await tools.click(index=1)
