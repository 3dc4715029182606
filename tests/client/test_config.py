"""Construction: arguments, then environment variables, then `.rigway/local.json`, read at
construction; ownership of the HTTP client."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import pytest

from rigway.client import DEFAULT_BASE_URL, AsyncRigway, Rigway, RigwayConsole, RigwayError

from .conftest import FakeGateway, ok


@pytest.fixture
def rigs(gateway: FakeGateway) -> FakeGateway:
    gateway.on("GET", "/v1/rigs", ok({"rigs": []}))
    return gateway


@pytest.fixture
def no_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A working directory with no local.json above it and no credential variables."""
    for name in ("RIGWAY_API_KEY", "RIGWAY_BASE_URL", "RIGWAY_CONSOLE_TOKEN", "RIGWAY_STATE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_local_json(directory: Path, **fields: object) -> Path:
    state_dir = directory / ".rigway"
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / "local.json"
    path.write_text(json.dumps(fields))
    return path


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


def test_missing_api_key_fails_at_construction(no_credentials: Path) -> None:
    with pytest.raises(RigwayError, match="RIGWAY_API_KEY") as caught:
        Rigway()
    assert caught.value.code == "missing_api_key"
    assert "rigway up" in str(caught.value)


def test_local_json_in_a_parent_directory_is_used_without_arguments(
    no_credentials: Path, rigs: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_local_json(no_credentials, api_key="local_key", base_url="http://local.test:8080")
    nested = no_credentials / "project" / "scripts"
    nested.mkdir(parents=True)
    monkeypatch.chdir(nested)
    Rigway(transport=httpx2.MockTransport(rigs)).rigs.list()
    assert str(rigs.last.url) == "http://local.test:8080/v1/rigs"
    assert rigs.last.headers["Authorization"] == "Bearer local_key"


def test_the_nearest_local_json_wins(
    no_credentials: Path, rigs: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_local_json(no_credentials, api_key="outer_key")
    inner = no_credentials / "inner"
    write_local_json(inner, api_key="inner_key")
    monkeypatch.chdir(inner)
    Rigway(base_url="http://g", transport=httpx2.MockTransport(rigs)).rigs.list()
    assert rigs.last.headers["Authorization"] == "Bearer inner_key"


def test_environment_wins_over_local_json_value_by_value(
    no_credentials: Path, rigs: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_local_json(no_credentials, api_key="local_key", base_url="http://local.test")
    monkeypatch.setenv("RIGWAY_API_KEY", "env_key")
    Rigway(transport=httpx2.MockTransport(rigs)).rigs.list()
    assert rigs.last.headers["Authorization"] == "Bearer env_key"
    assert str(rigs.last.url) == "http://local.test/v1/rigs"


def test_arguments_win_over_local_json(no_credentials: Path, rigs: FakeGateway) -> None:
    write_local_json(no_credentials, api_key="local_key", base_url="http://local.test")
    Rigway("arg_key", "http://arg.test", transport=httpx2.MockTransport(rigs)).rigs.list()
    assert str(rigs.last.url) == "http://arg.test/v1/rigs"
    assert rigs.last.headers["Authorization"] == "Bearer arg_key"


def test_state_dir_variable_names_the_local_json_to_read(
    no_credentials: Path, rigs: FakeGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_local_json(no_credentials, api_key="walked_key")
    elsewhere = no_credentials / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "local.json").write_text(json.dumps({"api_key": "state_dir_key"}))
    monkeypatch.setenv("RIGWAY_STATE_DIR", str(elsewhere))
    Rigway(base_url="http://g", transport=httpx2.MockTransport(rigs)).rigs.list()
    assert rigs.last.headers["Authorization"] == "Bearer state_dir_key"


def test_a_broken_local_json_is_ignored(no_credentials: Path) -> None:
    (no_credentials / ".rigway").mkdir()
    (no_credentials / ".rigway" / "local.json").write_text("{not json")
    with pytest.raises(RigwayError) as caught:
        Rigway()
    assert caught.value.code == "missing_api_key"


async def test_async_client_reads_local_json(no_credentials: Path, rigs: FakeGateway) -> None:
    write_local_json(no_credentials, api_key="local_key", base_url="http://local.test")
    async with AsyncRigway(transport=httpx2.MockTransport(rigs)) as client:
        await client.rigs.list()
    assert rigs.last.headers["Authorization"] == "Bearer local_key"
    assert str(rigs.last.url) == "http://local.test/v1/rigs"


def test_console_client_takes_the_console_token_from_local_json(no_credentials: Path) -> None:
    write_local_json(no_credentials, api_key="local_key", console_token="local_console")
    console = RigwayConsole(transport=httpx2.MockTransport(lambda r: ok({})))
    assert console._token == "local_console"
    assert console.base_url == DEFAULT_BASE_URL


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
