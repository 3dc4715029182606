"""What the Windows agent checks and sets before anything else runs.

Pure: the decisions, over facts the binding (`_bootstrap.py`) reads.

- DPI: the process must be per-monitor DPI aware (v2) before any window, capture or UI
  Automation call, or screen metrics, UIA rectangles and input disagree at any scale
  other than 100% (a DPI-unaware process is also handed black DXGI frames). The first
  call in a process wins, which is why this runs first. Per-monitor v2 needs Windows 10
  1703; before it (1507-1607, Server 2016, 8.1) shcore's per-monitor (v1) is the best
  there is, so every DPI function is looked up when called (`DpiPort`), never assumed.
- Session 0: an agent started as a service runs in Session 0, which has no access to
  the user's desktop: capture and input would see and drive nothing. It must run in
  the logged-on user's session (a Task Scheduler at-logon task), so it refuses here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from rigway.agent.backends.windows.abi import AbiDeclarations
from rigway.agent.backends.windows.errors import WindowsUnavailableError

__all__ = [
    "ABI",
    "DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2",
    "DPI_AWARENESS_PER_MONITOR_AWARE",
    "DPI_AWARENESS_SYSTEM_AWARE",
    "DPI_AWARENESS_UNAWARE",
    "PROCESS_DPI_UNAWARE",
    "PROCESS_PER_MONITOR_DPI_AWARE",
    "PROCESS_SYSTEM_DPI_AWARE",
    "DpiPort",
    "StartupFacts",
    "make_per_monitor_aware",
    "refuse_unless_runnable",
    "startup_refusal",
]

# ((DPI_AWARENESS_CONTEXT)-4): a pseudo-handle, passed as a pointer-sized -4.
DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2 = -4
# GetAwarenessFromDpiAwarenessContext's answers (DPI_AWARENESS); per-monitor is v1 or v2.
DPI_AWARENESS_UNAWARE = 0
DPI_AWARENESS_SYSTEM_AWARE = 1
DPI_AWARENESS_PER_MONITOR_AWARE = 2
# shcore's PROCESS_DPI_AWARENESS (Windows 8.1+), the fallback's values.
PROCESS_DPI_UNAWARE = 0
PROCESS_SYSTEM_DPI_AWARE = 1
PROCESS_PER_MONITOR_DPI_AWARE = 2

_AWARENESS_OF_PROCESS = {
    PROCESS_DPI_UNAWARE: DPI_AWARENESS_UNAWARE,
    PROCESS_SYSTEM_DPI_AWARE: DPI_AWARENESS_SYSTEM_AWARE,
    PROCESS_PER_MONITOR_DPI_AWARE: DPI_AWARENESS_PER_MONITOR_AWARE,
}


class DpiPort(Protocol):
    """The DPI functions, each looked up when called: None where this Windows lacks it."""

    def set_process_dpi_awareness_context(self, context: int) -> bool | None:
        """user32 SetProcessDpiAwarenessContext (Windows 10 1703+): whether it worked."""
        ...

    def set_process_dpi_awareness(self, awareness: int) -> bool | None:
        """shcore SetProcessDpiAwareness (Windows 8.1+): whether it answered S_OK."""
        ...

    def thread_dpi_awareness(self) -> int | None:
        """GetAwarenessFromDpiAwarenessContext(GetThreadDpiAwarenessContext()) (Windows
        10 1607+): a DPI_AWARENESS; None too when it answers DPI_AWARENESS_INVALID."""
        ...

    def process_dpi_awareness(self) -> int | None:
        """shcore GetProcessDpiAwareness(NULL, &value) (Windows 8.1+): a
        PROCESS_DPI_AWARENESS; None too when it fails."""
        ...


@dataclass(frozen=True, slots=True)
class StartupFacts:
    session_id: int | None  # ProcessIdToSessionId of this process; None: unreadable
    dpi_awareness: int | None  # the process's awareness after the attempt; None: unknown


def make_per_monitor_aware(port: DpiPort) -> int | None:
    """Per-monitor v2 where Windows has it, else per-monitor (v1) through shcore; then
    the awareness that holds, as a DPI_AWARENESS (None: this Windows cannot tell)."""
    # A set that fails (ERROR_ACCESS_DENIED: a manifest or an earlier call set the
    # awareness first) is not an error: the awareness read after it decides.
    is_set = port.set_process_dpi_awareness_context(DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2)
    if is_set is not True:
        port.set_process_dpi_awareness(PROCESS_PER_MONITOR_DPI_AWARE)
    awareness = port.thread_dpi_awareness()
    if awareness is not None:
        return awareness
    process_awareness = port.process_dpi_awareness()
    return None if process_awareness is None else _AWARENESS_OF_PROCESS.get(process_awareness)


def startup_refusal(facts: StartupFacts) -> str | None:
    """One line telling the owner why the agent cannot run here, or None."""
    if facts.session_id == 0:
        return (
            "the Windows agent is running in Session 0 (as a service), which cannot see or "
            "drive the desktop: run it in the user's session (`rigway agent install`)"
        )
    if facts.dpi_awareness is not None and facts.dpi_awareness != DPI_AWARENESS_PER_MONITOR_AWARE:
        return (
            "this process could not be made per-monitor DPI aware (something set its DPI "
            "awareness first): start the agent as its own process"
        )
    return None


def refuse_unless_runnable(facts: StartupFacts) -> None:
    """Raise `WindowsUnavailableError` with the one-line reason, if there is one."""
    refusal = startup_refusal(facts)
    if refusal is not None:
        raise WindowsUnavailableError(refusal)


ABI = AbiDeclarations(
    constants={
        "DPI_AWARENESS_UNAWARE": DPI_AWARENESS_UNAWARE,
        "DPI_AWARENESS_SYSTEM_AWARE": DPI_AWARENESS_SYSTEM_AWARE,
        "DPI_AWARENESS_PER_MONITOR_AWARE": DPI_AWARENESS_PER_MONITOR_AWARE,
        "PROCESS_DPI_UNAWARE": PROCESS_DPI_UNAWARE,
        "PROCESS_SYSTEM_DPI_AWARE": PROCESS_SYSTEM_DPI_AWARE,
        "PROCESS_PER_MONITOR_DPI_AWARE": PROCESS_PER_MONITOR_DPI_AWARE,
    },
    headers=("windows.h", "shellscalingapi.h"),
)
