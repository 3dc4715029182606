"""Error mapping: one class per status, code/detail split, request id, 429 headers."""

from __future__ import annotations

import httpx2
import pytest

from rigway.client import (
    APIConnectionError,
    APIResponseValidationError,
    APIStatusError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    HostError,
    HostTimeoutError,
    InternalServerError,
    NotFoundError,
    PermissionDeniedError,
    RateLimitError,
    RigBusyError,
    Rigway,
    RigwayError,
    SessionEndedError,
)

from .conftest import API_KEY, BASE_URL, FakeGateway, error, ok


@pytest.fixture
def no_retry_client(gateway: FakeGateway) -> Rigway:
    return Rigway(API_KEY, BASE_URL, transport=httpx2.MockTransport(gateway), max_retries=0)


@pytest.mark.parametrize(
    ("status", "text", "error_class", "code", "detail"),
    [
        (
            400,
            "invalid_request: x is outside the desktop",
            BadRequestError,
            "invalid_request",
            "x is outside the desktop",
        ),
        (401, "invalid_api_key", AuthenticationError, "invalid_api_key", None),
        (401, "invalid_console_token", AuthenticationError, "invalid_console_token", None),
        (403, "api_access_disabled", PermissionDeniedError, "api_access_disabled", None),
        (403, "insufficient_scope: input", PermissionDeniedError, "insufficient_scope", "input"),
        (404, "rig_not_found", NotFoundError, "rig_not_found", None),
        (
            409,
            "rig_busy: the rig already has an active session",
            RigBusyError,
            "rig_busy",
            "the rig already has an active session",
        ),
        (410, "session_ended", SessionEndedError, "session_ended", None),
        (429, "concurrency_limit", RateLimitError, "concurrency_limit", None),
        (
            502,
            "host_error: capture failed: DXGI lost",
            HostError,
            "host_error",
            "capture failed: DXGI lost",
        ),
        (503, "unavailable", InternalServerError, "unavailable", None),
        (504, "host_timeout", HostTimeoutError, "host_timeout", None),
        (500, "internal_error", InternalServerError, "internal_error", None),
        (418, "teapot", APIStatusError, "teapot", None),
    ],
)
def test_status_maps_to_its_error_class(
    no_retry_client: Rigway,
    gateway: FakeGateway,
    status: int,
    text: str,
    error_class: type[APIStatusError],
    code: str,
    detail: str | None,
) -> None:
    gateway.on("GET", "/v1/rigs", error(status, text, **{"X-Request-Id": "req_42"}))
    with pytest.raises(APIStatusError) as caught:
        no_retry_client.rigs.list()
    err = caught.value
    assert type(err) is error_class
    assert (err.status, err.code, err.detail, err.request_id) == (status, code, detail, "req_42")
    assert err.message == f"{status} {text}"
    assert "req_42" in str(err)
    assert err.response.status_code == status


def test_request_id_is_none_without_the_header(
    no_retry_client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("GET", "/v1/rigs/rig_x", error(404, "rig_not_found"))
    with pytest.raises(NotFoundError) as caught:
        no_retry_client.rigs.get("rig_x")
    assert caught.value.request_id is None
    assert str(caught.value) == "404 rig_not_found"


def test_non_gateway_error_body_gets_an_http_code(
    no_retry_client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("GET", "/v1/rigs", httpx2.Response(502, text="<html>Bad Gateway</html>"))
    with pytest.raises(HostError) as caught:
        no_retry_client.rigs.list()
    assert (caught.value.code, caught.value.detail) == ("http_502", None)


def test_rate_limit_error_carries_quota_headers(
    no_retry_client: Rigway, gateway: FakeGateway
) -> None:
    headers = {
        "Retry-After": "7",
        "RateLimit-Limit": "600",
        "RateLimit-Remaining": "0",
        "RateLimit-Reset": "7",
    }
    gateway.on("GET", "/v1/rigs", error(429, "rate_limited", **headers))
    with pytest.raises(RateLimitError) as caught:
        no_retry_client.rigs.list()
    err = caught.value
    assert (err.retry_after, err.limit, err.remaining, err.reset) == (7.0, 600, 0, 7)


def test_malformed_success_body_is_a_validation_error(
    no_retry_client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("GET", "/v1/rigs/rig_1", ok({"id": "rig_1"}, 200))
    with pytest.raises(APIResponseValidationError) as caught:
        no_retry_client.rigs.get("rig_1")
    assert caught.value.code == "invalid_response"


def test_non_json_success_body_is_a_validation_error(
    no_retry_client: Rigway, gateway: FakeGateway
) -> None:
    gateway.on("GET", "/v1/rigs", httpx2.Response(200, text="hello"))
    with pytest.raises(APIResponseValidationError):
        no_retry_client.rigs.list()


def test_every_error_is_a_rigway_error() -> None:
    for error_class in (
        APIStatusError,
        APIConnectionError,
        APITimeoutError,
        APIResponseValidationError,
        SessionEndedError,
    ):
        assert issubclass(error_class, RigwayError)
    assert issubclass(APITimeoutError, APIConnectionError)
    assert APITimeoutError().code == "timeout"
    assert APITimeoutError().status is None
