"""Which desktop `rigway agent run` serves, and opening it under a deadline (`rigway up`
checks an X display the same way before it starts its agents)."""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rigway.agent.backends.base import Desktop

__all__ = [
    "BACKENDS",
    "DESKTOP_OPEN_TIMEOUT_S",
    "backend_or_exit",
    "default_backend",
    "known_backend",
    "open_desktop",
]

BACKENDS = ("sim", "x11", "windows")
# Opening a desktop is local and quick; an X server that accepts the connection but never
# answers its setup would otherwise hold the agent (and `rigway up`) for ever.
DESKTOP_OPEN_TIMEOUT_S = 5.0


def known_backend(backend: str) -> str:
    """`backend`, when it is one of BACKENDS; else exit 2 saying which are."""
    if backend not in BACKENDS:
        typer.echo(f"--backend must be one of {', '.join(BACKENDS)}", err=True)
        raise typer.Exit(code=2)
    return backend


def default_backend(platform: str, display: str | None) -> str | None:
    """The backend `agent run` uses unless told: the platform's own on Windows; elsewhere
    x11 on the display in DISPLAY. None without one: the sim is never a silent stand-in
    for a real desktop, it runs only when asked."""
    if platform == "win32":
        return "windows"
    return "x11" if display else None


def backend_or_exit(display: str | None) -> str:
    """`default_backend` on this machine; exit 2 saying how to get one when there is none."""
    chosen = default_backend(sys.platform, display)
    if chosen is None:
        typer.echo(
            "no desktop to serve: DISPLAY is not set. Run the agent in the desktop session "
            "(or set DISPLAY), or pass --backend sim for a simulated desktop.",
            err=True,
        )
        raise typer.Exit(code=2)
    return chosen


def open_desktop(
    backend: str, *, display: str | None, width: int, height: int, timeout_s: float
) -> Desktop:
    """`open_backend` under a deadline; raises ValueError, OSError or RuntimeError
    with the reason (TimeoutError, naming the display, when it did not answer).

    The opener runs in a daemon thread: a connect blocked in C cannot be interrupted,
    and a daemon thread left behind does not hold the process's exit.
    """
    from rigway.agent.runner import open_backend

    outcome: list[Desktop | Exception] = []

    def open_it() -> None:
        try:
            outcome.append(open_backend(backend, display=display, width=width, height=height))
        except Exception as exc:  # handed to the caller's thread, raised there
            outcome.append(exc)

    opener = threading.Thread(target=open_it, name="rigway-open-desktop", daemon=True)
    opener.start()
    opener.join(timeout_s)
    if not outcome:
        if backend == "x11":
            raise TimeoutError(f"X display {display!r} did not answer within {timeout_s:g} s")
        raise TimeoutError(f"the {backend} desktop did not open within {timeout_s:g} s")
    result = outcome[0]
    if isinstance(result, Exception):
        raise result
    return result
