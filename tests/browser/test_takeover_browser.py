"""A person takes control in Chromium (Debian's, through Playwright): the takeover page
plays the rig's video over WebRTC, real mouse and keyboard events on the video drive the
sim desktop, the API sees what they typed and is refused meanwhile, and the page's
Hand back button returns control to the API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, async_playwright
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from rigway.agent.backends.sim import SimDesktop
from tests.browser.chromium import BROWSER_TESTS, CHROMIUM, CHROMIUM_ARGS
from tests.e2e.harness import Stack, batch_ran
from tests.e2e.takeover_client import streaming_stack

# The media stays on loopback (plain IPs, no mDNS names): as the stream's browser test.
WEBRTC_ARGS = [
    "--allow-loopback-in-peer-connection",
    "--disable-features=WebRtcHideLocalIpsWithMdns",
    "--autoplay-policy=no-user-gesture-required",
]
PAGE_TIMEOUT_MS = 20_000
TYPE_X = {"events": [{"type": "type_text", "text": "x"}]}

pytestmark = BROWSER_TESTS


@pytest.fixture
async def webrtc_browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=[*CHROMIUM_ARGS, *WEBRTC_ARGS]
        )
        yield launched
        await launched.close()


@pytest.fixture
async def stack(
    tmp_path: Path, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Stack]:
    async with streaming_stack(
        tmp_path, database_url, monkeypatch, keep_remote_candidates=True
    ) as running:
        yield running


async def _page_point(page: Page, sim: SimDesktop, control: str) -> tuple[float, float]:
    """The middle of a sim control as a point of the page, through the video's box
    (the video is shown smaller than the desktop, letterboxed as the browser lays it)."""
    rect = sim.control_rect(control)
    box = await page.evaluate(
        """() => {
          const v = document.getElementById('video');
          const r = v.getBoundingClientRect();
          return [r.left, r.top, r.width, r.height, v.videoWidth, v.videoHeight];
        }"""
    )
    left, top, width, height, video_w, video_h = box
    scale = min(width / video_w, height / video_h)
    left += (width - video_w * scale) / 2
    top += (height - video_h * scale) / 2
    native_w, native_h = sim.native_size()
    x = (rect.x + rect.w / 2) * video_w / native_w
    y = (rect.y + rect.h / 2) * video_h / native_h
    return left + x * scale, top + y * scale


async def test_a_person_types_into_the_sim_from_the_page_and_hands_back(
    stack: Stack, webrtc_browser: Browser
) -> None:
    sim = stack.sim()
    session_id = await stack.start_session()
    response = await stack.client.post(f"/v1/sessions/{session_id}/takeover")
    assert response.status_code == 201, response.text
    context = await webrtc_browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    page = await context.new_page()
    try:
        await page.goto(response.json()["viewer_url"])
        await page.wait_for_function("() => window.rigwayTakeover.control === 'human'")
        try:
            await page.wait_for_function("() => document.getElementById('video').videoWidth > 0")
        except PlaywrightTimeoutError:
            state = await page.evaluate("() => ({...window.rigwayTakeover})")
            pytest.fail(f"no video on the page: {state}")
        assert await page.inner_text("#control") == "you have control"

        x, y = await _page_point(page, sim, "username")
        await page.mouse.click(x, y)
        await page.keyboard.type("rigway")
        await page.keyboard.press("Shift+Digit1")
        await Stack.wait_until(lambda: sim.field_text("username") == "rigway!")
        targets = (await stack.client.get(f"/v1/sessions/{session_id}/targets")).json()
        username = next(t for t in targets["targets"] if t["name"] == "Username")
        assert username["value"] == "rigway!"
        assert username["focused"] is True
        refused = await stack.client.post(f"/v1/sessions/{session_id}/input", json=TYPE_X)
        assert refused.status_code == 409
        assert refused.json()["error"].startswith("human_in_control")
        # Held on the page when it hands back: released on the rig.
        await page.keyboard.down("Shift")
        await Stack.wait_until(lambda: sim.pressed_keys == {"shift"})

        await page.click("#hand-back")
        await page.wait_for_function("() => window.rigwayTakeover.ended")
        state = await page.evaluate("() => ({...window.rigwayTakeover})")
        assert state["control"] == "api"
        assert state["reason"] == "handed back"
        assert state["errors"] == []
        assert sim.pressed_keys == frozenset()
        session = (await stack.client.get(f"/v1/sessions/{session_id}")).json()
        assert session["control"] == "api"
        response = await stack.client.post(f"/v1/sessions/{session_id}/input", json=TYPE_X)
        assert batch_ran(response) == 1
        assert sim.field_text("username") == "rigway!x"
    finally:
        await context.close()
