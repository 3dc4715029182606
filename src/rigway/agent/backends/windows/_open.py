"""Builds the windows backend over the real bindings: one role per area, one app tracker.

Binding (Windows only). The process is made per-monitor DPI aware first: the first
awareness call in a process wins, and every role below measures pixels. The
accessibility role makes its first UI Automation port at once, on its worker and with
no deadline (the first one generates comtypes' wrapper), so that no walk pays for it.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from rigway.agent.backends.windows.bootstrap import refuse_unless_runnable
from rigway.agent.backends.windows.desktop import WindowsDesktop
from rigway.agent.backends.windows.input import WindowsInput
from rigway.agent.backends.windows.jobs import JobAppTracker
from rigway.agent.backends.windows.local_input import LocalInputHooks
from rigway.agent.backends.windows.uia_walk import UiaAccessibility

assert sys.platform == "win32"

# Other binding modules: after the platform assertion, so that the Linux type check
# (which skips the rest of this module) does not look into them.
from rigway.agent.backends.windows import _com  # noqa: E402
from rigway.agent.backends.windows._bootstrap import prepare_process  # noqa: E402
from rigway.agent.backends.windows._capture_open import open_screen  # noqa: E402
from rigway.agent.backends.windows._desktop_state import open_desktop_state  # noqa: E402
from rigway.agent.backends.windows._displays import Win32Displays  # noqa: E402
from rigway.agent.backends.windows._jobs import open_job_tracker  # noqa: E402
from rigway.agent.backends.windows._local_input import Win32InputHooks  # noqa: E402
from rigway.agent.backends.windows._sendinput import SendInputPort  # noqa: E402
from rigway.agent.backends.windows._toplevel import open_top_level_windows  # noqa: E402
from rigway.agent.backends.windows._ui_effects import open_ui_effects  # noqa: E402
from rigway.agent.backends.windows._uia import uia_port_factory  # noqa: E402

__all__ = ["comtypes_gen_dir", "open_app_tracker", "open_desktop"]


def comtypes_gen_dir() -> Path:
    """Where comtypes' generated UI Automation wrapper lives: a directory of the agent's
    own, so two processes generating into a shared cache cannot corrupt it."""
    base = os.environ.get("LOCALAPPDATA")
    root = Path(base) if base else Path.home() / "AppData" / "Local"
    return root / "Rigway" / "comtypes-gen"


@functools.cache
def open_app_tracker() -> JobAppTracker:
    """The process's one app tracker: the windows role asks it which processes the
    session launched before it force-closes anything."""
    return open_job_tracker()


def open_desktop() -> WindowsDesktop:
    refuse_unless_runnable(prepare_process())
    screen = open_screen()

    def capture_size() -> tuple[int, int]:
        placement = screen.placement()
        return placement.width, placement.height

    accessibility = UiaAccessibility(
        uia_port_factory(comtypes_gen_dir()),
        screen.placement,
        capture_size,
        # Each worker joined the multithreaded apartment making its port; it leaves as
        # it ends, its port closed.
        on_worker_exit=_com.leave_mta,
    )
    accessibility.warm_up()
    # Hooked from the start, so the owner's input before the first batch counts too.
    local_input = LocalInputHooks(Win32InputHooks())
    local_input.start()
    return WindowsDesktop(
        screen=screen,
        input=WindowsInput(SendInputPort(), screen.placement),
        accessibility=accessibility,
        windows=open_top_level_windows(open_app_tracker().guard_context),
        state=open_desktop_state(),
        displays=Win32Displays(),
        local_input=local_input,
        ui_effects=open_ui_effects(),
    )
