"""What the observing tools return as structured content, and typing or scrolling into
a target, over a fake gateway."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server.mcpserver.exceptions import ToolError

from rigway.mcp._structured import Observation
from rigway.mcp.server import RigTools
from tests.client.conftest import FakeGateway, body_of
from tests.mcp.test_tools import INPUT, OBSERVE, gateway, tools

__all__ = ["gateway", "tools"]  # fixtures, shared with test_tools


def posted_events(gateway: FakeGateway) -> list[Any]:
    return [body_of(request)["events"] for request in gateway.calls("POST", INPUT)]


async def test_observe_returns_targets_geometry_and_state_as_structured_content(
    tools: RigTools,
) -> None:
    answer = await tools.observe()

    structured = answer.structured_content
    assert structured is not None
    Observation.model_validate(structured)  # matches the declared output schema
    assert structured["geometry"] == {
        "native_width": 1920,
        "native_height": 1080,
        "image_width": 960,
        "image_height": 540,
        "frame_id": "frm_1",
        "scale": 0.5,
    }
    assert structured["targets"][1] == {
        "index": 2,
        "id": "t_ok",
        "role": "button",
        "name": "OK",
        "x": 400,
        "y": 300,
        "w": 80,
        "h": 20,
        "focused": False,
        "masked": False,
    }
    assert structured["observed"] is True
    assert structured["done"] is None


async def test_acting_without_observe_is_structured_as_not_observed(tools: RigTools) -> None:
    answer = await tools.key("tab", observe=False)

    assert answer.structured_content == {
        "done": "pressed tab; the screen settled after 120 ms",
        "observed": False,
        "desktop_state": None,
        "owner_active": False,
        "geometry": None,
        "targets": [],
        "truncated": False,
    }


async def test_type_into_a_target_clicks_it_first_then_types(
    tools: RigTools, gateway: FakeGateway
) -> None:
    await tools.observe()
    answer = await tools.type_text("ada", index=1)

    click, typing = posted_events(gateway)
    assert click == [{"type": "mouse_click", "x": 200, "y": 110, "button": "left"}]
    assert typing == [{"type": "type_text", "text": "ada"}]
    assert answer.structured_content is not None
    assert answer.structured_content["done"].startswith("clicked target 1, then typed 3")


async def test_scroll_over_a_target_by_name_uses_its_centre(
    tools: RigTools, gateway: FakeGateway
) -> None:
    await tools.scroll(dy=-2, target="username")

    assert len(gateway.calls("GET", OBSERVE)) == 1  # no observation yet: it looked first
    scrolled = posted_events(gateway)[0][0]
    assert (scrolled["x"], scrolled["y"], scrolled["dy"]) == (200, 110, -2)


async def test_two_ways_to_point_are_refused_before_sending(
    tools: RigTools, gateway: FakeGateway
) -> None:
    with pytest.raises(ToolError, match="at most one"):
        await tools.scroll(index=1, x=1, y=2)
    with pytest.raises(ToolError, match="not both"):
        await tools.type_text("a", index=1, target="OK")
    assert gateway.calls("POST", INPUT) == []
