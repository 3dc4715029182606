"""An X display the x11 backend cannot use ends `rigway agent run` and `rigway up` at
once: exit 2 and one message naming the display, no traceback, no stack left waiting.

Each command runs through the real entry point in a subprocess. No X server is needed:
the displays here are unset, absent, or a TCP listener that never answers the X setup.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.local_processes import free_port

RIGWAY_SCRIPT = Path(sys.executable).parent / "rigway"
# Well above the 5 s the commands give a display to answer; only a hang reaches it.
RUN_TIMEOUT_S = 60.0


@dataclass
class Result:
    exit_code: int
    stderr: str


def rigway(*args: str, display: str | None, cwd: Path) -> Result:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    if display is not None:
        env["DISPLAY"] = display
    command = (
        [str(RIGWAY_SCRIPT)]
        if RIGWAY_SCRIPT.exists()
        else [sys.executable, "-m", "rigway.cli.main"]
    )
    done = subprocess.run(
        [*command, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )
    return Result(done.returncode, done.stderr)


def agent_run(tmp_path: Path, display: str | None) -> Result:
    token_file = tmp_path / "rig.token"
    token_file.write_text("rgw_rig_not_a_real_token")
    return rigway(
        "agent",
        "run",
        "--gateway",
        "http://127.0.0.1:9",
        "--token-file",
        str(token_file),
        "--backend",
        "x11",
        display=display,
        cwd=tmp_path,
    )


def up_x11(tmp_path: Path, display: str) -> Result:
    # A free port rather than 8080: without the display check the stack would start,
    # its agents fail, and `up` wait out their online timeout into a TimeoutError.
    return rigway(
        "up", "--desktop", "x11", "--port", str(free_port()),
        "--state-dir", str(tmp_path / "state"),
        display=display, cwd=tmp_path,
    )  # fmt: skip


def assert_clean_failure(result: Result, *fragments: str) -> None:
    assert result.exit_code == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


@pytest.fixture
def absent_display() -> str:
    """A local display number no X server listens on."""
    number = next(n for n in range(987, 1987) if not Path(f"/tmp/.X11-unix/X{n}").exists())
    return f":{number}"


@pytest.fixture
def silent_display() -> Iterator[str]:
    """A TCP display (port 6000 + n) that accepts connections and never answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert port > 6000
        yield f"127.0.0.1:{port - 6000}"


def test_agent_run_x11_without_display_exits_2_with_message(tmp_path: Path) -> None:
    result = agent_run(tmp_path, display=None)

    assert_clean_failure(result, "cannot open the x11 desktop", "DISPLAY is unset")


def test_agent_run_x11_on_absent_display_names_it(tmp_path: Path, absent_display: str) -> None:
    result = agent_run(tmp_path, display=absent_display)

    assert_clean_failure(result, "cannot open the x11 desktop", repr(absent_display))


def test_agent_run_x11_on_silent_display_gives_up_with_message(
    tmp_path: Path, silent_display: str
) -> None:
    result = agent_run(tmp_path, display=silent_display)

    assert_clean_failure(result, repr(silent_display), "did not answer")


@pytest.mark.parametrize(
    ("display_fixture", "reason"),
    [("absent_display", "cannot open X display"), ("silent_display", "did not answer")],
    ids=["absent", "silent"],
)
def test_up_x11_on_a_bad_display_fails_before_starting(
    tmp_path: Path, request: pytest.FixtureRequest, display_fixture: str, reason: str
) -> None:
    display: str = request.getfixturevalue(display_fixture)
    result = up_x11(tmp_path, display)

    assert_clean_failure(result, f"DISPLAY={display}", reason)
    assert not (tmp_path / "state" / "local.json").exists()
    assert not (tmp_path / "state" / "agents").exists()
