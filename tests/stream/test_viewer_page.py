"""The viewer page (HTTP only; tests/stream/test_stream_browser.py plays it) and the
console's link to it."""

from __future__ import annotations

import html
import json
import re

from websockets.asyncio.client import connect

from rigway.agent.backends.sim import SimDesktop
from tests.e2e.harness import Stack
from tests.gateway.console.pages import ConsolePages, add_owner


async def _viewer_url(stack: Stack, session_id: str) -> tuple[str, str]:
    body = (await stack.client.get(f"/v1/sessions/{session_id}/stream")).json()
    return body["viewer_url"], body["connect_url"]


def _config(page: str) -> dict[str, object]:
    start = page.index('data-config="') + len('data-config="')
    config: dict[str, object] = json.loads(html.unescape(page[start : page.index('"', start)]))
    return config


async def test_the_page_looks_at_its_token_without_using_it(stream_stack: Stack) -> None:
    await stream_stack.add_agent(SimDesktop())
    session_id = await stream_stack.start_session()
    viewer_url, connect_url = await _viewer_url(stream_stack, session_id)
    for _ in range(2):  # looking twice is fine: only the socket uses the token up
        page = await stream_stack.client.get(viewer_url)
        assert page.status_code == 200
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert "script-src 'self'" in page.headers["content-security-policy"]
    config = _config(page.text)
    assert config["session_id"] == session_id
    assert config["signaling_url"] == connect_url.split("?")[0]
    assert config["ice_servers"] == []
    script = await stream_stack.client.get("/v1/stream/static/viewer.js")
    assert "rigwayPeer" in script.text
    peer = re.search(r'<script src="(/v1/stream/static/peer\.js\?v=[0-9a-f]+)"', page.text)
    assert peer is not None
    assert "setCodecPreferences" in (await stream_stack.client.get(peer.group(1))).text

    async with connect(connect_url, compression=None):
        pass
    used = await stream_stack.client.get(viewer_url)
    assert used.status_code == 401
    assert "already used" in used.text
    garbage = await stream_stack.client.get("/v1/stream/view?token=nope")
    assert garbage.status_code == 401


async def test_the_console_link_opens_a_fresh_viewer_page(stream_stack: Stack) -> None:
    await stream_stack.add_agent(SimDesktop())
    session_id = await stream_stack.start_session()
    await add_owner(stream_stack, "owner@example.com")
    async with ConsolePages(stream_stack) as anonymous:
        refused = await anonymous.client.get(f"/console/stream/{session_id}")
        assert refused.status_code == 303
        assert refused.headers["location"] == "/console/sign-in"
    async with await ConsolePages(stream_stack).signed_in("owner@example.com") as console:
        link = await console.client.get(f"/console/stream/{session_id}")
        assert link.status_code == 303
        assert link.headers["location"].startswith("/v1/stream/view?token=")
        page = await console.client.get(link.headers["location"])
        assert page.status_code == 200
        assert _config(page.text)["session_id"] == session_id
        missing = await console.client.get("/console/stream/ses_nope")
        assert missing.status_code == 404
