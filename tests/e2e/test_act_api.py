"""Act and see in one round trip, through the real gateway and a sim agent: per-event
receipts, settle, the observe after a batch, drags, target-bound events, expectations,
points in a frame's image pixels, and a frame that must still be what the caller saw.

The sim reports exact damage (only the controls whose view changed), so a receipt's
`changed` and a stale frame's rectangles can be told exactly here."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from rigway.agent.backends.base import Rect
from rigway.agent.backends.sim import SimDesktop
from tests.e2e.harness import ROOMY_RATE_LIMITS, Stack, batch_ran, stack_on_own_database

pytestmark = [pytest.mark.postgres, pytest.mark.asyncio(loop_scope="module")]

# A point on the bare desktop, far from the sim's window: nothing there ever changes.
BARE = (40, 40)
GONE_ID = "t_0000000000"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """One stack for the module; each test runs its own session on the one sim rig and
    starts from a cleared form."""
    async with stack_on_own_database(
        tmp_path_factory.mktemp("act"), **ROOMY_RATE_LIMITS
    ) as running:
        yield running


class Act:
    """A session on the shared sim, its form cleared (Escape: the sim's Cancel, which
    leaves the check box and the list's selection as they were), the list scrolled to
    its top and the dirty take drained."""

    def __init__(self, stack: Stack, session_id: str) -> None:
        self.stack = stack
        self.url = f"/v1/sessions/{session_id}"

    @property
    def sim(self) -> SimDesktop:
        return self.stack.sim()

    async def post(self, events: list[dict[str, Any]], **batch: Any) -> httpx2.Response:
        return await self.stack.client.post(f"{self.url}/input", json={"events": events, **batch})

    async def target_id(self, name: str) -> str:
        targets = (await self.stack.client.get(f"{self.url}/targets")).json()["targets"]
        found = [t["id"] for t in targets if t["name"] == name]
        assert len(found) == 1, targets
        target_id = found[0]
        assert isinstance(target_id, str)
        return target_id

    async def screenshot_frame(self, **params: int) -> tuple[str, int, int]:
        """A screenshot's frame id and image size."""
        shot = await self.stack.client.get(f"{self.url}/screenshot", params=params)
        assert shot.status_code == 200, shot.text
        width = int(shot.headers["x-screenshot-width"])
        height = int(shot.headers["x-screenshot-height"])
        return shot.headers["x-frame-id"], width, height

    async def drain_dirty(self) -> None:
        assert (await self.stack.client.get(f"{self.url}/dirty")).status_code == 200


@pytest_asyncio.fixture(loop_scope="module")
async def act(shared: Stack) -> AsyncIterator[Act]:
    session_id = await shared.start_session()
    session = Act(shared, session_id)
    try:
        reset = [{"type": "key_press", "key": "escape"}]
        assert batch_ran(await session.post(reset)) == 1
        top = await session.post(
            [{"type": "mouse_scroll", **_xy(centre(session.sim.control_rect("recent"))), "dy": 10}]
        )
        assert batch_ran(top) == 1
        assert session.sim.list_top_index == 0
        await session.drain_dirty()
        yield session
    finally:
        ended = await shared.client.delete(f"/v1/sessions/{session_id}")
        assert ended.status_code == 200, ended.text


def centre(rect: Rect) -> tuple[int, int]:
    return (rect.x + rect.w // 2, rect.y + rect.h // 2)


def _xy(point: tuple[int, int]) -> dict[str, int]:
    return {"x": point[0], "y": point[1]}


def _inside(rect: Rect, x: int, y: int) -> bool:
    return rect.x <= x < rect.x + rect.w and rect.y <= y < rect.y + rect.h


def _stopped(response: httpx2.Response, code: str) -> dict[str, Any]:
    """A 409 `code` body that carries the receipts of what ran."""
    assert response.status_code == 409, response.text
    body = response.json()
    assert isinstance(body, dict), body
    assert set(body) == {"error", "events", "stopped_at"}, body
    assert body["error"].startswith(f"{code}: "), body
    stopped_at = body["stopped_at"]
    assert [r["index"] for r in body["events"]] == list(range(stopped_at + 1)), body
    assert [r["ok"] for r in body["events"]] == [True] * stopped_at + [False], body
    return body


def _refused(response: httpx2.Response, status: int, code: str) -> str:
    assert response.status_code == status, response.text
    body = response.json()
    assert list(body) == ["error"], body
    error = body["error"]
    assert isinstance(error, str)
    assert error == code or error.startswith(f"{code}: "), body
    return error


# ---- receipts, settle, observe -----------------------------------------------------------


async def test_receipts_tell_a_change_from_none(act: Act) -> None:
    remember = centre(act.sim.control_rect("remember"))
    checked = act.sim.checkbox_checked
    response = await act.post(
        [
            {"type": "mouse_move", **_xy(BARE)},
            {"type": "key_press", "key": "shift"},
            {"type": "mouse_click", **_xy(remember)},
        ]
    )
    assert batch_ran(response) == 3
    move, shift, click = response.json()["events"]
    assert (move["type"], move["x"], move["y"], move["changed"]) == ("mouse_move", *BARE, False)
    assert (shift["type"], shift["x"], shift["y"], shift["changed"]) == (
        "key_press",
        None,
        None,
        False,
    )
    assert (click["type"], click["x"], click["y"], click["changed"]) == (
        "mouse_click",
        *remember,
        True,
    )
    assert 0 <= move["at_ms"] <= shift["at_ms"] <= click["at_ms"]
    assert act.sim.checkbox_checked is not checked
    assert set(response.json()) == {"ok", "count", "events"}  # no settle, no observe asked


async def test_settle_answers_once_the_screen_is_still(act: Act) -> None:
    remember = centre(act.sim.control_rect("remember"))
    response = await act.post(
        [{"type": "mouse_click", **_xy(remember)}], settle={"quiet_ms": 50, "timeout_ms": 2000}
    )
    assert batch_ran(response) == 1
    settle = response.json()["settle"]
    assert settle["settled"] is True
    assert 50 <= settle["waited_ms"] < 2000


async def test_observe_after_the_batch_sees_what_it_did(act: Act) -> None:
    response = await act.post(
        [{"type": "type_text", "text": "bob"}], observe={"image": 0}, settle={}
    )
    assert batch_ran(response) == 1
    observed = response.json()["observe"]
    assert "jpeg_base64" not in observed  # as GET /observe?image=0
    assert observed["frame_id"] is None
    username = next(t for t in observed["targets"] if t["name"] == "Username")
    assert username["value"] == "bob"
    field = act.sim.control_rect("username")
    # The observe's dirty take is the one GET /observe would have taken: it saw the field.
    assert [field.x, field.y, field.w, field.h] in observed["dirty"]["rects"]
    assert (await act.stack.client.get(f"{act.url}/dirty")).json()["rects"] == []


async def test_observe_with_an_image_names_a_frame_the_next_batch_can_use(act: Act) -> None:
    response = await act.post(
        [{"type": "mouse_move", **_xy(BARE)}], observe={"max_width": 960, "quality": 60}
    )
    assert batch_ran(response) == 1
    observed = response.json()["observe"]
    assert (observed["width"], observed["height"]) == (960, 540)
    assert observed["jpeg_base64"]
    remember = centre(act.sim.control_rect("remember"))
    checked = act.sim.checkbox_checked
    image_point = {"x": remember[0] // 2, "y": remember[1] // 2}
    clicked = await act.post(
        [{"type": "mouse_click", **image_point}], frame_id=observed["frame_id"], coords="image"
    )
    assert batch_ran(clicked) == 1
    assert act.sim.checkbox_checked is not checked


# ---- drag ------------------------------------------------------------------------------


async def test_drag_off_a_button_does_not_press_it(act: Act) -> None:
    sign_in = centre(act.sim.control_rect("sign_in"))
    response = await act.post(
        [
            {"type": "type_text", "text": "dora"},
            {"type": "mouse_down", **_xy(sign_in)},
            {"type": "mouse_move", "x": sign_in[0] + 200, "y": sign_in[1] + 200},
            {"type": "mouse_up", **_xy(BARE)},
        ]
    )
    assert batch_ran(response) == 4
    assert act.sim.status_text == ""  # released away from Sign in: no click
    assert act.sim.pressed_buttons == frozenset()
    assert act.sim.focused_control == "sign_in"  # the press focused it, as on a desktop
    up = response.json()["events"][3]
    assert (up["type"], up["x"], up["y"]) == ("mouse_up", *BARE)


async def test_a_held_button_spans_batches_until_mouse_up(act: Act) -> None:
    remember = act.sim.control_rect("remember")
    start = (remember.x + 5, remember.y + remember.h // 2)
    end = (remember.x + remember.w - 5, remember.y + remember.h // 2)
    checked = act.sim.checkbox_checked
    assert batch_ran(await act.post([{"type": "mouse_down", **_xy(start)}])) == 1
    assert act.sim.pressed_buttons == frozenset({"left"})
    assert act.sim.checkbox_checked is checked  # a press alone activates nothing
    moved = await act.post([{"type": "mouse_move", **_xy(end)}, {"type": "mouse_up"}])
    assert batch_ran(moved) == 2
    assert act.sim.pressed_buttons == frozenset()
    assert act.sim.checkbox_checked is not checked  # pressed and released over it


async def test_a_button_held_at_session_end_is_released(shared: Stack) -> None:
    session_id = await shared.start_session()
    url = f"/v1/sessions/{session_id}"
    down = await shared.client.post(
        f"{url}/input", json={"events": [{"type": "mouse_down", "button": "right"}]}
    )
    assert batch_ran(down) == 1
    assert shared.sim().pressed_buttons == frozenset({"right"})
    assert (await shared.client.delete(url)).status_code == 200
    await shared.wait_until(lambda: shared.sim().pressed_buttons == frozenset())


# ---- targets ---------------------------------------------------------------------------


async def test_target_bound_click_presses_the_button_where_it_is(act: Act) -> None:
    sign_in_id = await act.target_id("Sign in")
    response = await act.post(
        [{"type": "type_text", "text": "carol"}, {"type": "mouse_click", "target": sign_in_id}]
    )
    assert batch_ran(response) == 2
    assert act.sim.status_text == "Signed in as carol"
    click = response.json()["events"][1]
    assert _inside(act.sim.control_rect("sign_in"), click["x"], click["y"])
    assert click["changed"] is True


async def test_made_up_target_stops_the_batch_409_target_gone(act: Act) -> None:
    response = await act.post(
        [
            {"type": "type_text", "text": "ed"},
            {"type": "mouse_click", "target": GONE_ID},
            {"type": "type_text", "text": "-never"},
        ]
    )
    body = _stopped(response, "target_gone")
    assert body["stopped_at"] == 1
    typed, gone = body["events"]
    assert (typed["type"], typed["changed"]) == ("type_text", True)
    assert (gone["type"], gone["x"], gone["y"]) == ("mouse_click", None, None)
    assert act.sim.field_text("username") == "ed"  # the event after it never ran


async def test_a_target_that_scrolled_away_is_gone(act: Act) -> None:
    first_id = await act.target_id("Recent document 01")
    recent = centre(act.sim.control_rect("recent"))
    selected = act.sim.list_selected_index
    response = await act.post(
        [
            {"type": "mouse_scroll", **_xy(recent), "dy": -3},
            {"type": "mouse_click", "target": first_id},
        ]
    )
    body = _stopped(response, "target_gone")
    assert body["stopped_at"] == 1
    assert act.sim.list_top_index > 0
    assert act.sim.list_selected_index == selected  # nothing clicked in the list


# ---- expectations ----------------------------------------------------------------------


async def test_expect_change_met_runs_on(act: Act) -> None:
    remember = centre(act.sim.control_rect("remember"))
    checked = act.sim.checkbox_checked
    response = await act.post(
        [
            {"type": "mouse_click", **_xy(remember), "expect": "change"},
            {"type": "key_press", "key": "tab", "expect": "change", "expect_timeout_ms": 2000},
        ]
    )
    assert batch_ran(response) == 2
    assert [r["changed"] for r in response.json()["events"]] == [True, True]
    assert act.sim.checkbox_checked is not checked
    assert act.sim.focused_control == "sign_in"


async def test_expect_change_unmet_stops_the_batch_409_expectation_failed(act: Act) -> None:
    response = await act.post(
        [
            {"type": "key_press", "key": "tab"},
            {"type": "mouse_move", **_xy(BARE), "expect": "change", "expect_timeout_ms": 150},
            {"type": "type_text", "text": "never"},
        ]
    )
    body = _stopped(response, "expectation_failed")
    assert body["stopped_at"] == 1
    tab, move = body["events"]
    assert tab["changed"] is True
    assert (move["type"], move["x"], move["y"], move["changed"]) == ("mouse_move", *BARE, False)
    assert move["at_ms"] >= tab["at_ms"]
    assert act.sim.focused_control == "password"
    assert act.sim.field_text("password") == ""  # the event after it never ran


async def test_the_host_deadline_covers_the_waits_a_batch_asks_for(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """With a 1 s deadline for host operations, a batch that waits 2 s for a change
    that never comes still gets its 409 from the host, not a 504 at 1 s."""
    async with stack_on_own_database(
        tmp_path_factory.mktemp("deadline"), host_timeout_s=1.0, **ROOMY_RATE_LIMITS
    ) as stack:
        session_id = await stack.start_session()
        slow = {"type": "key_press", "key": "shift", "expect": "change", "expect_timeout_ms": 2000}
        response = await stack.client.post(
            f"/v1/sessions/{session_id}/input", json={"events": [slow]}
        )
        body = _stopped(response, "expectation_failed")
        assert body["stopped_at"] == 0


# ---- frames ----------------------------------------------------------------------------


async def test_image_coords_of_a_downscaled_screenshot_land_on_the_native_point(
    act: Act,
) -> None:
    frame_id, width, height = await act.screenshot_frame(max_width=480)
    assert (width, height) == (480, 270)  # a quarter of 1920x1080
    remember = act.sim.control_rect("remember")
    cx, cy = centre(remember)
    checked = act.sim.checkbox_checked
    response = await act.post(
        [{"type": "mouse_click", "x": cx // 4, "y": cy // 4}], frame_id=frame_id, coords="image"
    )
    assert batch_ran(response) == 1
    click = response.json()["events"][0]
    # Image pixel (cx // 4, cy // 4) covers native 4x4 pixels: the click is among them.
    assert cx - 4 < click["x"] <= cx + 3
    assert cy - 4 < click["y"] <= cy + 3
    assert _inside(remember, click["x"], click["y"])
    assert act.sim.checkbox_checked is not checked


async def test_an_image_point_outside_the_frame_400_and_nothing_ran(act: Act) -> None:
    frame_id, width, _ = await act.screenshot_frame(max_width=480)
    pointer = act.sim.pointer
    response = await act.post(
        [{"type": "type_text", "text": "x"}, {"type": "mouse_click", "x": width, "y": 1}],
        frame_id=frame_id,
        coords="image",
    )
    error = _refused(response, 400, "invalid_request")
    assert "outside the 480x270 image" in error
    assert (act.sim.field_text("username"), act.sim.pointer) == ("", pointer)


async def test_an_unknown_frame_409_frame_expired_and_nothing_ran(act: Act) -> None:
    response = await act.post(
        [{"type": "type_text", "text": "x"}], frame_id="frm_" + "0" * 24, coords="image"
    )
    _refused(response, 409, "frame_expired")
    assert act.sim.field_text("username") == ""


async def test_change_near_the_point_since_the_frame_409_stale_frame(act: Act) -> None:
    frame_id, _, _ = await act.screenshot_frame()
    act.sim.type_text("z")  # the screen changes under the caller: the username field
    field = act.sim.control_rect("username")
    pointer = act.sim.pointer
    response = await act.post(
        [{"type": "mouse_click", "x": field.x + field.w + 10, "y": field.y + 5}],
        frame_id=frame_id,
        require_unchanged=True,
    )
    assert response.status_code == 409, response.text
    body = response.json()
    assert set(body) == {"error", "rects"}, body
    assert body["error"].startswith("stale_frame: ")
    assert [field.x, field.y, field.w, field.h] in body["rects"]
    assert act.sim.pointer == pointer  # nothing ran


async def test_change_elsewhere_since_the_frame_runs_the_batch(act: Act) -> None:
    frame_id, _, _ = await act.screenshot_frame(max_width=960)
    act.sim.type_text("z")  # the username field changes, far from the list
    list_box = act.sim.control_rect("recent")
    row = (list_box.x + 40, list_box.y + 2 + 3 * 24 + 12)  # the fourth visible row
    response = await act.post(
        [{"type": "mouse_click", **_xy(row)}], frame_id=frame_id, require_unchanged=True
    )
    assert batch_ran(response) == 1
    assert act.sim.list_selected_index == 3


# ---- the schema --------------------------------------------------------------------------


async def test_openapi_is_1_1_and_declares_the_batch_and_its_409_bodies(shared: Stack) -> None:
    schema = (await shared.client.get("/openapi.json")).json()
    assert schema["info"]["version"] == "1.1.0"
    components = schema["components"]["schemas"]
    operation = schema["paths"]["/v1/sessions/{session_id}/input"]["post"]
    conflict = operation["responses"]["409"]["content"]["application/json"]["schema"]
    conflict_name = conflict["$ref"].rsplit("/", 1)[-1]
    assert set(components[conflict_name]["properties"]) == {
        "error",
        "events",
        "stopped_at",
        "rects",
    }
    answer = operation["responses"]["200"]["content"]["application/json"]["schema"]
    answer_fields = components[answer["$ref"].rsplit("/", 1)[-1]]["properties"]
    assert {"ok", "count", "events", "settle", "observe"} <= set(answer_fields)
    batch = operation["requestBody"]["content"]["application/json"]["schema"]
    batch_fields = components[batch["$ref"].rsplit("/", 1)[-1]]["properties"]
    assert {"frame_id", "coords", "require_unchanged", "settle", "observe"} <= set(batch_fields)
    event_types = set(batch_fields["events"]["items"]["discriminator"]["mapping"])
    assert {"mouse_down", "mouse_up"} <= event_types
