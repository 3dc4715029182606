from __future__ import annotations

import json

import httpx2
import pytest

from rigway.agent.pairing import PairingError, pair


def _transport(
    status: int, body: object, seen: list[httpx2.Request] | None = None
) -> httpx2.MockTransport:
    def handler(request: httpx2.Request) -> httpx2.Response:
        if seen is not None:
            seen.append(request)
        return httpx2.Response(status, json=body)

    return httpx2.MockTransport(handler)


async def test_pair_posts_code_and_returns_token() -> None:
    seen: list[httpx2.Request] = []
    transport = _transport(201, {"rig_id": "rig-1", "rig_token": "secret"}, seen)
    result = await pair(
        "https://gw.example/", " ABCD-1234 ", "desk", "Debian 12", "NVIDIA", transport=transport
    )
    assert (result.rig_id, result.rig_token) == ("rig-1", "secret")
    assert "secret" not in repr(result)
    (request,) = seen
    assert request.method == "POST"
    assert str(request.url) == "https://gw.example/v1/agent/pair"
    assert json.loads(request.content) == {
        "code": "ABCD-1234",
        "name": "desk",
        "os": "Debian 12",
        "gpu": "NVIDIA",
    }


async def test_refused_code_names_the_reason() -> None:
    transport = _transport(400, {"error": "invalid_pairing_code"})
    with pytest.raises(PairingError, match=r"\(HTTP 400\): invalid_pairing_code") as caught:
        await pair("https://gw.example", "x", "n", "o", "g", transport=transport)
    assert caught.value.status_code == 400


async def test_answer_without_token_is_an_error() -> None:
    transport = _transport(200, {"rig_id": "rig-1"})
    with pytest.raises(PairingError, match="without a rig_id and rig_token"):
        await pair("https://gw.example", "x", "n", "o", "g", transport=transport)


async def test_unreachable_gateway_is_a_pairing_error() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    with pytest.raises(PairingError, match="cannot reach the gateway"):
        await pair(
            "https://gw.example", "x", "n", "o", "g", transport=httpx2.MockTransport(handler)
        )
