"""Act and see through the real gateway on a real X desktop: input batches over HTTP
against GTK dialogs (zenity) on Xvfb, with settle, observe after, receipts, drags,
target-bound clicks and points in a downscaled screenshot's pixels.

Dialogs are started with the desktop's own launcher rather than `/app/launch`, so a
test can read what the dialog answered: its exit status (Yes is 0) and what it prints
on OK (a scale's value). Everything else goes through the API; the X server is read
directly only for what the API cannot say: which pointer buttons it holds down.
"""

from __future__ import annotations

import asyncio
import base64
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
import simplejpeg

from tests.e2e.harness import batch_ran
from tests.e2e.x11_rig import X11Session
from tests.support.x_desktop import XDesktop, wait_until

pytestmark = [pytest.mark.x11, pytest.mark.postgres]

# A GTK dialog takes a few seconds to map and reach the accessibility bus on a busy
# 2-core machine.
DIALOG_TIMEOUT_MS = 20000
EXIT_TIMEOUT_S = 15.0
# Points of the bare root window: openbox opens the dialogs at the screen's centre.
BARE = (20, 20)
ELSEWHERE_BARE = (60, 60)
GONE_ID = "t_0000000000"
SETTLE = {"quiet_ms": 100, "timeout_ms": 3000}


@dataclass
class Rig:
    """A session on the Xvfb desktop, and the dialogs a test opened on it."""

    session: X11Session
    desk: XDesktop
    app_env: dict[str, str]
    dialogs: list[subprocess.Popen[str]] = field(default_factory=list)

    async def post(self, path: str, body: dict[str, Any]) -> httpx2.Response:
        return await self.session.client.post(
            f"/v1/sessions/{self.session.session_id}{path}", json=body
        )

    async def act(self, *events: dict[str, Any], **batch: Any) -> dict[str, Any]:
        """A batch that must run whole; its answer."""
        response = await self.post("/input", {"events": list(events), **batch})
        assert batch_ran(response) == len(events)
        body: dict[str, Any] = response.json()
        return body

    async def stopped(self, code: str, *events: dict[str, Any]) -> dict[str, Any]:
        """A batch the host must stop with `code`; the 409's body."""
        response = await self.post("/input", {"events": list(events)})
        assert response.status_code == 409, response.text
        body: dict[str, Any] = response.json()
        assert body["error"].startswith(f"{code}: "), body
        receipts = body["events"]
        assert [r["ok"] for r in receipts] == [True] * body["stopped_at"] + [False], body
        return body

    async def wait(self, body: dict[str, Any]) -> dict[str, Any]:
        response = await self.post("/wait", body)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        assert answer["met"] is True, answer
        return answer

    async def control(self, **target: str) -> dict[str, Any]:
        """Wait for a control of the focused window; as /targets lists it, once the
        window has stopped drawing (so what a test does next is all that redraws)."""
        found = await self.wait(
            {"until": "target", "target": target, "timeout_ms": DIALOG_TIMEOUT_MS}
        )
        await self.wait({"until": "quiet", "quiet_ms": 200, "timeout_ms": 5000})
        control: dict[str, Any] = found["target"]
        return control

    async def targets(self) -> list[dict[str, Any]]:
        url = f"/v1/sessions/{self.session.session_id}/targets"
        response = await self.session.client.get(url)
        assert response.status_code == 200, response.text
        targets: list[dict[str, Any]] = response.json()["targets"]
        return targets

    def open(self, *argv: str) -> subprocess.Popen[str]:
        dialog = self.desk.launch(["zenity", *argv], capture_stdout=True, extra_env=self.app_env)
        self.dialogs.append(dialog)
        return dialog

    async def open_scale(self) -> tuple[subprocess.Popen[str], dict[str, Any]]:
        """A scale at 50 of 0..100, and the slider. Its value hidden, the trough spans the
        slider's width, so the knob sits at the slider's centre."""
        dialog = self.open("--scale", "--title=Scale", "--text=Pick", "--value=50", "--hide-value")
        return dialog, await self.control(role="slider")

    async def open_question(self) -> tuple[subprocess.Popen[str], dict[str, Any]]:
        """A Yes/No question, and its Yes button."""
        dialog = self.open("--question", "--title=Ask", "--text=Proceed?")
        return dialog, await self.control(name="Yes", role="push button")


@pytest.fixture
def rig(x11_session: X11Session, x_desktop: XDesktop, app_env: dict[str, str]) -> Iterator[Rig]:
    """Set up after the session, so torn down before it: the dialogs are gone by the
    time the session's teardown waits for an empty desktop."""
    opened = Rig(x11_session, x_desktop, app_env)
    yield opened
    for dialog in opened.dialogs:
        x_desktop.stop(dialog)


def centre(target: dict[str, Any]) -> tuple[int, int]:
    return target["x"] + target["w"] // 2, target["y"] + target["h"] // 2


def inside(target: dict[str, Any], x: int, y: int) -> bool:
    left, top = target["x"], target["y"]
    return bool(left <= x < left + target["w"] and top <= y < top + target["h"])


def drag_left(slider: dict[str, Any]) -> list[dict[str, Any]]:
    """Down on the knob, two moves to the slider's left end, up."""
    x, y = centre(slider)
    return [
        {"type": "mouse_down", "x": x, "y": y},
        {"type": "mouse_move", "x": x - slider["w"] // 4, "y": y},
        {"type": "mouse_move", "x": slider["x"] + 4, "y": y},
        {"type": "mouse_up"},
    ]


async def answered(dialog: subprocess.Popen[str]) -> int:
    return await asyncio.to_thread(dialog.wait, EXIT_TIMEOUT_S)


async def nothing_held(desk: XDesktop) -> None:
    """Until the server has no button down. Not always at once: a press on a window may
    start openbox's synchronous click-to-focus grab, and the server holds the pointer's
    later events, the release among them, until the grabbing client lets them through."""
    await asyncio.to_thread(wait_until, lambda: desk.held_buttons() == [], message="no button")


# -- settle, observe, receipts ----------------------------------------------------------


async def test_a_settled_click_observes_the_window_as_the_click_left_it(rig: Rig) -> None:
    _, slider = await rig.open_scale()
    # In the trough right of the knob (which ends some pixels before the slider's bounds
    # do): GTK moves the knob there, and the scale redraws.
    click = {"type": "mouse_click", "x": slider["x"] + slider["w"] * 3 // 4, "y": centre(slider)[1]}

    answer = await rig.act(click, settle=SETTLE, observe={})

    settle = answer["settle"]
    assert settle["settled"] is True, settle
    assert SETTLE["quiet_ms"] <= settle["waited_ms"] < SETTLE["timeout_ms"]
    assert answer["events"][0]["changed"] is True  # the last receipt covers the settle
    observed = answer["observe"]
    assert base64.b64decode(observed["jpeg_base64"])[:2] == b"\xff\xd8"
    assert observed["frame_id"].startswith("frm_")
    (moved,) = [t for t in observed["targets"] if t["role"] == "slider"]
    assert float(moved["value"]) > 60


async def test_a_move_over_the_bare_desktop_has_an_unchanged_receipt(rig: Rig) -> None:
    await rig.act({"type": "mouse_move", "x": BARE[0], "y": BARE[1]}, settle=SETTLE)
    x, y = ELSEWHERE_BARE

    answer = await rig.act({"type": "mouse_move", "x": x, "y": y}, settle=SETTLE)

    assert answer["settle"]["settled"] is True
    (receipt,) = answer["events"]
    assert (receipt["type"], receipt["x"], receipt["y"]) == ("mouse_move", x, y)
    assert receipt["changed"] is False


# -- drags and targets ------------------------------------------------------------------


async def test_a_drag_moves_a_scale_to_the_value_zenity_answers(rig: Rig) -> None:
    dialog, slider = await rig.open_scale()
    assert slider["value"] == "50"

    answer = await rig.act(*drag_left(slider), settle=SETTLE)

    types = [receipt["type"] for receipt in answer["events"]]
    assert types == ["mouse_down", "mouse_move", "mouse_move", "mouse_up"]
    (dragged,) = [t for t in await rig.targets() if t["role"] == "slider"]
    assert float(dragged["value"]) < 25
    await nothing_held(rig.desk)
    (ok,) = [t for t in await rig.targets() if t["role"] == "push button" and t["name"] == "OK"]
    await rig.act({"type": "mouse_click", "target": ok["id"]})
    assert await answered(dialog) == 0
    assert dialog.stdout is not None
    assert int(dialog.stdout.read()) == round(float(dragged["value"]))


async def test_a_click_bound_to_the_yes_buttons_id_answers_yes(rig: Rig) -> None:
    dialog, yes = await rig.open_question()

    answer = await rig.act({"type": "mouse_click", "target": yes["id"]})

    receipt = answer["events"][0]
    assert (receipt["x"], receipt["y"]) == centre(yes)
    assert await answered(dialog) == 0  # Yes; No would be 1


async def test_a_click_in_a_downscaled_screenshots_pixels_answers_yes(rig: Rig) -> None:
    dialog, yes = await rig.open_question()
    shot = await rig.session.client.get(
        f"/v1/sessions/{rig.session.session_id}/screenshot", params={"max_width": 960}
    )
    assert shot.status_code == 200, shot.text
    height, width, _, _ = simplejpeg.decode_jpeg_header(shot.content)
    assert (width, height) == (960, 540)  # half of the 1920x1080 desktop
    x, y = centre(yes)

    answer = await rig.act(
        {"type": "mouse_click", "x": x // 2, "y": y // 2},
        frame_id=shot.headers["x-frame-id"],
        coords="image",
    )

    receipt = answer["events"][0]
    assert inside(yes, receipt["x"], receipt["y"])
    assert await answered(dialog) == 0


# -- a drag cut short leaves no button down ---------------------------------------------


async def test_a_drag_stopped_by_a_gone_target_leaves_no_button_held(rig: Rig) -> None:
    _, slider = await rig.open_scale()
    down, move, _, up = drag_left(slider)

    body = await rig.stopped(
        "target_gone", down, move, {"type": "mouse_move", "target": GONE_ID}, up
    )

    assert body["stopped_at"] == 2
    await nothing_held(rig.desk)


async def test_a_drag_stopped_by_an_unmet_expectation_leaves_no_button_held(rig: Rig) -> None:
    # Nothing on the bare desktop redraws for a pointer move, button down or not.
    x, y = ELSEWHERE_BARE
    unmet = {"type": "mouse_move", "x": x, "y": y, "expect": "change", "expect_timeout_ms": 300}

    body = await rig.stopped(
        "expectation_failed",
        {"type": "mouse_down", "x": BARE[0], "y": BARE[1]},
        unmet,
        {"type": "mouse_up"},
    )

    assert body["stopped_at"] == 1
    await nothing_held(rig.desk)


async def test_a_button_held_when_the_session_ends_is_released(rig: Rig) -> None:
    _, slider = await rig.open_scale()
    await rig.act(drag_left(slider)[0])
    assert rig.desk.held_buttons() == [1]

    ended = await rig.session.client.delete(f"/v1/sessions/{rig.session.session_id}")

    assert ended.status_code == 200, ended.text
    await nothing_held(rig.desk)
