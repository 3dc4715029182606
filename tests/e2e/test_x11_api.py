"""The x11 backend through the public API end to end: real GTK apps on Xvfb.

Apps are launched, driven and read over HTTP only (`POST /app/launch`, `/input`,
`/targets`, `/dirty`, `/screenshot`, `/observe`). The X server and the process table are
read directly only for what the API cannot say: held keys and buttons, the window
manager's client list and the processes left behind after a session ends.

The apps get a GTK config with the text cursor's blink off (tests/e2e/x11_rig.py).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import numpy as np
import psutil
import pytest
import simplejpeg

from rigway.agent.apps import LAUNCH_TAG_ENV, ProcessTracker
from tests.e2e.x11_rig import X11Session
from tests.support.x_desktop import XDesktop

pytestmark = [pytest.mark.x11, pytest.mark.postgres]

T = TypeVar("T")

FACTORY = "gtk3-widget-factory"
# gtk3-widget-factory takes a few seconds to map on a busy 2-core machine.
APP_START_TIMEOUT_S = 20.0
POLL_TIMEOUT_S = 10.0

# -- fixtures ----------------------------------------------------------------------------


@dataclass
class Api:
    """One session on the x11 rig, over HTTP; keeps every response for the secret check."""

    client: httpx2.AsyncClient
    session_id: str
    tracker: ProcessTracker
    responses: list[httpx2.Response] = field(default_factory=list)

    async def _call(self, method: str, path: str, **kwargs: Any) -> httpx2.Response:
        response = await self.client.request(
            method, f"/v1/sessions/{self.session_id}{path}", **kwargs
        )
        self.responses.append(response)
        assert response.status_code == 200, f"{method} {path}: {response.text}"
        return response

    async def launch(self, path: str, *args: str) -> int:
        body = await self._call("POST", "/app/launch", json={"path": path, "args": list(args)})
        pid = body.json()["pid"]
        assert isinstance(pid, int)
        return pid

    async def input(self, *events: dict[str, Any]) -> None:
        await self._call("POST", "/input", json={"events": list(events)})

    async def targets(self) -> list[dict[str, Any]]:
        targets: list[dict[str, Any]] = (await self._call("GET", "/targets")).json()["targets"]
        return targets

    async def dirty(self) -> list[list[int]]:
        rects: list[list[int]] = (await self._call("GET", "/dirty")).json()["rects"]
        return rects

    async def screenshot(self, **params: int) -> httpx2.Response:
        return await self._call("GET", "/screenshot", params=params)

    async def observe(self, **params: int) -> dict[str, Any]:
        body: dict[str, Any] = (await self._call("GET", "/observe", params=params)).json()
        return body

    async def end(self) -> httpx2.Response:
        response = await self.client.delete(f"/v1/sessions/{self.session_id}")
        self.responses.append(response)
        return response


@pytest.fixture
def api(x11_session: X11Session) -> Api:
    """An active session on the Xvfb desktop; the session's end (the fixture's teardown)
    kills what the test launched, and the desktop is then checked empty."""
    return Api(x11_session.client, x11_session.session_id, x11_session.tracker)


# -- helpers -----------------------------------------------------------------------------


async def poll(
    probe: Callable[[], Awaitable[T | None]],
    message: str,
    timeout_s: float = POLL_TIMEOUT_S,
) -> T:
    """Await `probe` until it returns something other than None/False, with a deadline:
    for what the apps on the Xvfb desktop do in their own time (a window up, a focus
    moved), which the API reports when asked but announces to nobody."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = await probe()
        if result is not None and result is not False:
            return result
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {message}")
        await asyncio.sleep(0.05)


async def poll_sync(probe: Callable[[], object], message: str) -> None:
    async def wrapped() -> object:
        return probe()

    await poll(wrapped, message)


async def focused(api: Api, role: str) -> dict[str, Any]:
    """Wait for a focused target of `role`: the app is up and has the keyboard focus."""

    async def probe() -> dict[str, Any] | None:
        return next((t for t in await api.targets() if t["focused"] and t["role"] == role), None)

    return await poll(probe, f"a focused {role!r} target", APP_START_TIMEOUT_S)


async def factory_targets(api: Api) -> list[dict[str, Any]]:
    """Launch gtk3-widget-factory and wait until its controls are in /targets."""
    await api.launch(FACTORY)

    async def probe() -> list[dict[str, Any]] | None:
        targets = await api.targets()
        return targets if len(targets) > 50 else None

    return await poll(probe, FACTORY, APP_START_TIMEOUT_S)


async def target_by_id(api: Api, target_id: str) -> dict[str, Any]:
    return next(t for t in await api.targets() if t["id"] == target_id)


async def quiet(api: Api) -> None:
    """Wait until a /dirty read comes back empty: nothing is drawing any more."""

    async def probe() -> bool:
        return await api.dirty() == []

    await poll(probe, "a quiet screen")


def centre(target: dict[str, Any]) -> tuple[int, int]:
    return target["x"] + target["w"] // 2, target["y"] + target["h"] // 2


def intersects(rect: list[int], target: dict[str, Any]) -> bool:
    x, y, w, h = rect
    left, top = int(target["x"]), int(target["y"])
    right, bottom = left + int(target["w"]), top + int(target["h"])
    return x < right and left < x + w and y < bottom and top < y + h


def host_jpeg_entry(response: httpx2.Response) -> str:
    entries = [e.strip() for e in response.headers["server-timing"].split(",")]
    return next(e for e in entries if e.startswith("host-jpeg;dur="))


def is_gone(proc: psutil.Process) -> bool:
    try:
        return not proc.is_running() or proc.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def launched_by(tracker: ProcessTracker) -> list[psutil.Process]:
    """Live processes carrying the tracker's launch tag (escaped descendants included)."""
    found = []
    for proc in psutil.process_iter(["environ"], ad_value=None):
        environ = proc.info["environ"]
        if environ is not None and environ.get(LAUNCH_TAG_ENV) == tracker.tag:
            found.append(proc)
    return [proc for proc in found if not is_gone(proc)]


# -- tests -------------------------------------------------------------------------------


async def test_unicode_text_typed_into_zenity_reads_back_through_targets(api: Api) -> None:
    await api.launch("zenity", "--entry", "--title=Unicode", "--text=Type")
    entry = await focused(api, "text")
    text = "Grüße, café — 日本語の漢字 😀🎉 ½ €"

    await api.input({"type": "type_text", "text": text})

    async def typed() -> bool:
        return bool((await target_by_id(api, entry["id"]))["value"] == text)

    assert await poll(typed, "the typed text in /targets") is True


async def test_click_on_checkbox_centre_toggles_its_state(api: Api) -> None:
    targets = await factory_targets(api)
    # The topmost one: the factory's lower group of check boxes is insensitive, and
    # targets do not say which controls are disabled.
    unchecked = [t for t in targets if t["role"] == "check box" and t["value"] == "unchecked"]
    box = min(unchecked, key=lambda t: t["y"])
    x, y = centre(box)

    await api.input({"type": "mouse_click", "x": x, "y": y})

    async def toggled() -> bool:
        return bool((await target_by_id(api, box["id"]))["value"] == "checked")

    assert await poll(toggled, "the check box to read checked") is True


async def test_scroll_over_text_view_moves_it(api: Api) -> None:
    targets = await factory_targets(api)
    # The factory's tall multi-line text view and the scroll bar at its right edge.
    view = max((t for t in targets if t["role"] == "text"), key=lambda t: t["h"])
    bar = next(t for t in targets if t["role"] == "scroll bar" and abs(t["y"] - view["y"]) < 8)
    region = {"x": view["x"], "y": view["y"], "w": view["w"], "h": view["h"]}
    before = (await api.screenshot(**region)).content
    x, y = centre(view)

    await api.input({"type": "mouse_scroll", "x": x, "y": y, "dy": -3})

    async def scrolled() -> bool:
        return bool((await target_by_id(api, bar["id"]))["value"] != bar["value"])

    await poll(scrolled, "the scroll bar's value to change")

    # GTK animates a wheel scroll: the value moves first, the pixels a frame or more
    # later (a shot in between is rightly the old picture, from the host's cache).
    async def redrawn() -> bool:
        return (await api.screenshot(**region)).content != before

    assert await poll(redrawn, "the text view to be drawn scrolled") is True


async def test_dirty_after_typing_covers_the_entry(api: Api) -> None:
    await api.launch("zenity", "--entry", "--title=Dirty", "--text=Type")
    entry = await focused(api, "text")
    # Drained and quiet: whatever /dirty reports next was drawn after this point.
    await quiet(api)

    await api.input({"type": "type_text", "text": "dirty 漢字"})

    rects: list[list[int]] = []

    async def entry_damaged() -> bool:
        rects.extend(await api.dirty())
        return any(intersects(rect, entry) for rect in rects)

    await poll(entry_damaged, "damage over the entry")
    assert rects != []


async def test_password_typed_into_zenity_appears_in_no_response(api: Api, tmp_path: Path) -> None:
    secret = "Tr0ub4dor-&-3 pässwörd 秘密"
    out = tmp_path / "zenity.out"
    # Through sh so zenity's stdout (the password, on OK) lands in a file: proof the
    # field really held the secret while every read below ran.
    await api.launch("sh", "-c", f"exec zenity --password --title=Secret > {out}")
    await focused(api, "password text")
    await api.input({"type": "type_text", "text": secret})

    targets = await api.targets()
    await api.observe(image=0)
    await api.observe(image=1)
    await api.dirty()
    await api.input({"type": "key_press", "key": "enter"})
    await poll_sync(lambda: out.exists() and out.read_text() == secret + "\n", "zenity's answer")

    masked = [t for t in targets if t["masked"]]
    assert [(t["role"], t["value"]) for t in masked] == [("password text", "[redacted]")]
    spellings = {
        secret.encode(),
        json.dumps(secret).encode(),  # \uXXXX escapes, had a body used ensure_ascii
        b"Tr0ub4dor",  # the start alone, however a body escaped the rest
    }
    for response in api.responses:
        for spelling in spellings:
            assert spelling not in response.content, response.request.url


async def test_session_end_releases_keys_and_kills_apps_and_their_windows(
    api: Api, x_desktop: XDesktop
) -> None:
    baseline = x_desktop.client_windows()
    await api.launch("zenity", "--entry", "--title=Left open", "--text=Bye")
    shell = await api.launch("sh", "-c", "sleep 300 & setsid sleep 300 & wait")
    await focused(api, "text")
    await poll_sync(lambda: len(x_desktop.client_windows()) > len(baseline), "zenity's window")
    # Both sleeps started (the shell forks them asynchronously).
    await poll_sync(lambda: len(psutil.Process(shell).children()) == 2, "the two sleeps")
    launched = launched_by(api.tracker)
    await api.input(*({"type": "key_down", "key": key} for key in ("ctrl", "shift", "a")))
    assert len(x_desktop.held_keycodes()) == 3

    ended = await api.end()

    assert ended.status_code == 200, ended.text
    assert x_desktop.held_keycodes() == []
    assert x_desktop.held_buttons() == []
    assert len(launched) >= 4  # zenity, sh and its two sleeps
    assert [p.pid for p in launched if not is_gone(p)] == []
    assert launched_by(api.tracker) == []
    await poll_sync(lambda: x_desktop.client_windows() == baseline, "the windows to close")


async def test_observe_with_mark_draws_marks_on_widget_factory(api: Api) -> None:
    await factory_targets(api)

    observed = await api.observe(mark=1)

    assert observed["marked"] is True
    assert len(observed["targets"]) > 50
    assert base64.b64decode(observed["jpeg_base64"])[:2] == b"\xff\xd8"


async def test_unchanged_screen_screenshot_is_served_from_cached_jpeg(api: Api) -> None:
    # zenity --info: no text cursor, no animation; the widget factory's spinners would
    # damage the screen between the two shots.
    await api.launch("zenity", "--info", "--title=Quiet", "--text=Nothing moves here")
    await focused(api, "push button")
    await quiet(api)

    first = await api.screenshot(quality=85)
    second = await api.screenshot(quality=85)

    assert host_jpeg_entry(first).endswith('desc="cached"') is False
    assert host_jpeg_entry(second).endswith(';desc="cached"')
    assert second.content == first.content


async def test_a_changed_screen_shot_reencoding_only_changed_strips_shows_the_screen(
    api: Api,
) -> None:
    # The host keeps the last whole-desktop JPEG as 64-row strips and re-encodes only
    # those damage touched; the result must be the screen as a fresh whole encode sees it.
    await api.launch("zenity", "--entry", "--title=Strips", "--text=Type")
    await focused(api, "text")
    await quiet(api)
    before = simplejpeg.decode_jpeg((await api.screenshot(quality=85)).content)

    await api.input({"type": "type_text", "text": "only these strips changed"})
    await poll(lambda: _nonempty(api.dirty()), "damage from the typing")
    await quiet(api)
    after = await api.screenshot(quality=85)
    width, height = before.shape[1], before.shape[0]
    # A region is never served from strips: this one is captured and encoded whole.
    whole = await api.screenshot(quality=85, x=0, y=0, w=width, h=height)

    assert not host_jpeg_entry(after).endswith('desc="cached"')
    after_pixels = simplejpeg.decode_jpeg(after.content)
    assert np.array_equal(after_pixels, simplejpeg.decode_jpeg(whole.content))
    assert not np.array_equal(after_pixels, before)


async def _nonempty(rects: Awaitable[list[list[int]]]) -> bool:
    return await rects != []


def test_rigway_up_x11_without_display_exits_2_with_message(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "DISPLAY"}
    entry_point = Path(sys.executable).with_name("rigway")

    result = subprocess.run(
        [str(entry_point), "up", "--desktop", "x11", "--state-dir", str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 2
    assert "DISPLAY is not set" in result.stderr
    assert not (tmp_path / "local.json").exists()
