"""The console's replay of a recording in a real browser (Debian's chromium through
Playwright): a 20-step session on the sim rig, stepped through with Next and Previous;
each step shows its frame with its action drawn on it, the targets and the timings.

With RIGWAY_WRITE_DOC_IMAGES=1 it also writes docs/images/recording-replay.png, the
picture docs/api.md shows (otherwise it only checks the page)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, Page

from tests.browser.chromium import BROWSER_TESTS
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.gateway.console.pages import PASSWORD, add_owner

OWNER = "owner@example.com"
PAGE_TIMEOUT_MS = 20_000
DOC_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "recording-replay.png"
STEPS = 20

pytestmark = BROWSER_TESTS


async def _signed_in_page(browser: Browser, stack: Stack) -> Page:
    await add_owner(stack, OWNER)
    context = await browser.new_context(
        base_url=stack.base_url, viewport={"width": 1400, "height": 900}
    )
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    page = await context.new_page()
    await page.goto("/console/sign-in")
    await page.fill("input[name=email]", OWNER)
    await page.fill("input[name=password]", PASSWORD)
    await page.click("button:text('Sign in')")
    await page.wait_for_url("**/console/rigs")
    return page


def _centre(targets: list[dict[str, Any]], name: str) -> tuple[int, int]:
    target = next(t for t in targets if t["name"] == name)
    return target["x"] + target["w"] // 2, target["y"] + target["h"] // 2


async def _record_twenty_steps(stack: Stack, session_id: str) -> None:
    """Screenshot, observe, then input batches each followed by an observe."""
    client = stack.client
    base = f"/v1/sessions/{session_id}"
    assert (await client.get(f"{base}/screenshot?max_width=1280")).status_code == 200
    targets = (await client.get(f"{base}/observe?max_width=1280")).json()["targets"]
    user = _centre(targets, "Username")
    password = _centre(targets, "Password")
    box = _centre(targets, "Remember me")
    batches: list[list[dict[str, Any]]] = [
        [{"type": "mouse_click", "x": user[0], "y": user[1]}, {"type": "type_text", "text": "ada"}],
        [
            {"type": "mouse_click", "x": password[0], "y": password[1]},
            {"type": "type_text", "text": "correct-horse"},
        ],
        [{"type": "mouse_click", "x": box[0], "y": box[1]}],
        [
            {"type": "mouse_down", "x": user[0] - 60, "y": user[1]},
            {"type": "mouse_move", "x": user[0], "y": user[1] + 10},
            {"type": "mouse_up", "x": user[0] + 60, "y": user[1]},
        ],
        [{"type": "key_press", "key": "tab"}],
        [{"type": "mouse_move", "x": box[0] + 40, "y": box[1] + 40}],
        [{"type": "mouse_click", "x": box[0], "y": box[1]}],
        [{"type": "mouse_click", "x": user[0], "y": user[1]}, {"type": "type_text", "text": "!"}],
        [{"type": "key_press", "key": "end"}],
    ]
    for events in batches:
        answer = await client.post(f"{base}/input", json={"events": events})
        assert answer.status_code == 200, answer.text
        assert (await client.get(f"{base}/observe?max_width=1280")).status_code == 200


async def _step_shown(page: Page, seq: int) -> None:
    await page.wait_for_function(
        "seq => document.getElementById('replay-frame').dataset.step === String(seq)", arg=seq
    )


async def _red_at(page: Page, x: float, y: float) -> bool:
    colour: list[int] = await page.evaluate(
        """([x, y]) => Array.from(document.getElementById('replay-frame')
            .getContext('2d').getImageData(x, y, 1, 1).data)""",
        [x, y],
    )
    red, green, blue = colour[:3]
    return red > 180 and green < 90 and blue < 90


async def test_console_replays_a_recording_step_by_step(
    tmp_path: Path, database_url: str, browser: Browser
) -> None:
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        session_id = await stack.start_session(record=True)
        await _record_twenty_steps(stack, session_id)
        assert (await stack.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
        page = await _signed_in_page(browser, stack)

        await page.goto("/console/history")
        await page.click(f"#session-{session_id} a:text('Replay')")
        await page.wait_for_url(f"**/console/sessions/{session_id}/recording")
        await _step_shown(page, 1)
        assert await page.inner_text("#replay-position") == f"Step 1 of {STEPS}"
        assert await page.is_disabled("#replay-previous")
        assert (await page.inner_text("#replay-action")).startswith("Screenshot")

        await page.click("#replay-next")
        await _step_shown(page, 2)
        assert "Password (password text)" in await page.inner_text("#replay-targets")
        assert await page.get_attribute("#replay-frame", "data-drawn") == "targets"

        await page.click("#replay-next")
        await _step_shown(page, 3)
        drawn = await page.get_attribute("#replay-frame", "data-drawn") or ""
        assert drawn.startswith("click ")
        assert 'type "ada"' in await page.inner_text("#replay-action")
        assert "(from step 2)" in await page.inner_text("#replay-targets-note")
        assert "Batch" in await page.inner_text("#replay-timing")
        click_x, click_y = (int(n) for n in drawn.split(";")[0].split()[1].split(","))
        # The frame is 1280 wide of the 1920 native desktop: the ring is drawn around
        # the click's point in image pixels, `data-ring-px` from it.
        scale = 1280 / 1920
        ring_px = float(await page.get_attribute("#replay-frame", "data-ring-px") or "0")
        assert ring_px > 0
        assert await _red_at(page, click_x * scale + ring_px, click_y * scale)
        assert not await _red_at(page, click_x * scale + ring_px / 2, click_y * scale)

        for seq in range(4, 6):
            await page.click("#replay-next")
            await _step_shown(page, seq)
        assert 'type "[redacted]"' in await page.inner_text("#replay-action")
        if os.environ.get("RIGWAY_WRITE_DOC_IMAGES") == "1":
            await page.screenshot(path=str(DOC_IMAGE), full_page=True)

        for seq in range(6, STEPS + 1):
            await page.keyboard.press("ArrowRight")
            await _step_shown(page, seq)
        assert await page.inner_text("#replay-position") == f"Step {STEPS} of {STEPS}"
        assert await page.is_disabled("#replay-next")
        await page.click("#replay-previous")
        await _step_shown(page, STEPS - 1)
        drag = 9  # the drag's batch: step 3 + 2 * 3
        await page.goto(f"/console/sessions/{session_id}/recording#step-{drag}")
        await _step_shown(page, drag)
        assert (await page.get_attribute("#replay-frame", "data-drawn") or "").startswith("drag")
