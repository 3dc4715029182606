"""An app session on a real X desktop never shows another app: two GTK apps on Xvfb
(with openbox), one launched by the session through the API, the other started by the
test as the rig's owner would, moved over the first and stacked above it.

The other app is painted magenta by its own GTK style sheet, a colour nothing else on
this desktop has. The X server's own image of the screen shows it over the session's
app; every screenshot and observe the session gets, and every frame its recording
keeps, must show black there, and no magenta pixel anywhere. Its window must be out of
reach too: a click on it and keys while it has the focus are refused, and the walk of
it is not the session's to see.
"""

from __future__ import annotations

import asyncio
import base64
import io
import zipfile
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg

from rigway.agent.apps import ProcessTracker
from rigway.agent.backends.base import Rect
from rigway.agent.backends.x11 import X11Desktop
from tests.e2e.harness import QUICK_AGENT, running_stack
from tests.support.x_desktop import XDesktop, wait_until

pytestmark = [pytest.mark.x11, pytest.mark.postgres]

APP_START_TIMEOUT_S = 20.0
# Where the test puts the two windows (their client areas; openbox adds its frame).
SESSION_APP_AT = (100, 100)
OTHER_APP_AT = (380, 260)
MAGENTA_CSS = "* { background-color: #ff00ff; background-image: none; color: #ff00ff; }\n"

Image = npt.NDArray[np.uint8]


@dataclass
class PrivacyRig:
    client: httpx2.AsyncClient
    session_id: str
    x_desktop: XDesktop
    backend: X11Desktop

    async def get(self, path: str, **params: Any) -> httpx2.Response:
        return await self.client.get(f"/v1/sessions/{self.session_id}{path}", params=params)

    async def post(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        return await self.client.post(f"/v1/sessions/{self.session_id}{path}", json=body)


@pytest.fixture
def other_app_env(tmp_path: Path) -> dict[str, str]:
    """The other app's own GTK config: every surface magenta."""
    config = tmp_path / "other-config" / "gtk-3.0"
    config.mkdir(parents=True)
    (config / "gtk.css").write_text(MAGENTA_CSS)
    (config / "settings.ini").write_text("[Settings]\ngtk-cursor-blink = false\n")
    return {"XDG_CONFIG_HOME": str(config.parent)}


@pytest.fixture
async def rig(
    tmp_path: Path,
    database_url: str,
    x_desktop: XDesktop,
    x11_backend: X11Desktop,
    app_env: dict[str, str],
) -> AsyncIterator[PrivacyRig]:
    tracker = ProcessTracker(env=app_env)
    async with running_stack(
        tmp_path / "state", database_url, rigs=0, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        await stack.add_agent(x11_backend, apps=tracker)
        session_id = await stack.start_session(mode="app", record=True)
        try:
            yield PrivacyRig(stack.client, session_id, x_desktop, x11_backend)
        finally:
            await stack.client.delete(f"/v1/sessions/{session_id}")
            x_desktop.release_everything()
    await asyncio.to_thread(
        wait_until, lambda: x_desktop.client_windows() == [], message="an empty desktop"
    )


@pytest.fixture
def stop_other_apps(x_desktop: XDesktop) -> Iterator[list[Any]]:
    started: list[Any] = []
    yield started
    for proc in started:
        x_desktop.stop(proc)


# -- the X server's own view ------------------------------------------------------------


def _client_of(x_desktop: XDesktop, pid: int) -> int | None:
    from Xlib import X
    from Xlib.ext import res as xres

    with x_desktop.x_connection() as conn:
        atom = conn.intern_atom("_NET_CLIENT_LIST")
        prop = conn.screen().root.get_full_property(atom, X.AnyPropertyType)
        for window_id in [] if prop is None else prop.value:
            spec = {"client": int(window_id), "mask": xres.LocalClientPIDMask}
            for client_id in conn.res_query_client_ids([spec]).ids:
                if len(client_id.value) > 0 and int(client_id.value[0]) == pid:
                    return int(window_id)
    return None


def _frame_of(x_desktop: XDesktop, client: int) -> tuple[int, Rect]:
    """The root's child holding `client` (openbox's frame) and its rectangle."""
    with x_desktop.x_connection() as conn:
        root = int(conn.screen().root.id)
        window = conn.create_resource_object("window", client)
        while int(window.query_tree().parent.id) != root:
            window = window.query_tree().parent
        geometry = window.get_geometry()
        border = 2 * int(geometry.border_width)
        return int(window.id), Rect(
            int(geometry.x), int(geometry.y), geometry.width + border, geometry.height + border
        )


def _stacking(x_desktop: XDesktop) -> list[int]:
    """The root's mapped children the window manager manages (no override-redirect
    ones), bottom to top (XQueryTree's order)."""
    from Xlib import X

    with x_desktop.x_connection() as conn:
        children = conn.screen().root.query_tree().children
        attributes = [(int(c.id), c.get_attributes()) for c in children]
    return [
        window_id
        for window_id, a in attributes
        if a.map_state == X.IsViewable and not a.override_redirect
    ]


def _move(x_desktop: XDesktop, client: int, at: tuple[int, int]) -> None:
    from Xlib import X

    with x_desktop.x_connection() as conn:
        window = conn.create_resource_object("window", client)
        window.configure(x=at[0], y=at[1], stack_mode=X.Above)
        conn.sync()


def _screen_pixels(x_desktop: XDesktop, rect: Rect) -> Image:
    """What the X server shows in `rect`, RGB."""
    from Xlib import X

    with x_desktop.x_connection() as conn:
        image = conn.screen().root.get_image(rect.x, rect.y, rect.w, rect.h, X.ZPixmap, 0xFFFFFFFF)
    bgrx = np.frombuffer(image.data, dtype=np.uint8).reshape(rect.h, rect.w, 4)
    rgb: Image = bgrx[:, :, 2::-1].copy()
    return rgb


def _window_up(x_desktop: XDesktop, pid: int, at: tuple[int, int]) -> tuple[int, Rect]:
    """Wait for `pid`'s window, put its client area at `at` on top; its frame."""
    client = wait_until(
        lambda: _client_of(x_desktop, pid), timeout_s=APP_START_TIMEOUT_S, message=f"{pid}'s window"
    )
    _move(x_desktop, client, at)

    def placed() -> tuple[int, Rect] | None:
        frame, rect = _frame_of(x_desktop, client)
        inside = rect.x <= at[0] < rect.x + rect.w and rect.y <= at[1] < rect.y + rect.h
        return (frame, rect) if inside and _stacking(x_desktop)[-1] == frame else None

    return wait_until(placed, message=f"{pid}'s window at {at}, on top")


# -- pixels -----------------------------------------------------------------------------


def _is_magenta(image: Image) -> npt.NDArray[np.bool_]:
    red, green, blue = (image[:, :, i].astype(int) for i in range(3))
    mask: npt.NDArray[np.bool_] = (red > 170) & (blue > 170) & (green < 90)
    return mask


def _decoded(jpeg: bytes) -> Image:
    image: Image = simplejpeg.decode_jpeg(jpeg, colorspace="RGB")
    return image


def _intersection(a: Rect, b: Rect) -> Rect:
    left, top = max(a.x, b.x), max(a.y, b.y)
    right, bottom = min(a.x + a.w, b.x + b.w), min(a.y + a.h, b.y + b.h)
    assert right > left, f"{a} and {b} do not overlap"
    assert bottom > top, f"{a} and {b} do not overlap"
    return Rect(left, top, right - left, bottom - top)


def _assert_private(image: Image, window: Rect, overlap: Rect) -> None:
    """No magenta anywhere; the overlap black (JPEG rings a few levels at its edges,
    so its inner part is held to near-black)."""
    assert image.shape[:2] == (window.h, window.w)
    assert int(_is_magenta(image).sum()) == 0
    top, left = overlap.y - window.y, overlap.x - window.x
    inner = image[top + 2 : top + overlap.h - 2, left + 2 : left + overlap.w - 2]
    assert inner.size > 0
    assert int(inner.max()) <= 24


# -- the test ---------------------------------------------------------------------------


async def test_another_apps_pixels_never_reach_an_app_session(
    rig: PrivacyRig, other_app_env: dict[str, str], stop_other_apps: list[Any]
) -> None:
    launched = await rig.post(
        "/app/launch",
        {
            "path": "zenity",
            "args": ["--info", "--title=Session app", "--text=Mine", "--width=520", "--height=300"],
        },
    )
    assert launched.status_code == 200, launched.text
    _, mine = await asyncio.to_thread(
        _window_up, rig.x_desktop, launched.json()["pid"], SESSION_APP_AT
    )
    other = rig.x_desktop.launch(
        ["zenity", "--info", "--title=Owner's bank", "--text=Balance", "--width=520",
         "--height=300"],
        extra_env=other_app_env,
    )  # fmt: skip
    stop_other_apps.append(other)
    _, theirs = await asyncio.to_thread(_window_up, rig.x_desktop, other.pid, OTHER_APP_AT)
    overlap = _intersection(mine, theirs)

    # The X server shows the other app over the session's app where they overlap.
    shown = await asyncio.to_thread(_screen_pixels, rig.x_desktop, overlap)
    assert float(_is_magenta(shown).mean()) > 0.5

    shot = await rig.get("/screenshot")
    observed = await rig.get("/observe")
    region = await rig.get("/screenshot", x=overlap.x, y=overlap.y, w=overlap.w, h=overlap.h)
    click = await rig.post(
        "/input", {"events": [{"type": "mouse_click", "x": overlap.x + 10, "y": overlap.y + 10}]}
    )
    typed = await rig.post("/input", {"events": [{"type": "type_text", "text": "secret"}]})
    session = (await rig.get("")).json()

    assert shot.status_code == 200, shot.text
    window = [mine.x, mine.y, mine.w, mine.h]
    assert shot.headers["x-app-window"] == ",".join(str(v) for v in window)
    _assert_private(_decoded(shot.content), mine, overlap)
    body = observed.json()
    assert body["app_window"] == window
    _assert_private(_decoded(base64.b64decode(body["jpeg_base64"])), mine, overlap)
    # The other app has the focus: its controls and title are not the session's.
    assert body["targets"] == []
    assert body["text"]["window_title"] == ""
    assert region.status_code == 200
    assert int(_decoded(region.content).max()) <= 24
    assert click.status_code == 400
    assert "lies outside the app window" in click.json()["error"]
    # Keys would go to the other app, which has the focus.
    assert typed.status_code == 400
    assert "keyboard focus" in typed.json()["error"]
    # Nor does the session's recording keep any of the other app's pixels.
    recording = await rig.get("/recording")
    assert recording.status_code == 200, recording.text
    with zipfile.ZipFile(io.BytesIO(recording.content)) as archive:
        frames = [archive.read(n) for n in archive.namelist() if n.endswith(".jpg")]
    assert len(frames) >= 3  # the screenshot, the observe and the region
    for frame in frames:
        assert int(_is_magenta(_decoded(frame)).sum()) == 0
    assert session["app_window"] == window
