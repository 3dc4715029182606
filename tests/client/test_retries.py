"""Retry policy: what is retried, how long the SDK waits, and what never is."""

from __future__ import annotations

import httpx2
import pytest

from rigway.client import (
    APIConnectionError,
    APIStatusError,
    APITimeoutError,
    HostError,
    HostTimeoutError,
    InputEvent,
    InternalServerError,
    RateLimitError,
    Rigway,
    SessionHandle,
    _core,
)
from rigway.client import _operations as ops

from .conftest import API_KEY, BASE_URL, NOW, FakeGateway, FakeSleep, error, ok, session_json

RIGS = ok({"rigs": []})


def test_429_with_retry_after_is_waited_out_then_succeeds(
    client: Rigway, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    gateway.on("GET", "/v1/rigs", error(429, "rate_limited", **{"Retry-After": "3"}), RIGS)
    assert client.rigs.list() == []
    assert sleeps.waits == [3.0]
    assert len(gateway.requests) == 2


def test_503_is_retried_with_backoff(
    client: Rigway, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    gateway.on("GET", "/v1/rigs", error(503, "unavailable"), RIGS)
    assert client.rigs.list() == []
    assert sleeps.waits == [_core.INITIAL_RETRY_DELAY_S]


def test_backoff_doubles_until_retries_run_out(
    client: Rigway, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    gateway.on("GET", "/v1/rigs", error(503, "unavailable"))
    with pytest.raises(InternalServerError):
        client.rigs.list()
    assert len(gateway.requests) == 1 + _core.DEFAULT_MAX_RETRIES
    assert sleeps.waits == [0.5, 1.0]


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (401, "invalid_api_key"),
        (403, "api_access_disabled"),
        (410, "session_ended"),
        (400, "invalid_request"),
        (404, "rig_not_found"),
        (409, "rig_busy"),
    ],
)
def test_stop_errors_and_other_4xx_are_raised_at_once(
    client: Rigway, gateway: FakeGateway, sleeps: FakeSleep, status: int, code: str
) -> None:
    gateway.on("GET", "/v1/rigs", error(status, code), RIGS)
    with pytest.raises(APIStatusError) as caught:
        client.rigs.list()
    assert caught.value.code == code
    assert len(gateway.requests) == 1
    assert sleeps.waits == []


def test_connection_errors_are_retried_then_raised(
    client: Rigway, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    gateway.on("GET", "/v1/rigs", httpx2.ConnectError("connection refused"))
    with pytest.raises(APIConnectionError) as caught:
        client.rigs.list()
    assert type(caught.value) is APIConnectionError
    assert caught.value.code == "connection_error"
    assert len(gateway.requests) == 3
    assert len(sleeps.waits) == 2


def test_connection_error_then_success(
    client: Rigway, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    gateway.on("GET", "/v1/rigs", httpx2.ConnectError("refused"), RIGS)
    assert client.rigs.list() == []
    assert len(sleeps.waits) == 1


def test_read_timeouts_of_reads_are_retried_then_raised(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("GET", "/v1/rigs", httpx2.ReadTimeout("slow"))
    with pytest.raises(APITimeoutError):
        client.rigs.list()
    assert len(gateway.requests) == 3


@pytest.fixture
def session(client: Rigway, gateway: FakeGateway) -> SessionHandle:
    gateway.on("POST", "/v1/sessions", ok(session_json(), 201))
    handle = client.sessions.create(rig_id="rig_1")
    gateway.requests.clear()
    return handle


def test_input_is_not_replayed_after_a_read_timeout(
    session: SessionHandle, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions/ses_1/input", httpx2.ReadTimeout("slow"))
    with pytest.raises(APITimeoutError):
        session.type_text("hello")
    assert len(gateway.requests) == 1


def test_input_is_not_replayed_after_a_host_timeout(
    session: SessionHandle, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions/ses_1/input", error(504, "host_timeout"))
    with pytest.raises(HostTimeoutError):
        session.input([InputEvent.type_text("hello")])
    assert len(gateway.requests) == 1


def test_input_is_replayed_after_answers_given_before_it_ran(
    session: SessionHandle, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    gateway.on(
        "POST",
        "/v1/sessions/ses_1/input",
        error(429, "rate_limited", **{"Retry-After": "1"}),
        httpx2.ConnectError("refused"),
        ok({"ok": True, "count": 1}),
    )
    assert session.key("enter").count == 1
    assert len(gateway.requests) == 3
    assert sleeps.waits == [1.0, 1.0]  # Retry-After, then backoff for attempt 2 (0.5·2)


def test_session_create_is_retried_after_a_host_error(client: Rigway, gateway: FakeGateway) -> None:
    # A 502 leaves the session `failed` on the gateway, so starting again is safe.
    gateway.on("POST", "/v1/sessions", error(502, "host_error"), ok(session_json(), 201))
    assert client.sessions.create(rig_id="rig_1").id == "ses_1"


def test_session_create_is_not_replayed_after_a_read_timeout(
    client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("POST", "/v1/sessions", httpx2.ReadTimeout("slow"), ok(session_json(), 201))
    with pytest.raises(APITimeoutError):
        client.sessions.create(rig_id="rig_1")
    assert len(gateway.requests) == 1


def test_long_retry_after_is_not_slept_through(
    client: Rigway, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    gateway.on("GET", "/v1/rigs", error(429, "concurrency_limit", **{"Retry-After": "120"}), RIGS)
    with pytest.raises(RateLimitError) as caught:
        client.rigs.list()
    assert caught.value.retry_after == 120.0
    assert sleeps.waits == []


def test_retry_after_as_http_date_uses_the_clock(
    client: Rigway, gateway: FakeGateway, sleeps: FakeSleep
) -> None:
    # NOW is 2023-11-14T22:13:20Z; the gateway asks for 22:13:25.
    date = "Tue, 14 Nov 2023 22:13:25 GMT"
    gateway.on("GET", "/v1/rigs", error(503, "unavailable", **{"Retry-After": date}), RIGS)
    client.rigs.list()
    assert sleeps.waits == [5.0]


def test_max_retries_zero_never_retries(gateway: FakeGateway, sleeps: FakeSleep) -> None:
    client = Rigway(
        API_KEY, BASE_URL, transport=httpx2.MockTransport(gateway), max_retries=0, sleep=sleeps
    )
    gateway.on("GET", "/v1/rigs", error(502, "host_error"), RIGS)
    with pytest.raises(HostError):
        client.rigs.list()
    assert sleeps.waits == []


def test_retried_observe_reports_a_change(session: SessionHandle, gateway: FakeGateway) -> None:
    # The lost attempt may have consumed the dirty take: "no change" can't be trusted.
    body = {"width": 8, "height": 8, "native_width": 8, "native_height": 8, "changed": False}
    gateway.on("GET", "/v1/sessions/ses_1/observe", httpx2.ReadTimeout("slow"), ok(body))
    assert session.observe().changed is True


def test_retried_dirty_take_reports_metadata_unavailable(
    session: SessionHandle, gateway: FakeGateway
) -> None:
    body = {"width": 8, "height": 8, "available": True, "capture_mode": "dxgi", "rects": []}
    gateway.on("GET", "/v1/sessions/ses_1/dirty", error(504, "host_timeout"), ok(body))
    dirty = session.dirty()
    assert (dirty.available, dirty.changed) == (False, True)


def test_first_observe_answer_is_trusted(session: SessionHandle, gateway: FakeGateway) -> None:
    body = {"width": 8, "height": 8, "native_width": 8, "native_height": 8, "changed": False}
    gateway.on("GET", "/v1/sessions/ses_1/observe", ok(body))
    assert session.observe().changed is False


# --------------------------------------------------------------- pure functions


def test_backoff_is_jittered_down_and_capped() -> None:
    assert _core.backoff_delay(0, random=lambda: 0.0) == 0.5
    assert _core.backoff_delay(0, random=lambda: 1.0) == 0.5 * (1 - _core.RETRY_JITTER_RATIO)
    assert _core.backoff_delay(10, random=lambda: 0.0) == _core.MAX_RETRY_DELAY_S


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("3", 3.0),
        ("0.25", 0.25),
        ("-4", 0.0),
        ("soon", None),
        ("nan", None),
        ("Tue, 14 Nov 2023 22:13:30 GMT", 10.0),
    ],
)
def test_parse_retry_after(value: str, seconds: float | None) -> None:
    assert _core.parse_retry_after(httpx2.Headers({"Retry-After": value}), now=NOW) == seconds


def test_retry_delay_gives_up_after_max_retries() -> None:
    response = httpx2.Response(503)
    kwargs = {"max_retries": 2, "response": response, "random": lambda: 0.0, "now": lambda: NOW}
    operation = ops.list_rigs()
    assert _core.retry_delay(operation, attempt=1, **kwargs) == 1.0  # type: ignore[arg-type]
    assert _core.retry_delay(operation, attempt=2, **kwargs) is None  # type: ignore[arg-type]
