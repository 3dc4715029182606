"""Start-up of the windows backend: where it refuses to run, it says why in one line."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from rigway.agent.backends.windows import (
    WindowsUnavailableError,
    _import_bindings,
    _opened,
    open_windows_desktop,
)
from rigway.agent.backends.windows.bootstrap import (
    DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2,
    DPI_AWARENESS_PER_MONITOR_AWARE,
    DPI_AWARENESS_SYSTEM_AWARE,
    PROCESS_PER_MONITOR_DPI_AWARE,
    StartupFacts,
    make_per_monitor_aware,
    refuse_unless_runnable,
    startup_refusal,
)
from rigway.cli.agent_desktop import default_backend

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


def test_default_backend_off_windows_is_x11_on_a_display() -> None:
    assert default_backend("linux", ":0") == "x11"


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


# ---- DPI awareness on every Windows the agent may meet -----------------------------------


@dataclass
class FakeDpi:
    """`DpiPort` of a Windows build: a function it lacks answers None."""

    has_context_api: bool  # SetProcessDpiAwarenessContext: Windows 10 1703+
    has_thread_awareness: bool  # GetThreadDpiAwarenessContext & co: Windows 10 1607+
    has_shcore: bool  # Windows 8.1+
    awareness_set_before: int | None = None  # a manifest or an earlier call won
    calls: list[str] = field(default_factory=list)
    _awareness: int = DPI_UNAWARE

    def __post_init__(self) -> None:
        if self.awareness_set_before is not None:
            self._awareness = self.awareness_set_before

    def set_process_dpi_awareness_context(self, context: int) -> bool | None:
        self.calls.append("SetProcessDpiAwarenessContext")
        if not self.has_context_api:
            return None
        assert context == DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2
        return self._set(DPI_AWARENESS_PER_MONITOR_AWARE)

    def set_process_dpi_awareness(self, awareness: int) -> bool | None:
        self.calls.append("SetProcessDpiAwareness")
        if not self.has_shcore:
            return None
        assert awareness == PROCESS_PER_MONITOR_DPI_AWARE
        return self._set(DPI_AWARENESS_PER_MONITOR_AWARE)

    def thread_dpi_awareness(self) -> int | None:
        return self._awareness if self.has_thread_awareness else None

    def process_dpi_awareness(self) -> int | None:
        return self._awareness if self.has_shcore else None

    def _set(self, awareness: int) -> bool:
        if self.awareness_set_before is not None:
            return False  # ERROR_ACCESS_DENIED / E_ACCESSDENIED: set already
        self._awareness = awareness
        return True


def test_windows_10_1703_and_later_is_made_per_monitor_v2_without_shcore() -> None:
    port = FakeDpi(has_context_api=True, has_thread_awareness=True, has_shcore=True)
    assert make_per_monitor_aware(port) == DPI_AWARENESS_PER_MONITOR_AWARE
    assert port.calls == ["SetProcessDpiAwarenessContext"]


def test_windows_10_1607_falls_back_to_shcore() -> None:
    port = FakeDpi(has_context_api=False, has_thread_awareness=True, has_shcore=True)
    assert make_per_monitor_aware(port) == DPI_AWARENESS_PER_MONITOR_AWARE
    assert port.calls == ["SetProcessDpiAwarenessContext", "SetProcessDpiAwareness"]


def test_windows_8_1_and_10_1507_read_the_awareness_through_shcore() -> None:
    port = FakeDpi(has_context_api=False, has_thread_awareness=False, has_shcore=True)
    assert make_per_monitor_aware(port) == DPI_AWARENESS_PER_MONITOR_AWARE


def test_a_windows_without_any_dpi_function_cannot_tell() -> None:
    port = FakeDpi(has_context_api=False, has_thread_awareness=False, has_shcore=False)
    facts = StartupFacts(session_id=USER_SESSION, dpi_awareness=make_per_monitor_aware(port))
    assert facts.dpi_awareness is None
    assert startup_refusal(facts) is None


def test_system_awareness_set_first_on_windows_8_1_is_reported_and_refused() -> None:
    port = FakeDpi(
        has_context_api=False,
        has_thread_awareness=False,
        has_shcore=True,
        awareness_set_before=DPI_AWARENESS_SYSTEM_AWARE,
    )
    awareness = make_per_monitor_aware(port)
    assert awareness == DPI_AWARENESS_SYSTEM_AWARE
    assert startup_refusal(StartupFacts(USER_SESSION, awareness)) is not None


def test_a_binding_this_windows_cannot_load_is_one_line_unavailable() -> None:
    with pytest.raises(WindowsUnavailableError) as refused:
        _import_bindings("tests.agent.windows.unloadable_bindings")
    message = str(refused.value)
    assert "SetProcessDpiAwarenessContext" in message
    assert "\n" not in message
    assert isinstance(refused.value, RuntimeError)  # what `agent run` turns into exit 2


def test_a_missing_package_is_one_line_unavailable() -> None:
    with pytest.raises(WindowsUnavailableError, match="cannot load"):
        _import_bindings("tests.agent.windows.no_such_binding")


def test_a_package_missing_at_first_use_is_one_line_unavailable() -> None:
    def open_without_comtypes() -> None:
        raise ModuleNotFoundError("No module named 'comtypes'", name="comtypes")

    with pytest.raises(WindowsUnavailableError, match="No module named 'comtypes'"):
        _opened(open_without_comtypes)
