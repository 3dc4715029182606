"""Renders the set-of-mark examples in docs/images/ with the agent's own pipeline.

The sim desktop (`rigway up`'s sim rig) and gtk3-widget-factory on Xvfb through the x11
backend's accessibility walk: targets as the host builds them, marks as `mark=1` draws
them, at the 1280-px downscale a model is given.

Run: .venv/bin/python -m bench.render_marks [sim|x11 ...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from tests.support.x_desktop import XDesktop, wait_until

from rigway.agent.accessibility import build_snapshot
from rigway.agent.backends.base import Desktop, WalkBudget
from rigway.agent.backends.sim import SimDesktop
from rigway.agent.backends.x11 import open_x11_desktop
from rigway.agent.imaging import EncodedImage, index_marks, render_jpeg

IMAGES = Path(__file__).resolve().parent.parent / "docs" / "images"
MAX_WIDTH = 1280
QUALITY = 80


def render(desktop: Desktop) -> EncodedImage:
    """What an observe with mark=1 and max_width=1280 shows of `desktop`."""
    budget = WalkBudget()
    started = time.perf_counter()
    walked = desktop.snapshot_accessibility(budget)
    snapshot = build_snapshot(walked, desktop.native_size(), budget, time.perf_counter() - started)
    return render_jpeg(
        desktop.grab(),
        quality=QUALITY,
        max_width=MAX_WIDTH,
        region=None,
        marks=index_marks(snapshot.targets),
    )


def _save(image: EncodedImage, name: str) -> None:
    path = IMAGES / name
    path.write_bytes(image.jpeg)
    omitted = sum(not m.labelled for m in image.marks)
    print(
        f"{path}: {image.width}x{image.height}, {len(image.jpeg) // 1024} KB, "
        f"{len(image.marks)} marks, {omitted} without a label"
    )


def render_sim() -> None:
    _save(render(SimDesktop(1920, 1080)), "marks-sim.jpg")


def render_x11() -> None:
    with XDesktop() as desk:
        backend = open_x11_desktop(
            desk.display, session_bus_address=desk.env["DBUS_SESSION_BUS_ADDRESS"]
        )
        try:
            desk.launch(["gtk3-widget-factory"])
            wait_until(
                lambda: len(backend.snapshot_accessibility(WalkBudget()).elements) > 50,
                timeout_s=15,
                message="gtk3-widget-factory",
            )
            _save(render(backend), "marks-gtk3-widget-factory.jpg")
        finally:
            backend.close()


def main() -> None:
    IMAGES.mkdir(parents=True, exist_ok=True)
    which = sys.argv[1:] or ["sim", "x11"]
    if "sim" in which:
        render_sim()
    if "x11" in which:
        render_x11()


if __name__ == "__main__":
    main()
