"""The ways bench/agent_step.py acts on the desktop and sees the result, one step at a
time, and how it tells a screen that was still changing when it was observed.

Each method acts, waits its own way and observes, then (untimed) grabs the screen
again RECHECK_S later with the same capture; the two are compared as pixels.
"""

from __future__ import annotations

import base64
import io
import subprocess
import time
from pathlib import Path
from typing import Any, NamedTuple, Protocol

import numpy as np
import simplejpeg
from PIL import Image

from bench.x11_gateway import Session

QUIET_MS = 100
SETTLE = {"quiet_ms": QUIET_MS, "timeout_ms": 2000}
SHORT_QUIET_MS = 50  # three frames of a 60 Hz toolkit's animation
SHORT_SETTLE = {"quiet_ms": SHORT_QUIET_MS, "timeout_ms": 2000}
DEMO_SLEEP_S = 2.0
E2B_SLEEP_S = 1.0
RECHECK_S = 0.5
# A pixel differs when one of its channels moved by more than CHANGED_LEVELS, and a
# screen was still changing when at least CHANGED_PIXELS differ. Two captures of
# unchanged pixels are identical (PNG is lossless; the host encodes each 64-row strip
# of a JPEG on its own, so the same pixels give the same bytes), and a JPEG q85's
# ringing around an edge that did change stays near the edge; the margin makes the
# count about visible change, not about a decoder's rounding. The smallest change in
# the task (a caret moving one glyph) moves a few hundred pixels by far more than 16.
CHANGED_LEVELS = 16
CHANGED_PIXELS = 4
SCREEN = (1920, 1080)

Event = dict[str, Any]
Plan = list[tuple[str, list[Event]]]


def ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


class Observed(NamedTuple):
    wall_ms: float  # act, wait, observe: what the agent waits for each step
    image: bytes
    settle: dict[str, Any] | None


class Method(Protocol):
    name: str

    def step(self, events: list[Event]) -> Observed: ...

    def grab(self) -> bytes: ...

    def pixels(self, image: bytes) -> np.ndarray[Any, Any]: ...


def _jpeg_pixels(image: bytes) -> np.ndarray[Any, Any]:
    pixels: np.ndarray[Any, Any] = simplejpeg.decode_jpeg(image, colorspace="RGB")
    return pixels


class ObserveAfterMethod:
    """Rigway's: the batch carries `observe` (and a `settle` when given), so acting and
    seeing is one round trip; without a settle the observe is taken at once."""

    def __init__(self, session: Session, name: str, settle: dict[str, int] | None) -> None:
        self.name = name
        self._session = session
        self._settle = settle

    def step(self, events: list[Event]) -> Observed:
        body: dict[str, Any] = {"events": events, "observe": {}}
        if self._settle is not None:
            body["settle"] = self._settle
        started = time.perf_counter()
        answer = self._session.post("/input", body).json()
        elapsed = ms_since(started)
        jpeg = base64.b64decode(answer["observe"]["jpeg_base64"])
        return Observed(elapsed, jpeg, answer.get("settle"))

    def grab(self) -> bytes:
        return self._session.get("/screenshot").content

    pixels = staticmethod(_jpeg_pixels)


class DemoSleepMethod:
    """The Anthropic computer-use demo's: act, sleep a fixed 2.0 s, take a screenshot
    (here GET /observe, the same API's one-call look)."""

    name = f"sleep {DEMO_SLEEP_S:.1f} s"

    def __init__(self, session: Session, name: str | None = None) -> None:
        self._session = session
        if name is not None:
            self.name = name

    def step(self, events: list[Event]) -> Observed:
        started = time.perf_counter()
        self._session.post("/input", {"events": events})
        time.sleep(DEMO_SLEEP_S)
        answer = self._session.get("/observe").json()
        elapsed = ms_since(started)
        return Observed(elapsed, base64.b64decode(answer["jpeg_base64"]), None)

    def grab(self) -> bytes:
        return self._session.get("/screenshot").content

    pixels = staticmethod(_jpeg_pixels)


def _xdotool_args(event: Event) -> list[str]:
    kind = event["type"]
    if kind == "mouse_click":
        return ["mousemove", str(event["x"]), str(event["y"]), "click", "1"]
    if kind == "type_text":
        return ["type", "--", event["text"]]
    if kind == "key_press":
        return ["key", event["key"]]
    raise ValueError(f"no xdotool form for {kind}")


class E2bMethod:
    """E2B's desktop sandbox's: xdotool in a subprocess, a fixed sleep (its example
    sleeps one second after a click), scrot to a PNG file that is read back."""

    name = f"e2b {E2B_SLEEP_S:.1f} s"

    def __init__(self, env: dict[str, str], scratch: Path) -> None:
        self._env = env
        self._shot = scratch / "step.png"
        self._later = scratch / "later.png"

    def step(self, events: list[Event]) -> Observed:
        started = time.perf_counter()
        for event in events:
            subprocess.run(["xdotool", *_xdotool_args(event)], env=self._env, check=True)
        time.sleep(E2B_SLEEP_S)
        png = self._scrot(self._shot)
        return Observed(ms_since(started), png, None)

    def grab(self) -> bytes:
        return self._scrot(self._later)

    def _scrot(self, path: Path) -> bytes:
        subprocess.run(["scrot", "-o", str(path)], env=self._env, check=True)
        return path.read_bytes()

    @staticmethod
    def pixels(image: bytes) -> np.ndarray[Any, Any]:
        with Image.open(io.BytesIO(image)) as png:
            return np.asarray(png.convert("RGB"))


class Difference(NamedTuple):
    pixels: int
    box: tuple[int, int, int, int] | None  # x, y, w, h of what differs

    @property
    def changing(self) -> bool:
        return self.pixels >= CHANGED_PIXELS


def difference(first: np.ndarray[Any, Any], later: np.ndarray[Any, Any]) -> Difference:
    if first.shape != later.shape:
        return Difference(first.shape[0] * first.shape[1], (0, 0, *SCREEN))
    delta = np.abs(first.astype(np.int16) - later.astype(np.int16)).max(axis=2)
    moved = delta > CHANGED_LEVELS
    count = int(moved.sum())
    if count == 0:
        return Difference(0, None)
    ys, xs = np.nonzero(moved)
    left, top = int(xs.min()), int(ys.min())
    return Difference(count, (left, top, int(xs.max()) - left + 1, int(ys.max()) - top + 1))


class StepResult(NamedTuple):
    label: str
    wall_ms: float
    difference: Difference
    settle: dict[str, Any] | None


def run_task(method: Method, plan: Plan) -> list[StepResult]:
    results = []
    for label, events in plan:
        observed = method.step(events)
        time.sleep(RECHECK_S)  # untimed: the frame 500 ms after the observation
        later = method.grab()
        change = difference(method.pixels(observed.image), method.pixels(later))
        results.append(StepResult(label, observed.wall_ms, change, observed.settle))
    return results
