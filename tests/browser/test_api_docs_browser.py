"""`/docs` and `/redoc` in a real browser with every request outside the gateway
blocked: the pages load their scripts and styles from the gateway itself, so they render
the API's operations with no network."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Browser, Page, Route

from tests.browser.chromium import BROWSER_TESTS
from tests.browser.test_console_browser import PAGE_TIMEOUT_MS
from tests.e2e.harness import running_stack

pytestmark = BROWSER_TESTS


async def _offline_page(browser: Browser, base_url: str, blocked: list[str]) -> Page:
    """A page that reaches the gateway only: any other request is aborted and noted."""
    context = await browser.new_context(base_url=base_url)
    context.set_default_timeout(PAGE_TIMEOUT_MS)

    async def only_the_gateway(route: Route) -> None:
        url = route.request.url
        if url.startswith(f"{base_url}/") or url.startswith("data:"):
            await route.continue_()
        else:
            blocked.append(f"{route.request.resource_type} {url}")
            await route.abort()

    await context.route("**/*", only_the_gateway)
    return await context.new_page()


async def test_swagger_ui_renders_the_operations_with_no_network(
    tmp_path: Path, database_url: str, browser: Browser
) -> None:
    async with running_stack(tmp_path / "state", database_url, rigs=0) as stack:
        blocked: list[str] = []
        page = await _offline_page(browser, stack.base_url, blocked)
        await page.goto("/docs")
        screenshot_operation = page.locator(
            ".opblock-summary-path", has_text="/v1/sessions/{session_id}/screenshot"
        )
        await screenshot_operation.first.wait_for()
        assert await page.locator(".opblock").count() >= 30
        assert blocked == []


async def test_redoc_renders_the_operations_with_no_network(
    tmp_path: Path, database_url: str, browser: Browser
) -> None:
    async with running_stack(tmp_path / "state", database_url, rigs=0) as stack:
        blocked: list[str] = []
        page = await _offline_page(browser, stack.base_url, blocked)
        await page.goto("/redoc")
        await page.get_by_text("/v1/sessions/{session_id}/screenshot").first.wait_for(
            state="attached"
        )
        # ReDoc's footer logo comes from Redocly's CDN; the image hides itself when it
        # cannot load, and nothing the page needs to work may come from outside.
        assert [entry for entry in blocked if not entry.startswith("image ")] == []
