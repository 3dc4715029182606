"""Start-up of the windows backend: where it refuses to run, it says why in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rigway.agent.backends.windows import WindowsUnavailableError, open_windows_desktop
from rigway.agent.backends.windows.bootstrap import (
    DPI_AWARENESS_PER_MONITOR_AWARE,
    StartupFacts,
    refuse_unless_runnable,
    startup_refusal,
)
from rigway.cli.agent import default_backend

RUN_TIMEOUT_S = 60.0
USER_SESSION = 1
DPI_UNAWARE = 0


def test_session_zero_is_refused_with_one_line() -> None:
    facts = StartupFacts(session_id=0, dpi_awareness=DPI_AWARENESS_PER_MONITOR_AWARE)
    with pytest.raises(WindowsUnavailableError) as refused:
        refuse_unless_runnable(facts)
    message = str(refused.value)
    assert "Session 0" in message
    assert "\n" not in message


def test_user_session_with_per_monitor_dpi_starts() -> None:
    facts = StartupFacts(session_id=USER_SESSION, dpi_awareness=DPI_AWARENESS_PER_MONITOR_AWARE)
    assert startup_refusal(facts) is None


def test_dpi_awareness_set_by_someone_else_is_refused() -> None:
    facts = StartupFacts(session_id=USER_SESSION, dpi_awareness=DPI_UNAWARE)
    refusal = startup_refusal(facts)
    assert refusal is not None
    assert "DPI" in refusal


def test_unreadable_facts_do_not_block_start() -> None:
    # Reading the session or the awareness can fail on odd builds; that alone is no
    # reason to refuse (capture and input report their own failures).
    assert startup_refusal(StartupFacts(session_id=None, dpi_awareness=None)) is None


@pytest.mark.skipif(sys.platform == "win32", reason="checks the refusal on other platforms")
def test_opening_off_windows_raises_the_reason() -> None:
    with pytest.raises(WindowsUnavailableError, match="only on Windows"):
        open_windows_desktop()


@pytest.mark.skipif(sys.platform == "win32", reason="the default is windows there")
def test_default_backend_off_windows_stays_sim() -> None:
    assert default_backend() == "sim"


@pytest.mark.skipif(sys.platform == "win32", reason="checks the refusal on other platforms")
def test_agent_run_with_windows_backend_exits_2_with_one_line(tmp_path: Path) -> None:
    token_file = tmp_path / "rig.token"
    token_file.write_text("rgw_rig_not_a_real_token")
    done = subprocess.run(
        [
            sys.executable, "-m", "rigway", "agent", "run",
            "--gateway", "http://127.0.0.1:9", "--token-file", str(token_file),
            "--backend", "windows",
        ],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "runs only on Windows" in lines[0]
