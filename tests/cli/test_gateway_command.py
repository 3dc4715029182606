"""`rigway gateway`: one node from its settings, JSON logs, a drain on SIGTERM, and the
refusals of a node that is one of several (through the real entry point where the
process's own behaviour is the point)."""

from __future__ import annotations

import asyncio
import json
import signal
import stat
from pathlib import Path

import httpx2
import pytest
from pydantic import ValidationError

from rigway.gateway.deployment import start_problems, write_shared_key_files
from rigway.gateway.settings import GatewaySettings

from .conftest import closed_port
from .test_up_serving import UP_TIMEOUT_S, rigway_command, up_env

POSTGRES_URL = "postgresql+asyncpg://postgres@127.0.0.1:5432/test"


def test_a_node_alone_needs_nothing_shared(tmp_path: Path) -> None:
    assert start_problems(GatewaySettings(state_dir=tmp_path)) == []


def test_one_of_several_on_sqlite_without_key_files_names_what_to_set(tmp_path: Path) -> None:
    settings = GatewaySettings(state_dir=tmp_path, redis_url="redis://127.0.0.1:6379/0")

    problems = start_problems(settings)

    assert [problem.split(":")[0] for problem in problems] == [
        "RIGWAY_DATABASE_URL",
        "RIGWAY_NODE_URL",
        "RIGWAY_SECRET_KEY_FILE",
        "RIGWAY_CONSOLE_SIGNING_KEY_FILE",
        "RIGWAY_RELEASE_SIGNING_KEY_FILE",
    ]
    assert "SQLite file cannot be shared" in problems[0]


def test_shared_key_files_are_private_and_made_once(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    files = write_shared_key_files(keys)
    contents = {path: path.read_bytes() for path in keys.iterdir()}

    again = write_shared_key_files(keys)

    assert again == files
    assert {path: path.read_bytes() for path in keys.iterdir()} == contents
    assert len(contents) == 3
    assert stat.S_IMODE(keys.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(path.stat().st_mode) == 0o600 for path in contents)
    settings = GatewaySettings(
        state_dir=tmp_path / "state",
        redis_url="redis://127.0.0.1:6379/0",
        database_url=POSTGRES_URL,
        node_url="http://10.0.0.5:8080",
        secret_key_file=files.secret_key_file,
        console_signing_key_file=files.console_signing_key_file,
        release_signing_key_file=files.release_signing_key_file,
    )
    assert start_problems(settings) == []


def test_a_missing_key_file_is_named(tmp_path: Path) -> None:
    files = write_shared_key_files(tmp_path / "keys")
    files.console_signing_key_file.unlink()
    settings = GatewaySettings(
        state_dir=tmp_path / "state",
        redis_url="redis://127.0.0.1:6379/0",
        database_url=POSTGRES_URL,
        node_url="http://10.0.0.5:8080",
        secret_key_file=files.secret_key_file,
        console_signing_key_file=files.console_signing_key_file,
        release_signing_key_file=files.release_signing_key_file,
    )

    assert start_problems(settings) == [
        f"RIGWAY_CONSOLE_SIGNING_KEY_FILE: {files.console_signing_key_file} is not a file; "
        "the console's signing key, the same file on every node (or RIGWAY_CONSOLE_JWKS_URL "
        "for an external identity provider)"
    ]


async def _gateway_that_exits(
    tmp_path: Path, *arguments: str, env: dict[str, str]
) -> tuple[int | None, str]:
    """`rigway gateway` run to its end (it is expected to refuse to start): its exit
    code and what it wrote to stderr."""
    process = await asyncio.create_subprocess_exec(
        *rigway_command(), "gateway", *arguments, cwd=tmp_path, env=env,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    async with asyncio.timeout(UP_TIMEOUT_S):
        _, stderr = await process.communicate()
    return process.returncode, stderr.decode()


async def test_one_of_several_on_sqlite_exits_2_before_listening(tmp_path: Path) -> None:
    returncode, stderr = await _gateway_that_exits(
        tmp_path, "--port", str(closed_port()),
        env=up_env() | {"RIGWAY_REDIS_URL": "redis://127.0.0.1:6379/0",
                        "RIGWAY_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip

    assert returncode == 2
    lines = stderr.splitlines()
    assert lines[0] == "rigway gateway: this node cannot start as one of several:"
    assert lines[1].startswith("  RIGWAY_DATABASE_URL: ")
    assert not (tmp_path / "state").exists()


async def test_settings_out_of_bounds_exit_2_with_the_setting_named(tmp_path: Path) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text("shutdown_grace_s = -1\n")
    returncode, stderr = await _gateway_that_exits(tmp_path, "--config", str(config), env=up_env())

    assert returncode == 2
    assert "  shutdown_grace_s: Input should be greater than or equal to 0" in stderr


@pytest.mark.parametrize(
    "node_url",
    [
        "10.0.0.5:8080",  # no scheme
        "gw-b:8080",
        "ws://10.0.0.5:8080",
        "http://",
        "http://10.0.0.5:99999",
        "http://10.0.0.5:8080/gateway",  # the nodes dial the root only
        "http://10.0.0.5:8080?token=x",
    ],
)
def test_a_node_url_that_other_nodes_cannot_dial_is_refused(tmp_path: Path, node_url: str) -> None:
    with pytest.raises(ValidationError) as refused:
        GatewaySettings(state_dir=tmp_path, node_url=node_url)
    [error] = refused.value.errors()
    assert error["loc"] == ("node_url",)
    assert "RIGWAY_NODE_URL must be this node's http:// or https:// address" in error["msg"]


@pytest.mark.parametrize(
    "node_url",
    ["http://10.0.0.5:8080", "https://gw-b.internal", "http://[fd00::5]:8080/", None],
)
def test_a_node_url_with_a_scheme_and_a_host_is_kept(tmp_path: Path, node_url: str | None) -> None:
    assert GatewaySettings(state_dir=tmp_path, node_url=node_url).node_url == node_url


async def test_a_node_url_without_a_scheme_exits_2_with_the_setting_named(
    tmp_path: Path,
) -> None:
    returncode, stderr = await _gateway_that_exits(
        tmp_path, "--port", str(closed_port()),
        env=up_env() | {"RIGWAY_NODE_URL": "10.0.0.5:8080",
                        "RIGWAY_STATE_DIR": str(tmp_path / "state")},
    )  # fmt: skip

    assert returncode == 2
    lines = stderr.splitlines()
    assert lines[0] == "rigway gateway: settings that cannot work:"
    assert lines[1].startswith("  node_url: Value error, RIGWAY_NODE_URL must be ")
    assert not (tmp_path / "state").exists()


async def test_json_logs_from_start_to_a_sigterm_stop(tmp_path: Path) -> None:
    port = closed_port()
    config = tmp_path / "gateway.toml"
    config.write_text(f'state_dir = "{tmp_path / "state"}"\nshutdown_grace_s = 5\n')
    process = await asyncio.create_subprocess_exec(
        *rigway_command(), "gateway", "--port", str(port), "--config", str(config),
        "--log-format", "json", "--log-level", "info", cwd=tmp_path, env=up_env(),
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stderr is not None
    entries: list[dict[str, str]] = []

    async def until_logged(words: str) -> None:
        while True:
            line = await process.stderr.readline()  # type: ignore[union-attr]
            assert line, f"the gateway closed its log before {words!r}"
            entries.append(json.loads(line))
            if words in entries[-1]["message"]:
                return

    try:
        async with asyncio.timeout(UP_TIMEOUT_S):
            await until_logged("Application startup complete")
            async with httpx2.AsyncClient(trust_env=False) as client:
                response = await client.get(f"http://127.0.0.1:{port}/healthz")
            assert response.status_code == 200
            await until_logged("GET /healthz HTTP/1.1")
            process.send_signal(signal.SIGTERM)
            await until_logged("draining: 0 requests in flight")
            await until_logged("stopped")
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == 0
    assert {entry["level"] for entry in entries} <= {"info", "warning"}
    assert all(set(entry) == {"time", "level", "logger", "message"} for entry in entries)
    assert (tmp_path / "state" / "rigway.db").exists()
