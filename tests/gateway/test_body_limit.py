"""The input route's body limit: its arithmetic against the largest batch the schema
accepts, and the middleware giving that limit to the one route it names."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from starlette.types import Message, Receive, Scope, Send

from rigway.gateway.desktop.body_limit import (
    input_batch_max_bytes,
    input_body_limit,
    max_input_events,
)
from rigway.gateway.desktop.schemas import MAX_TEXT_CHARS, InputBatchIn
from rigway.gateway.middleware import BodyLimitMiddleware, RouteBodyLimit

EMOJI = "\U0001f600"  # past U+FFFF: json.dumps writes it as a 12-byte surrogate pair
GENERAL_LIMIT = 64 * 1024


def _largest_batch() -> dict[str, Any]:
    """The most bytes a valid batch can hold: every event a type_text of the longest
    escape at full length, with the longest delay and expectation, and the batch's own
    fields at their longest."""
    event = {
        "type": "type_text",
        "text": EMOJI * MAX_TEXT_CHARS,
        "delay_ms": 5000,
        "expect": "change",
        "expect_timeout_ms": 5000,
    }
    return {
        "events": [event] * max_input_events(),
        "frame_id": "f" * 64,
        "coords": "image",
        "require_unchanged": True,
        "settle": {"quiet_ms": 2000, "timeout_ms": 10000},
        "observe": {
            "image": 1,
            "mark": 1,
            "max_width": 16384,
            "quality": 100,
            "x": 65535,
            "y": 65535,
            "w": 65535,
            "h": 65535,
        },
    }


def _escaped(value: Any, indent: str = "") -> str:
    """JSON with every character of every string escaped (`\\u0074` for "t", a
    surrogate pair past U+FFFF) and pretty-printed: the longest way to write it."""
    inner = indent + "  "
    if isinstance(value, str):
        units = value.encode("utf-16-be")
        return (
            '"'
            + "".join(f"\\u{int.from_bytes(units[i : i + 2]):04x}" for i in range(0, len(units), 2))
            + '"'
        )
    if isinstance(value, dict):
        items = (f"{inner}{_escaped(k, inner)}: {_escaped(v, inner)}" for k, v in value.items())
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    if isinstance(value, list):
        items = (f"{inner}{_escaped(v, inner)}" for v in value)
        return "[\n" + ",\n".join(items) + f"\n{indent}]"
    return json.dumps(value)


def test_the_event_bound_is_the_schemas() -> None:
    assert max_input_events() == 100
    InputBatchIn.model_validate_json(json.dumps({"events": [{"type": "key_press", "key": "a"}]}))


@pytest.mark.parametrize(
    "write",
    [json.dumps, lambda batch: json.dumps(batch, indent=2), _escaped],
    ids=["json_dumps_default", "pretty_printed", "every_character_escaped"],
)
def test_the_largest_valid_batch_fits_under_the_input_limit(write: Any) -> None:
    body = write(_largest_batch()).encode()
    InputBatchIn.model_validate_json(body)  # valid, so the gateway must let it through
    assert len(body) > GENERAL_LIMIT
    assert len(body) <= input_batch_max_bytes()


def test_the_input_limit_is_the_batch_bounds_times_the_longest_escape() -> None:
    assert len(json.dumps(EMOJI)) == 2 + 12  # the escape the arithmetic counts
    per_event = MAX_TEXT_CHARS * 12 + 512
    assert input_batch_max_bytes() == 100 * per_event + 2048
    # Not far above what the largest batch takes either: within 1 %.
    assert input_batch_max_bytes() < len(json.dumps(_largest_batch())) * 1.01


def test_an_operator_general_limit_above_it_still_holds_for_input() -> None:
    assert input_body_limit(GENERAL_LIMIT) == input_batch_max_bytes()
    assert input_body_limit(input_batch_max_bytes() + 1) == input_batch_max_bytes() + 1


# ---- the middleware ------------------------------------------------------------------------

ROUTE_LIMIT = 4096
SMALL_LIMIT = 1024
INPUT = RouteBodyLimit(
    frozenset({"POST"}), re.compile("^/v1/sessions/(?P<session_id>[^/]+)/input$"), ROUTE_LIMIT
)


class EchoApp:
    """Reads the whole body and answers 200 with its length; notes that it was reached."""

    def __init__(self) -> None:
        self.bodies: list[int] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        size = 0
        while True:
            message = await receive()
            size += len(message.get("body", b""))
            if not message.get("more_body", False):
                break
        self.bodies.append(size)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": str(size).encode()})


async def _post(
    middleware: BodyLimitMiddleware, method: str, path: str, size: int, *, declared: bool
) -> int:
    """Sends a body of `size` bytes in 1000-byte chunks, with or without Content-Length;
    returns the status answered."""
    chunks = [b"x" * min(1000, size - start) for start in range(0, size, 1000)] or [b""]
    headers = [(b"content-length", str(size).encode())] if declared else []
    scope: Scope = {"type": "http", "method": method, "path": path, "headers": headers}
    pending = list(chunks)
    sent: list[Message] = []

    async def receive() -> Message:
        body = pending.pop(0)
        return {"type": "http.request", "body": body, "more_body": bool(pending)}

    async def send(message: Message) -> None:
        sent.append(message)

    await middleware(scope, receive, send)
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert len(starts) == 1, sent
    status: int = starts[0]["status"]
    return status


def test_only_the_named_route_gets_its_own_limit() -> None:
    middleware = BodyLimitMiddleware(EchoApp(), SMALL_LIMIT, [INPUT])
    assert middleware.limit_for("POST", "/v1/sessions/s_1/input") == ROUTE_LIMIT
    assert middleware.limit_for("PUT", "/v1/sessions/s_1/input") == SMALL_LIMIT
    assert middleware.limit_for("POST", "/v1/sessions/s_1/input/more") == SMALL_LIMIT
    assert middleware.limit_for("POST", "/v1/sessions/s_1/app/launch") == SMALL_LIMIT
    assert middleware.limit_for("POST", "/v1/sessions") == SMALL_LIMIT


@pytest.mark.parametrize("declared", [True, False], ids=["content_length", "streamed"])
async def test_the_route_takes_bodies_up_to_its_limit_and_refuses_one_byte_more(
    declared: bool,
) -> None:
    app = EchoApp()
    middleware = BodyLimitMiddleware(app, SMALL_LIMIT, [INPUT])
    path = "/v1/sessions/s_1/input"
    assert await _post(middleware, "POST", path, ROUTE_LIMIT, declared=declared) == 200
    assert await _post(middleware, "POST", path, ROUTE_LIMIT + 1, declared=declared) == 413
    assert app.bodies == [ROUTE_LIMIT]  # the refused body never reached the app whole


@pytest.mark.parametrize("declared", [True, False], ids=["content_length", "streamed"])
async def test_other_routes_keep_the_general_limit(declared: bool) -> None:
    app = EchoApp()
    middleware = BodyLimitMiddleware(app, SMALL_LIMIT, [INPUT])
    path = "/v1/sessions/s_1/app/launch"
    assert await _post(middleware, "POST", path, SMALL_LIMIT, declared=declared) == 200
    assert await _post(middleware, "POST", path, SMALL_LIMIT + 1, declared=declared) == 413
    assert app.bodies == [SMALL_LIMIT]


class Gate:
    """The route's `admits`: answers as told, and counts the times it was asked."""

    def __init__(self, admit: bool) -> None:
        self.admit = admit
        self.asked = 0

    async def __call__(self, scope: Scope) -> bool:
        self.asked += 1
        return self.admit


def _gated(gate: Gate) -> RouteBodyLimit:
    return RouteBodyLimit(INPUT.methods, INPUT.path, ROUTE_LIMIT, admits=gate)


@pytest.mark.parametrize("declared", [True, False], ids=["content_length", "streamed"])
async def test_a_turned_away_request_keeps_the_general_limit(declared: bool) -> None:
    app, gate = EchoApp(), Gate(admit=False)
    middleware = BodyLimitMiddleware(app, SMALL_LIMIT, [_gated(gate)])
    path = "/v1/sessions/s_1/input"
    assert await _post(middleware, "POST", path, SMALL_LIMIT + 1, declared=declared) == 413
    assert await _post(middleware, "POST", path, SMALL_LIMIT, declared=declared) == 200
    assert app.bodies == [SMALL_LIMIT]
    # A declared length within the general limit needs no question.
    assert gate.asked == (1 if declared else 2)


@pytest.mark.parametrize("declared", [True, False], ids=["content_length", "streamed"])
async def test_an_admitted_request_gets_the_routes_limit(declared: bool) -> None:
    app, gate = EchoApp(), Gate(admit=True)
    middleware = BodyLimitMiddleware(app, SMALL_LIMIT, [_gated(gate)])
    path = "/v1/sessions/s_1/input"
    assert await _post(middleware, "POST", path, ROUTE_LIMIT, declared=declared) == 200
    assert await _post(middleware, "POST", path, ROUTE_LIMIT + 1, declared=declared) == 413
    assert app.bodies == [ROUTE_LIMIT]
    assert gate.asked == 2
