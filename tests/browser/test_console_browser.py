"""The console in a real browser (Debian's chromium through Playwright) against a
running stack: keys shown once and revoked, and an owner kill that the API and a
webhook receiver both see."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import trustme
from playwright.async_api import Browser, Dialog, Page

from rigway.gateway.webhooks.schemas import CreateWebhookIn
from rigway.webhooks import verify
from tests.browser.chromium import BROWSER_TESTS
from tests.e2e.harness import Stack, running_stack
from tests.gateway.console.pages import PASSWORD, add_owner
from tests.gateway.webhooks.receiver import HttpsReceiver

OWNER = "owner@example.com"
PAGE_TIMEOUT_MS = 15_000

pytestmark = BROWSER_TESTS


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def receiver(ca: trustme.CA) -> AsyncIterator[HttpsReceiver]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    async with HttpsReceiver(context) as running:
        yield running


async def _signed_in_page(browser: Browser, stack: Stack) -> Page:
    await add_owner(stack, OWNER)
    context = await browser.new_context(base_url=stack.base_url)
    context.set_default_timeout(PAGE_TIMEOUT_MS)
    page = await context.new_page()

    async def accept(dialog: Dialog) -> None:  # the console's "are you sure?" prompts
        await dialog.accept()

    page.on("dialog", accept)
    await page.goto("/console/keys")
    assert page.url.endswith("/console/sign-in")
    await page.fill("input[name=email]", OWNER)
    await page.fill("input[name=password]", PASSWORD)
    await page.click("button:text('Sign in')")
    await page.wait_for_url("**/console/rigs")
    return page


async def test_key_created_in_console_works_until_revoked_there(
    tmp_path: Path, database_url: str, browser: Browser
) -> None:
    async with running_stack(tmp_path / "state", database_url, reaper_interval_s=3600) as stack:
        page = await _signed_in_page(browser, stack)
        await page.click("nav >> text=API keys")
        await page.fill("input[name=name]", "browser agent")
        await page.select_option("select[name=environment]", "live")
        await page.click("button:text('Create key')")
        secret = (await page.inner_text("#new-key")).strip()
        assert secret.startswith("rgw_live_sk_")
        await page.click("text=Done")
        assert secret not in await page.content()

        async with httpx2.AsyncClient(base_url=stack.base_url, trust_env=False) as api:
            bearer = {"Authorization": f"Bearer {secret}"}
            assert (await api.get("/v1/rigs", headers=bearer)).status_code == 200
            row = page.locator("tr", has_text=secret[:20])
            await row.locator("button:text('Revoke')").click()
            await page.wait_for_url("**/console/keys?notice=key_revoked")
            assert await page.locator("tr", has_text=secret[:20]).count() == 0
            assert (await api.get("/v1/rigs", headers=bearer)).status_code == 401


async def test_owner_kill_in_console_ends_the_session_for_api_and_webhook(
    tmp_path: Path,
    database_url: str,
    browser: Browser,
    ca: trustme.CA,
    receiver: HttpsReceiver,
) -> None:
    ca_bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_bundle))
    async with running_stack(
        tmp_path / "state",
        database_url,
        reaper_interval_s=3600,
        webhook_allow_private_targets=True,
        webhook_ca_bundle=str(ca_bundle),
        webhook_poll_interval_s=0.05,
    ) as stack:
        hook = await stack.services.webhooks.create(
            stack.account_id, CreateWebhookIn(url=f"https://localhost:{receiver.port}/hook")
        )
        secret = hook.webhook.secret
        session_id = await stack.start_session()
        page = await _signed_in_page(browser, stack)
        await _screenshot_rigs_page(page, tmp_path / "rigs.png")

        await page.click("nav >> text=Live sessions")
        await page.locator(f"#session-{session_id} button:text('Kill')").click()
        await page.wait_for_url("**/console/sessions?notice=session_killed")

        shot = await stack.client.get(f"/v1/sessions/{session_id}/screenshot")
        assert shot.status_code == 410
        await stack.wait_until(
            lambda: (
                bool(_events(receiver, secret, "session.ended"))
                and bool(_events(receiver, secret, "session.started"))
            )
        )
        [ended] = _events(receiver, secret, "session.ended")
        assert ended["data"]["session_id"] == session_id
        assert ended["data"]["ended_reason"] == "owner_kill"
        assert len(_events(receiver, secret, "session.started")) == 1


async def _screenshot_rigs_page(page: Page, path: Path) -> None:
    await page.goto("/console/rigs")
    await page.wait_for_function(
        "() => { const img = document.querySelector('img.screen');"
        " return img !== null && img.complete && img.naturalWidth > 0; }"
    )
    await page.screenshot(path=str(path), full_page=True)


def _events(receiver: HttpsReceiver, secret: str, kind: str) -> list[dict[str, Any]]:
    """The verified deliveries of `kind` so far (verify raises on a bad signature)."""
    payloads = [verify(request.body, request.headers, secret) for request in receiver.requests]
    return [payload for payload in payloads if payload["type"] == kind]
