"""Strict types and bounds on every body and query of a session, against a live sim rig.

Lax parsing would turn `true`, `"10"`, `1e3` or `10.0` into ints, and NaN, Infinity or
1e400 into a 500: each of them is a 400 here. A rejected request changes nothing: the
session stays active with its action count, the desktop keeps its state and the dirty
take stays unconsumed. An accepted batch answers only after its last event ran.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
import pytest_asyncio

from rigway.agent.backends.sim import SimDesktop
from rigway.agent.backends.sim.form import MAX_FIELD_CHARS
from rigway.gateway.desktop.body_limit import input_body_limit
from rigway.gateway.desktop.schemas import MAX_TEXT_CHARS
from tests.e2e.harness import ROOMY_RATE_LIMITS, Stack, batch_ran, stack_on_own_database

pytestmark = [pytest.mark.postgres, pytest.mark.asyncio(loop_scope="module")]

JSON = {"Content-Type": "application/json"}
SEED_TEXT = "seed"
MOVE = '{"type": "mouse_move", "x": 10, "y": 10}'
TYPE_A = '{"type": "type_text", "text": "a"}'


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
    return error.removeprefix(f"{code}: ")


@dataclass(frozen=True)
class DesktopState:
    username: str
    password: str
    remember: bool
    focused: str | None
    pointer: tuple[int, int]
    keys: frozenset[str]
    buttons: frozenset[str]
    list_top: int
    list_selected: int | None
    status: str

    @classmethod
    def of(cls, sim: SimDesktop) -> DesktopState:
        return cls(
            username=sim.field_text("username"),
            password=sim.field_text("password"),
            remember=sim.checkbox_checked,
            focused=sim.focused_control,
            pointer=sim.pointer,
            keys=sim.pressed_keys,
            buttons=frozenset(sim.pressed_buttons),
            list_top=sim.list_top_index,
            list_selected=sim.list_selected_index,
            status=sim.status_text,
        )


@dataclass
class Live:
    """An active session whose username field holds SEED_TEXT and whose dirty take
    (the username field's rect) is still pending; two actions counted so far."""

    stack: Stack
    session_id: str
    before: DesktopState

    @property
    def url(self) -> str:
        return f"/v1/sessions/{self.session_id}"

    async def assert_untouched(self) -> None:
        """Session active with its action count, desktop and dirty take unchanged."""
        assert DesktopState.of(self.stack.sim()) == self.before
        session = (await self.stack.client.get(self.url)).json()
        assert session["status"] == "active", session
        assert session["action_count"] == 2, session
        username = self.stack.sim().control_rect("username")
        dirty = (await self.stack.client.get(f"{self.url}/dirty")).json()
        assert dirty["rects"] == [[username.x, username.y, username.w, username.h]], dirty


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Stack]:
    """One stack for the whole module: every test here either changes nothing (that is
    what it checks) or only its own session, so the rig is shared to keep the module fast."""
    async with stack_on_own_database(
        tmp_path_factory.mktemp("strict"), **ROOMY_RATE_LIMITS
    ) as running:
        yield running


@pytest_asyncio.fixture(loop_scope="module")
async def stack(shared: Stack) -> AsyncIterator[Stack]:
    """The shared stack with no session running, as every test here starts."""
    assert (await shared.client.get("/v1/sessions")).json() == {"sessions": []}
    yield shared


@pytest_asyncio.fixture(loop_scope="module")
async def live(stack: Stack) -> AsyncIterator[Live]:
    session_id = await stack.start_session()
    url = f"/v1/sessions/{session_id}"
    try:
        # Escape clears the form (the sim's Cancel) and focuses the username field; the
        # dirty take is drained, then the seed leaves exactly one rect pending.
        cleared = await stack.client.post(
            f"{url}/input", json={"events": [{"type": "key_press", "key": "escape"}]}
        )
        assert batch_ran(cleared) == 1
        assert (await stack.client.get(f"{url}/dirty")).status_code == 200
        seeded = await stack.client.post(
            f"{url}/input", json={"events": [{"type": "type_text", "text": SEED_TEXT}]}
        )
        assert batch_ran(seeded) == 1
        assert stack.sim().field_text("username") == SEED_TEXT
        yield Live(stack, session_id, DesktopState.of(stack.sim()))
    finally:
        ended = await stack.client.delete(url)
        assert ended.status_code == 200, ended.text


def _batch(*events: str) -> str:
    return '{"events": [' + ", ".join(events) + "]}"


# ---- input batches -----------------------------------------------------------------------

BAD_BATCHES: dict[str, str] = {
    # Strict ints: no bool, string, float or non-finite number stands in for an int.
    "x_true": _batch('{"type": "mouse_move", "x": true, "y": 10}'),
    "x_string": _batch('{"type": "mouse_move", "x": "10", "y": 10}'),
    "x_1e3": _batch('{"type": "mouse_move", "x": 1e3, "y": 10}'),
    "x_1_5": _batch('{"type": "mouse_move", "x": 1.5, "y": 10}'),
    "x_10_0": _batch('{"type": "mouse_move", "x": 10.0, "y": 10}'),
    "x_nan": _batch('{"type": "mouse_move", "x": NaN, "y": 10}'),
    "x_infinity": _batch('{"type": "mouse_move", "x": Infinity, "y": 10}'),
    "x_minus_infinity": _batch('{"type": "mouse_move", "x": -Infinity, "y": 10}'),
    "x_1e400": _batch('{"type": "mouse_move", "x": 1e400, "y": 10}'),
    "x_huge_int": _batch('{"type": "mouse_move", "x": 1' + "0" * 30 + ', "y": 10}'),
    "x_null": _batch('{"type": "mouse_move", "x": null, "y": 10}'),
    "delay_true": _batch('{"type": "type_text", "text": "x", "delay_ms": true}'),
    "delay_string": _batch('{"type": "type_text", "text": "x", "delay_ms": "10"}'),
    "delay_nan": _batch('{"type": "type_text", "text": "x", "delay_ms": NaN}'),
    "delay_1e400": _batch('{"type": "type_text", "text": "x", "delay_ms": 1e400}'),
    "dy_1_5": _batch('{"type": "mouse_scroll", "dy": 1.5}'),
    "text_number": _batch('{"type": "type_text", "text": 5}'),
    "key_list": _batch('{"type": "key_press", "key": ["a"]}'),
    "type_number": _batch('{"type": 1}'),
    # Bounds.
    "x_negative": _batch('{"type": "mouse_move", "x": -1, "y": 10}'),
    "x_past_desktop": _batch('{"type": "mouse_move", "x": 1920, "y": 10}'),
    "y_past_desktop": _batch('{"type": "mouse_click", "x": 10, "y": 1080}'),
    "x_65536": _batch('{"type": "mouse_move", "x": 65536, "y": 10}'),
    "delay_5001": _batch('{"type": "type_text", "text": "x", "delay_ms": 5001}'),
    "delay_negative": _batch('{"type": "type_text", "text": "x", "delay_ms": -1}'),
    "dy_101": _batch('{"type": "mouse_scroll", "dy": 101}'),
    "button_unknown": _batch('{"type": "mouse_click", "button": "thumb"}'),
    "text_empty": _batch('{"type": "type_text", "text": ""}'),
    "text_10001": _batch(json.dumps({"type": "type_text", "text": "a" * 10_001})),
    "events_101": _batch(*[MOVE] * 101),
    "events_empty": _batch(),
    # Shapes.
    "events_object": '{"events": {}}',
    "events_missing": "{}",
    "body_list": "[" + MOVE + "]",
    "body_null": "null",
    "body_empty": "",
    "malformed_json": '{"events": [' + MOVE,
    "extra_top_field": '{"events": [' + MOVE + '], "force": true}',
    "extra_event_field": _batch('{"type": "mouse_move", "x": 1, "y": 1, "z": 2}'),
    "field_of_other_event": _batch('{"type": "type_text", "text": "x", "key": "a"}'),
    # Act and see: targets, expectations, frames, settle and observe.
    "target_with_point": _batch('{"type": "mouse_click", "x": 1, "y": 1, "target": "t_1"}'),
    "target_on_key": _batch('{"type": "key_press", "key": "a", "target": "t_1"}'),
    "move_nowhere": _batch('{"type": "mouse_move"}'),
    "down_off_desktop": _batch('{"type": "mouse_down", "x": 1920, "y": 1}'),
    "up_button_unknown": _batch('{"type": "mouse_up", "button": "thumb"}'),
    "expect_unknown": _batch('{"type": "key_press", "key": "a", "expect": "appear"}'),
    "expect_timeout_5001": _batch(
        '{"type": "key_press", "key": "a", "expect": "change", "expect_timeout_ms": 5001}'
    ),
    "expect_timeout_alone": _batch('{"type": "key_press", "key": "a", "expect_timeout_ms": 9}'),
    "coords_image_without_frame": '{"events": [' + MOVE + '], "coords": "image"}',
    "require_unchanged_without_frame": '{"events": [' + MOVE + '], "require_unchanged": true}',
    "settle_quiet_over_timeout": (
        '{"events": [' + MOVE + '], "settle": {"quiet_ms": 500, "timeout_ms": 400}}'
    ),
    "settle_timeout_10001": '{"events": [' + MOVE + '], "settle": {"timeout_ms": 10001}}',
    "observe_partial_region": '{"events": [' + MOVE + '], "observe": {"x": 0, "y": 0}}',
    "observe_region_past_desktop": (
        '{"events": [' + MOVE + '], "observe": {"x": 1900, "y": 0, "w": 21, "h": 1}}'
    ),
    "observe_image_true": '{"events": [' + MOVE + '], "observe": {"image": true}}',
    # One bad event after many good ones: the whole batch is refused, nothing runs.
    "last_of_50_unknown_key": _batch(*[TYPE_A] * 49, '{"type": "key_press", "key": "nokey"}'),
    "last_of_50_off_desktop": _batch(*[TYPE_A] * 49, '{"type": "mouse_click", "x": 5000, "y": 1}'),
    "first_of_50_bad_type": _batch('{"type": "warp"}', *[TYPE_A] * 49),
}


@pytest.mark.parametrize("body", BAD_BATCHES.values(), ids=BAD_BATCHES.keys())
async def test_rejected_input_batch_400_and_nothing_ran(live: Live, body: str) -> None:
    response = await live.stack.client.post(f"{live.url}/input", content=body, headers=JSON)
    assert_error(response, 400, "invalid_request")
    await live.assert_untouched()


async def test_batch_of_100_events_200_all_ran(live: Live) -> None:
    events = [{"type": "type_text", "text": "a"}] * 100
    response = await live.stack.client.post(f"{live.url}/input", json={"events": events})
    assert batch_ran(response) == 100
    assert live.stack.sim().field_text("username") == SEED_TEXT + "a" * 100
    session = (await live.stack.client.get(live.url)).json()
    assert session["action_count"] == 102


async def test_type_text_of_10000_chars_200(live: Live) -> None:
    events = [{"type": "type_text", "text": "b" * 10_000}]
    response = await live.stack.client.post(f"{live.url}/input", json={"events": events})
    assert batch_ran(response) == 1
    assert live.stack.sim().field_text("username").startswith(SEED_TEXT + "b")


async def test_accepted_batch_answers_after_last_event_ran(live: Live) -> None:
    sim = live.stack.sim()
    remember = sim.control_rect("remember")
    username = sim.control_rect("username")
    events = [
        {
            "type": "mouse_click",
            "x": remember.x + remember.w // 2,
            "y": remember.y + remember.h // 2,
            "delay_ms": 150,
        },
        {
            "type": "mouse_click",
            "x": username.x + username.w // 2,
            "y": username.y + username.h // 2,
            "delay_ms": 150,
        },
        {"type": "key_press", "key": "end", "delay_ms": 150},
        {"type": "type_text", "text": "-alice", "delay_ms": 150},
    ]
    started = time.monotonic()
    response = await live.stack.client.post(f"{live.url}/input", json={"events": events})
    elapsed = time.monotonic() - started
    # Read the sim at once, without polling: the answer must mean "all of it ran".
    checked, typed = sim.checkbox_checked, sim.field_text("username")
    assert batch_ran(response) == 4
    assert checked is not live.before.remember
    assert typed == SEED_TEXT + "-alice"
    assert elapsed >= 0.6


# ---- session creation ---------------------------------------------------------------------

BAD_CREATES: dict[str, str] = {
    "idle_true": '{"rig_id": "%(rig)s", "idle_timeout_seconds": true}',
    "idle_string": '{"rig_id": "%(rig)s", "idle_timeout_seconds": "600"}',
    "idle_1e3": '{"rig_id": "%(rig)s", "idle_timeout_seconds": 1e3}',
    "idle_600_0": '{"rig_id": "%(rig)s", "idle_timeout_seconds": 600.0}',
    "idle_1_5": '{"rig_id": "%(rig)s", "idle_timeout_seconds": 1.5}',
    "idle_nan": '{"rig_id": "%(rig)s", "idle_timeout_seconds": NaN}',
    "idle_infinity": '{"rig_id": "%(rig)s", "idle_timeout_seconds": Infinity}',
    "idle_1e400": '{"rig_id": "%(rig)s", "idle_timeout_seconds": 1e400}',
    "idle_minus_1e400": '{"rig_id": "%(rig)s", "idle_timeout_seconds": -1e400}',
    "idle_null": '{"rig_id": "%(rig)s", "idle_timeout_seconds": null}',
    "idle_59": '{"rig_id": "%(rig)s", "idle_timeout_seconds": 59}',
    "idle_3601": '{"rig_id": "%(rig)s", "idle_timeout_seconds": 3601}',
    "mode_unknown": '{"rig_id": "%(rig)s", "mode": "kiosk"}',
    "mode_true": '{"rig_id": "%(rig)s", "mode": true}',
    "rig_id_number": '{"rig_id": 5}',
    "rig_id_null": '{"rig_id": null}',
    "rig_id_empty": '{"rig_id": ""}',
    "rig_id_missing": '{"mode": "desktop"}',
    "extra_field": '{"rig_id": "%(rig)s", "priority": 1}',
    "body_list": '["%(rig)s"]',
    "body_empty": "",
    "malformed_json": '{"rig_id": "%(rig)s"',
}


@pytest.mark.parametrize("body", BAD_CREATES.values(), ids=BAD_CREATES.keys())
async def test_rejected_session_create_400_and_no_session(stack: Stack, body: str) -> None:
    rig_id = stack.rig_ids[0]
    content = body % {"rig": rig_id}
    response = await stack.client.post("/v1/sessions", content=content, headers=JSON)
    if response.status_code == 201:  # the bug this test looks for: free the shared rig
        await stack.client.delete(f"/v1/sessions/{response.json()['session_id']}")
    assert_error(response, 400, "invalid_request")
    assert (await stack.client.get("/v1/sessions")).json() == {"sessions": []}
    assert (await stack.client.get(f"/v1/rigs/{rig_id}")).json()["active_session_id"] is None


# ---- screenshot and observe queries -----------------------------------------------------

BAD_QUERIES: dict[str, dict[str, Any]] = {
    "max_width_true": {"max_width": "true"},
    "max_width_1_5": {"max_width": "1.5"},
    "max_width_1e3": {"max_width": "1e3"},
    "max_width_nan": {"max_width": "NaN"},
    "max_width_infinity": {"max_width": "Infinity"},
    "max_width_huge": {"max_width": "1" + "0" * 30},
    "max_width_empty": {"max_width": ""},
    "max_width_15": {"max_width": 15},
    "max_width_16385": {"max_width": 16385},
    "quality_39": {"quality": 39},
    "quality_101": {"quality": 101},
    "quality_word": {"quality": "high"},
    "region_negative": {"x": -1, "y": 0, "w": 10, "h": 10},
    "region_zero_width": {"x": 0, "y": 0, "w": 0, "h": 10},
    "region_float": {"x": 0.5, "y": 0, "w": 10, "h": 10},
    "region_outside": {"x": 1000, "y": 1000, "w": 1000, "h": 10},
    "region_partial": {"x": 0, "y": 0},
}
OBSERVE_ONLY: dict[str, dict[str, Any]] = {
    "mark_2": {"mark": 2},
    "mark_true": {"mark": "true"},
    "image_minus_1": {"image": -1},
    "image_yes": {"image": "yes"},
}


@pytest.mark.parametrize("params", BAD_QUERIES.values(), ids=BAD_QUERIES.keys())
async def test_rejected_screenshot_query_400_and_nothing_changed(
    live: Live, params: dict[str, Any]
) -> None:
    response = await live.stack.client.get(f"{live.url}/screenshot", params=params)
    assert_error(response, 400, "invalid_request")
    await live.assert_untouched()


@pytest.mark.parametrize(
    "params",
    [*BAD_QUERIES.values(), *OBSERVE_ONLY.values()],
    ids=[*BAD_QUERIES.keys(), *OBSERVE_ONLY.keys()],
)
async def test_rejected_observe_query_400_and_dirty_not_consumed(
    live: Live, params: dict[str, Any]
) -> None:
    response = await live.stack.client.get(f"{live.url}/observe", params=params)
    assert_error(response, 400, "invalid_request")
    await live.assert_untouched()


@pytest.mark.parametrize("value", ["100.0", "1_000"], ids=["float_spelling", "underscore"])
async def test_query_int_in_non_integer_spelling_400(live: Live, value: str) -> None:
    """`1e3` and `1.5` are refused; `100.0` and `1_000` are no more integers than they."""
    response = await live.stack.client.get(f"{live.url}/screenshot", params={"max_width": value})
    assert_error(response, 400, "invalid_request")
    await live.assert_untouched()


# ---- apps ---------------------------------------------------------------------------------

BAD_LAUNCHES: dict[str, str] = {
    "path_number": '{"path": 5}',
    "path_empty": '{"path": ""}',
    "path_missing": '{"args": []}',
    "args_string": '{"path": "true", "args": "-x"}',
    "args_number_item": '{"path": "true", "args": [1]}',
    "args_65": json.dumps({"path": "true", "args": ["a"] * 65}),
    "extra_field": '{"path": "true", "shell": true}',
    "path_too_long": json.dumps({"path": "/" + "a" * 4096}),
}
BAD_KILLS: dict[str, str] = {
    "pid_true": '{"pid": true}',
    "pid_string": '{"pid": "1"}',
    "pid_1_0": '{"pid": 1.0}',
    "pid_nan": '{"pid": NaN}',
    "pid_1e400": '{"pid": 1e400}',
    "pid_zero": '{"pid": 0}',
    "pid_negative": '{"pid": -1}',
    "pid_2_31": '{"pid": 2147483648}',
    "extra_field": '{"pid": null, "signal": 9}',
    "body_list": "[1]",
}


@pytest.mark.parametrize("body", BAD_LAUNCHES.values(), ids=BAD_LAUNCHES.keys())
async def test_rejected_app_launch_400_and_nothing_launched(live: Live, body: str) -> None:
    response = await live.stack.client.post(f"{live.url}/app/launch", content=body, headers=JSON)
    assert_error(response, 400, "invalid_request")
    await live.assert_untouched()
    killed = await live.stack.client.post(f"{live.url}/app/kill", json={})
    assert killed.json() == {"ok": True, "killed": []}


@pytest.mark.parametrize("body", BAD_KILLS.values(), ids=BAD_KILLS.keys())
async def test_rejected_app_kill_400_and_apps_survive(live: Live, body: str) -> None:
    launched = await live.stack.client.post(
        f"{live.url}/app/launch", json={"path": "sleep", "args": ["30"]}
    )
    assert launched.status_code == 200, launched.text
    pid = launched.json()["pid"]
    response = await live.stack.client.post(f"{live.url}/app/kill", content=body, headers=JSON)
    assert_error(response, 400, "invalid_request")
    killed = await live.stack.client.post(f"{live.url}/app/kill", json={})
    assert killed.json() == {"ok": True, "killed": [pid]}


# ---- body size ----------------------------------------------------------------------------


def _input_limit(stack: Stack) -> int:
    return input_body_limit(stack.services.settings.max_body_bytes)


def _padded_batch(size: int) -> bytes:
    """A valid one-event batch (types "a") padded with JSON whitespace to `size` bytes:
    refused, it can only have been for its size."""
    batch = _batch(TYPE_A).encode()
    return batch + b" " * (size - len(batch))


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(body), 256 * 1024):
        yield body[start : start + 256 * 1024]


async def test_largest_valid_input_batch_200_all_ran(live: Live) -> None:
    """100 events of 10,000 emoji, escaped as json.dumps does by default (12 bytes
    each): 12 MB, far over the general limit, and a batch the contract allows."""
    emoji = "\U0001f600"
    events = [{"type": "type_text", "text": emoji * MAX_TEXT_CHARS}] * 100
    body = json.dumps({"events": events}).encode()
    assert len(body) > live.stack.services.settings.max_body_bytes
    response = await live.stack.client.post(f"{live.url}/input", content=body, headers=JSON)
    assert batch_ran(response) == 100
    # The sim's field keeps its first MAX_FIELD_CHARS characters.
    typed = live.stack.sim().field_text("username")
    assert typed == (SEED_TEXT + emoji * MAX_FIELD_CHARS)[:MAX_FIELD_CHARS]
    session = (await live.stack.client.get(live.url)).json()
    assert session["action_count"] == 102


async def test_input_body_of_exactly_its_limit_200(live: Live) -> None:
    body = _padded_batch(_input_limit(live.stack))
    response = await live.stack.client.post(f"{live.url}/input", content=body, headers=JSON)
    assert batch_ran(response) == 1
    assert live.stack.sim().field_text("username") == SEED_TEXT + "a"


async def test_input_body_one_byte_over_its_limit_413_and_nothing_ran(live: Live) -> None:
    body = _padded_batch(_input_limit(live.stack) + 1)
    response = await live.stack.client.post(f"{live.url}/input", content=body, headers=JSON)
    assert_error(response, 413, "invalid_request")
    await live.assert_untouched()


async def test_streamed_input_body_one_byte_over_its_limit_413_and_nothing_ran(
    live: Live,
) -> None:
    """No Content-Length (chunked upload): the limit must hold while the body streams."""
    body = _padded_batch(_input_limit(live.stack) + 1)
    response = await live.stack.client.post(
        f"{live.url}/input", content=_chunks(body), headers=JSON
    )
    assert "content-length" not in response.request.headers
    assert_error(response, 413, "invalid_request")
    await live.assert_untouched()


UNKNOWN_KEY = "rgw_live_sk_" + "0" * 48


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer not-a-key", f"Bearer {UNKNOWN_KEY}"],
    ids=["no_key", "malformed_key", "unknown_key"],
)
@pytest.mark.parametrize("streamed", [False, True], ids=["content_length", "streamed"])
async def test_only_a_valid_key_may_send_input_over_the_general_limit(
    live: Live, authorization: str | None, streamed: bool
) -> None:
    """FastAPI reads a body before the route authenticates: the input route's 12 MB
    limit is for callers with a valid API key, so nobody else can make the gateway
    buffer more than the general limit."""
    body = _padded_batch(live.stack.services.settings.max_body_bytes + 1)
    headers = JSON if authorization is None else {**JSON, "Authorization": authorization}
    async with httpx2.AsyncClient(
        base_url=live.stack.base_url, timeout=30.0, trust_env=False
    ) as stranger:
        content = _chunks(body) if streamed else body
        response = await stranger.post(f"{live.url}/input", content=content, headers=headers)
    assert_error(response, 413, "invalid_request")
    await live.assert_untouched()
    # Within the general limit the route itself answers, with the key's error.
    async with httpx2.AsyncClient(
        base_url=live.stack.base_url, timeout=30.0, trust_env=False
    ) as stranger:
        small = await stranger.post(f"{live.url}/input", content=_batch(TYPE_A), headers=headers)
    assert_error(small, 401, "invalid_api_key")
    # The same large body with the session's own key goes through.
    owner = await live.stack.client.post(f"{live.url}/input", content=body, headers=JSON)
    assert batch_ran(owner) == 1


async def test_app_launch_keeps_the_general_limit_413_and_nothing_launched(live: Live) -> None:
    """Only input has the larger limit: a launch body one byte over the general one
    (a launch that would otherwise start) is refused."""
    launch = json.dumps({"path": "sleep", "args": ["30"]}).encode()
    body = launch + b" " * (live.stack.services.settings.max_body_bytes + 1 - len(launch))
    response = await live.stack.client.post(f"{live.url}/app/launch", content=body, headers=JSON)
    assert_error(response, 413, "invalid_request")
    await live.assert_untouched()
    killed = await live.stack.client.post(f"{live.url}/app/kill", json={})
    assert killed.json() == {"ok": True, "killed": []}


async def test_session_create_body_over_limit_413_and_no_session(stack: Stack) -> None:
    limit = stack.services.settings.max_body_bytes
    body = json.dumps({"rig_id": stack.rig_ids[0], "padding": "p" * limit}).encode()
    response = await stack.client.post("/v1/sessions", content=body, headers=JSON)
    if response.status_code == 201:  # the bug this test looks for: free the shared rig
        await stack.client.delete(f"/v1/sessions/{response.json()['session_id']}")
    assert_error(response, 413, "invalid_request")
    assert (await stack.client.get("/v1/sessions")).json() == {"sessions": []}
