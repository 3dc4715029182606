"""The console's live parts in a real browser (Debian's chromium through Playwright):
values change on the open page, with no reload, as console.js polls /console/live.json."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from playwright.async_api import Browser, Page

from rigway.gateway.clock import FakeClock
from tests.browser.chromium import BROWSER_TESTS
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.gateway.console.pages import PASSWORD, add_owner

OWNER = "owner@example.com"
# Long enough for a few of console.js's polls (every 4 s).
PAGE_TIMEOUT_MS = 20_000

pytestmark = BROWSER_TESTS


async def _signed_in_page(browser: Browser, stack: Stack) -> Page:
    await add_owner(stack, OWNER)
    context = await browser.new_context(base_url=stack.base_url)
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    page = await context.new_page()
    await page.goto("/console/sign-in")
    await page.fill("input[name=email]", OWNER)
    await page.fill("input[name=password]", PASSWORD)
    await page.click("button:text('Sign in')")
    await page.wait_for_url("**/console/rigs")
    return page


async def _wait_for_text(page: Page, selector: str, text: str) -> None:
    await page.wait_for_function(
        "([selector, text]) => document.querySelector(selector)?.textContent === text",
        arg=[selector, text],
    )


async def test_last_seen_moves_and_offline_shows_on_the_open_rigs_page(
    tmp_path: Path, database_url: str, browser: Browser
) -> None:
    clock = FakeClock(datetime(2026, 3, 1, 12, 0, tzinfo=UTC))
    async with running_stack(
        tmp_path / "state",
        database_url,
        clock=clock,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
    ) as stack:
        page = await _signed_in_page(browser, stack)
        last_seen = f'[data-live="rig:{stack.rig_ids[0]}:last_seen"]'
        assert await page.inner_text(last_seen) == "2026-03-01 12:00:00 UTC"
        navigations: list[str] = []
        page.on("framenavigated", lambda frame: navigations.append(frame.url))
        clock.advance(65)
        await _wait_for_text(page, last_seen, "2026-03-01 12:01:05 UTC")
        await stack.stop_agent(stack.rig_ids[0])
        state = f'[data-live="rig:{stack.rig_ids[0]}:state"]'
        await _wait_for_text(page, state, "offline")
        assert await page.get_attribute(state, "class") == "badge offline"
        assert navigations == []  # changed in place, not by a reload


async def test_the_session_page_shows_its_end_without_a_reload(
    tmp_path: Path, database_url: str, browser: Browser
) -> None:
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as stack:
        session_id = await stack.start_session()
        page = await _signed_in_page(browser, stack)
        await page.goto(f"/console/sessions/{session_id}")
        state = f'[data-live="session:{session_id}:status"]'
        assert await page.inner_text(state) == "live"
        assert (await stack.client.delete(f"/v1/sessions/{session_id}")).status_code == 200
        await _wait_for_text(page, state, "ended by the agent")
