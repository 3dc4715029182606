"""What the Windows agent checks and sets before anything else runs.

Pure: the decisions, over facts the binding (`_bootstrap.py`) reads.

- DPI: the process must be per-monitor DPI aware (v2) before any window, capture or UI
  Automation call, or screen metrics, UIA rectangles and input disagree at any scale
  other than 100% (a DPI-unaware process is also handed black DXGI frames). The first
  call in a process wins, which is why this runs first.
- Session 0: an agent started as a service runs in Session 0, which has no access to
  the user's desktop: capture and input would see and drive nothing. It must run in
  the logged-on user's session (a Task Scheduler at-logon task), so it refuses here.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigway.agent.backends.windows.abi import AbiDeclarations
from rigway.agent.backends.windows.errors import WindowsUnavailableError

__all__ = [
    "ABI",
    "DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2",
    "DPI_AWARENESS_PER_MONITOR_AWARE",
    "PROCESS_PER_MONITOR_DPI_AWARE",
    "StartupFacts",
    "refuse_unless_runnable",
    "startup_refusal",
]

# ((DPI_AWARENESS_CONTEXT)-4): a pseudo-handle, passed as a pointer-sized -4.
DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2 = -4
# GetAwarenessFromDpiAwarenessContext's answer for per-monitor (v1 or v2).
DPI_AWARENESS_PER_MONITOR_AWARE = 2
# SetProcessDpiAwareness's per-monitor value (shcore; Windows 8.1+), the fallback.
PROCESS_PER_MONITOR_DPI_AWARE = 2


@dataclass(frozen=True, slots=True)
class StartupFacts:
    session_id: int | None  # ProcessIdToSessionId of this process; None: unreadable
    dpi_awareness: int | None  # the process's awareness after the attempt; None: unknown


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
        "DPI_AWARENESS_PER_MONITOR_AWARE": DPI_AWARENESS_PER_MONITOR_AWARE,
        "PROCESS_PER_MONITOR_DPI_AWARE": PROCESS_PER_MONITOR_DPI_AWARE,
    },
    headers=("windows.h", "shellscalingapi.h"),
)
