"""Headless Chromium (Debian's /usr/bin/chromium) plays the stream from the gateway's
viewer page: native width, a frame rate worth the name, the right colours, and the
page hears the session end."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, async_playwright

from rigway.agent.backends.sim import DESKTOP_BGRA, SimDesktop
from rigway.agent.stream.encoders import HARDWARE_H264
from tests.e2e.harness import Stack
from tests.stream.stamp import StampedDesktop

CHROMIUM = Path("/usr/bin/chromium")
# Loopback candidates only with the first flag; plain IPs instead of
# mDNS names (which aioice would resolve by multicast) with the second.
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--allow-loopback-in-peer-connection",
    "--disable-features=WebRtcHideLocalIpsWithMdns",
    "--use-fake-ui-for-media-stream",
    "--autoplay-policy=no-user-gesture-required",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
PAGE_TIMEOUT_MS = 20_000
MIN_FPS = 20
# Limited-range 4:2:0 H.264 and the browser's colour conversion move a flat colour
# by a few levels.
COLOUR_TOLERANCE = 10
# Background, far from the window (centred) and from the clock's bar code (top left).
BACKGROUND_PIXEL = (100, 1000)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="Debian's chromium is not installed at /usr/bin/chromium"
    ),
]

# Presented frames over three seconds, counted as the compositor shows them.
MEASURE_FPS = """async () => {
  const video = document.getElementById('video');
  let frames = 0;
  const started = performance.now();
  await new Promise((done) => {
    const count = () => {
      frames += 1;
      if (performance.now() - started < 3000) video.requestVideoFrameCallback(count);
      else done();
    };
    video.requestVideoFrameCallback(count);
  });
  return frames / ((performance.now() - started) / 1000);
}"""

PIXEL_AT = """([x, y]) => {
  const video = document.getElementById('video');
  const canvas = document.createElement('canvas');
  canvas.width = video.videoWidth;
  canvas.height = video.videoHeight;
  const context = canvas.getContext('2d');
  context.drawImage(video, 0, 0);
  return Array.from(context.getImageData(x, y, 1, 1).data);
}"""


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
        )
        yield launched
        await launched.close()


async def _viewer_state(page: Page) -> dict[str, Any]:
    state: dict[str, Any] = await page.evaluate("() => ({...window.rigwayViewer})")
    return state


async def test_chromium_plays_the_stream_at_native_size(
    stream_stack: Stack, browser: Browser
) -> None:
    # The clock's bar code changes the desktop all the time, with damage: real frames.
    await stream_stack.add_agent(StampedDesktop(SimDesktop()))
    session_id = await stream_stack.start_session()
    response = await stream_stack.client.get(f"/v1/sessions/{session_id}/stream")
    assert response.status_code == 200, response.text
    page = await browser.new_page()
    page.set_default_timeout(PAGE_TIMEOUT_MS)
    try:
        await page.goto(response.json()["viewer_url"])
        await page.wait_for_function(
            "() => document.getElementById('video').videoWidth > 0"
            " && window.rigwayViewer.framesDecoded > 5"
        )
        assert await page.evaluate("() => document.getElementById('video').videoWidth") == 1920
        assert await page.evaluate("() => document.getElementById('video').videoHeight") == 1080

        fps = await page.evaluate(MEASURE_FPS)
        assert fps >= MIN_FPS, f"{fps:.1f} fps"

        pixel = await page.evaluate(PIXEL_AT, list(BACKGROUND_PIXEL))
        expected = DESKTOP_BGRA[2::-1]  # BGR(A) → RGB
        assert max(abs(a - b) for a, b in zip(pixel[:3], expected, strict=True)) <= (
            COLOUR_TOLERANCE
        ), pixel
        state = await _viewer_state(page)
        assert state["codec"] == "video/H264"
        assert state["encoder"] in ("libx264", *HARDWARE_H264)

        # The session ends: the page hears bye and closes its connection.
        assert (await stream_stack.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
        await page.wait_for_function("() => window.rigwayViewer.ended", timeout=2_000)
        assert "session ended" in (await _viewer_state(page))["reason"]
    finally:
        await page.close()
