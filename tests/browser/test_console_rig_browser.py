"""One rig's console page in a real browser (Debian's chromium through Playwright): the
owner reaches it from the rigs list, saves the settings form (checkboxes and the
number field as a browser sends them), sees the session with its key and launched app,
and ends it with the page's button."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Dialog, Page

from tests.browser.chromium import BROWSER_TESTS
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.gateway.console.pages import PASSWORD, add_owner

OWNER = "owner@example.com"
PAGE_TIMEOUT_MS = 15_000

pytestmark = BROWSER_TESTS


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state", database_url, reaper_interval_s=3600, agent_settings=QUICK_AGENT
    ) as running:
        await add_owner(running, OWNER)
        yield running


@pytest.fixture
async def page(browser: Browser, stack: Stack) -> AsyncIterator[Page]:
    context = await browser.new_context(base_url=stack.base_url)
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    opened = await context.new_page()

    async def accept(dialog: Dialog) -> None:  # the console's "are you sure?" prompts
        await dialog.accept()

    opened.on("dialog", accept)
    await opened.goto("/console/sign-in")
    await opened.fill("input[name=email]", OWNER)
    await opened.fill("input[name=password]", PASSWORD)
    await opened.click("button:text('Sign in')")
    await opened.wait_for_url("**/console/rigs")
    yield opened
    await context.close()


async def test_settings_saved_from_the_rig_page_reach_the_api(stack: Stack, page: Page) -> None:
    rig_id = stack.rig_ids[0]
    await page.click("text=Session and settings")
    await page.wait_for_url(f"**/console/rigs/{rig_id}")
    await page.check("input[name=app_mode_only]")
    await page.uncheck("input[name=recordings_allowed]")
    await page.fill("input[name=owner_idle_s]", "45")
    await page.click("button:text('Save settings')")
    await page.wait_for_url(f"**/console/rigs/{rig_id}?notice=rig_settings_saved")
    assert "settings are saved" in await page.inner_text("main")
    assert await page.is_checked("input[name=app_mode_only]")
    assert not await page.is_checked("input[name=recordings_allowed]")
    rig = (await stack.client.get(f"/v1/rigs/{rig_id}")).json()
    assert (rig["app_mode_only"], rig["owner_idle_s"], rig["recordings_allowed"]) == (
        True,
        45,
        False,
    )
    desktop = await stack.client.post("/v1/sessions", json={"rig_id": rig_id})
    assert desktop.json()["error"].startswith("mode_not_allowed")


async def test_the_rig_page_shows_the_session_and_ends_it(stack: Stack, page: Page) -> None:
    session_id = await stack.start_session()
    launched = await stack.client.post(
        f"/v1/sessions/{session_id}/app/launch", json={"path": "sleep", "args": ["300"]}
    )
    pid = launched.json()["pid"]
    await page.goto(f"/console/rigs/{stack.rig_ids[0]}")
    assert (await page.inner_text("#session-key")).startswith("e2e (")
    assert str(pid) in await page.inner_text("#launched-apps")
    await page.click("button:text('End session')")
    await page.wait_for_url("**/console/sessions?notice=session_killed")
    session = (await stack.client.get(f"/v1/sessions/{session_id}")).json()
    assert (session["status"], session["ended_reason"]) == ("ended", "owner_kill")
