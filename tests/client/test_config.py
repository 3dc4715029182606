"""Construction: environment variables read at construction, ownership of the HTTP client."""

from __future__ import annotations

import httpx2
import pytest

from rigway.client import DEFAULT_BASE_URL, Rigway, RigwayError

from .conftest import FakeGateway, ok


@pytest.fixture
def rigs(gateway: FakeGateway) -> FakeGateway:
    gateway.on("GET", "/v1/rigs", ok({"rigs": []}))
    return gateway


def test_environment_is_read_when_arguments_are_missing(
    monkeypatch: pytest.MonkeyPatch, rigs: FakeGateway
) -> None:
    monkeypatch.setenv("RIGWAY_API_KEY", "env_key")
    monkeypatch.setenv("RIGWAY_BASE_URL", "http://env.test/")
    client = Rigway(transport=httpx2.MockTransport(rigs))
    monkeypatch.setenv("RIGWAY_API_KEY", "changed_later")  # read once, at construction
    client.rigs.list()
    assert str(rigs.last.url) == "http://env.test/v1/rigs"
    assert rigs.last.headers["Authorization"] == "Bearer env_key"


def test_arguments_win_over_environment(monkeypatch: pytest.MonkeyPatch, rigs: FakeGateway) -> None:
    monkeypatch.setenv("RIGWAY_API_KEY", "env_key")
    monkeypatch.setenv("RIGWAY_BASE_URL", "http://env.test")
    Rigway("arg_key", "http://arg.test", transport=httpx2.MockTransport(rigs)).rigs.list()
    assert str(rigs.last.url) == "http://arg.test/v1/rigs"
    assert rigs.last.headers["Authorization"] == "Bearer arg_key"


def test_default_base_url(monkeypatch: pytest.MonkeyPatch, rigs: FakeGateway) -> None:
    monkeypatch.delenv("RIGWAY_BASE_URL", raising=False)
    client = Rigway("k", transport=httpx2.MockTransport(rigs))
    assert client.base_url == DEFAULT_BASE_URL == "http://127.0.0.1:8080"


def test_missing_api_key_fails_at_construction(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RIGWAY_API_KEY", raising=False)
    with pytest.raises(RigwayError, match="RIGWAY_API_KEY") as caught:
        Rigway()
    assert caught.value.code == "missing_api_key"


def test_context_manager_closes_its_own_http_client(rigs: FakeGateway) -> None:
    with Rigway("k", "http://g", transport=httpx2.MockTransport(rigs)) as client:
        client.rigs.list()
    assert client._http.is_closed


def test_a_passed_http_client_is_left_to_its_owner(rigs: FakeGateway) -> None:
    http = httpx2.Client(transport=httpx2.MockTransport(rigs))
    with Rigway("k", "http://g", http_client=http) as client:
        client.rigs.list()
    assert not http.is_closed
    assert str(rigs.last.url) == "http://g/v1/rigs"
    http.close()


def test_transport_and_http_client_together_are_refused() -> None:
    with (
        httpx2.Client() as http,
        pytest.raises(ValueError, match="either"),
    ):
        Rigway("k", transport=httpx2.MockTransport(lambda r: ok({})), http_client=http)
