"""The x11 backend's floor on Xvfb at 1920x1080, driving the backend directly.

Prints p50/p95 of: grab; grab + JPEG q85 (simplejpeg, BGRA in); scrot to a file then
read (what a naive agent would do); poll_damage; the AT-SPI snapshot of
gtk3-widget-factory (~85 targets); and type_text throughput into a zenity entry.

Run: .venv/bin/python -m bench.x11_backend_floor
"""

from __future__ import annotations

import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import simplejpeg
from tests.support.x_desktop import XDesktop, wait_until

from bench.stats import row
from rigway.agent.backends.base import WalkBudget
from rigway.agent.backends.x11 import X11Desktop, open_x11_desktop

ROUNDS = 200
SLOW_ROUNDS = 20
# Mixed text: ASCII on the layout, plus 60 distinct CJK characters (three times the
# spare keycodes, so bindings are evicted and rebound).
TYPED = ("The quick brown fox, 0123456789! " * 4) + "".join(chr(0x4E00 + 7 * i) for i in range(60))


def _timed(action: Callable[[], object], rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def _encode(backend: X11Desktop) -> None:
    simplejpeg.encode_jpeg(backend.grab(), quality=85, colorspace="BGRA", colorsubsampling="420")


def _scrot(desk: XDesktop, path: Path) -> None:
    subprocess.run(["scrot", "-o", "-q", "85", str(path)], env=desk.env, check=True)
    path.read_bytes()


def _screen(desk: XDesktop, backend: X11Desktop) -> None:
    for _ in range(20):  # warm-up: the SHM segment, the damage object
        _encode(backend)
    print(row("grab 1920x1080 BGRA", _timed(backend.grab, ROUNDS)))
    print(row("grab + JPEG q85 4:2:0 (simplejpeg)", _timed(lambda: _encode(backend), ROUNDS)))
    with tempfile.TemporaryDirectory() as scratch:
        shot = Path(scratch) / "shot.jpg"
        scrot_ms = _timed(lambda: _scrot(desk, shot), SLOW_ROUNDS)
    print(row("scrot -q 85 to a file, then read it", scrot_ms))
    print(row("poll_damage (spinners animating)", _timed(backend.poll_damage, ROUNDS)))


def _accessibility(backend: X11Desktop) -> None:
    budget = WalkBudget()
    for _ in range(5):
        backend.snapshot_accessibility(budget)
    count = len(backend.snapshot_accessibility(budget).elements)
    label = f"snapshot gtk3-widget-factory ({count} targets)"
    print(row(label, _timed(lambda: backend.snapshot_accessibility(budget), SLOW_ROUNDS * 2)))


def _typing(desk: XDesktop, backend: X11Desktop) -> None:
    zenity = desk.launch(["zenity", "--entry", "--title=Bench typing", "--text=Type"])

    def entry_text() -> str | None:
        snap = backend.snapshot_accessibility(WalkBudget())
        if snap.window_title != "Bench typing":
            return None
        return next((e.value for e in snap.elements if e.role == "text" and e.focused), None)

    wait_until(lambda: entry_text() == "", timeout_s=15, message="the zenity entry")
    started = time.perf_counter()
    backend.type_text(TYPED)
    sent_s = time.perf_counter() - started
    wait_until(lambda: entry_text() == TYPED, interval_s=0.01, message="the typed text")
    arrived_s = time.perf_counter() - started
    print(
        f"type_text {len(TYPED)} chars (60 distinct CJK): sent {len(TYPED) / sent_s:6.0f} chars/s, "
        f"all read back {len(TYPED) / arrived_s:6.0f} chars/s"
    )
    desk.stop(zenity)


def main() -> None:
    with XDesktop() as desk:
        backend = open_x11_desktop(
            desk.display, session_bus_address=desk.env["DBUS_SESSION_BUS_ADDRESS"]
        )
        try:
            factory = desk.launch(["gtk3-widget-factory"])
            wait_until(
                lambda: len(backend.snapshot_accessibility(WalkBudget()).elements) > 50,
                timeout_s=15,
                message="gtk3-widget-factory",
            )
            _screen(desk, backend)
            _accessibility(backend)
            desk.stop(factory)
            _typing(desk, backend)
        finally:
            backend.close()


if __name__ == "__main__":
    main()
