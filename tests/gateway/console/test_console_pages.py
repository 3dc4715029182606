"""The console over real HTTP: sign-in, the session cookie, CSRF, tenant isolation, and
the owner actions reaching the same services as the REST API."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from rigway.gateway.clock import FakeClock
from rigway.gateway.db.models import Rig
from rigway.gateway.identity.signing_keys import KEY_FILE_NAME, load_signing_key
from rigway.gateway.identity.tokens import issue_console_token
from tests.e2e.harness import QUICK_AGENT, Stack, running_stack
from tests.gateway.console.pages import PASSWORD, ConsolePages, add_owner, csrf_of

pytestmark = pytest.mark.postgres

OWNER = "owner@example.com"
INTRUDER = "intruder@example.com"


@pytest.fixture
async def stack(tmp_path: Path, database_url: str) -> AsyncIterator[Stack]:
    async with running_stack(
        tmp_path / "state",
        database_url,
        reaper_interval_s=3600,
        agent_settings=QUICK_AGENT,
        # As behind a TLS proxy on the gateway's machine.
        trusted_proxies=["127.0.0.1"],
    ) as running:
        await add_owner(running, OWNER)
        yield running


@pytest.fixture
async def owner(stack: Stack) -> AsyncIterator[ConsolePages]:
    async with ConsolePages(stack) as pages:
        yield await pages.signed_in(OWNER)


@pytest.fixture
async def intruder(stack: Stack) -> AsyncIterator[ConsolePages]:
    other_account = await stack.services.accounts.create("other account")
    await add_owner(stack, INTRUDER, other_account)
    async with ConsolePages(stack) as pages:
        yield await pages.signed_in(INTRUDER)


async def _key_id(stack: Stack) -> str:
    keys = await stack.services.keys.list(stack.account_id)
    return next(key.id for key in keys if stack.api_key.startswith(key.key_prefix))


# ---- sign-in and the session cookie ----


async def test_wrong_password_and_unknown_email_get_the_same_refusal(stack: Stack) -> None:
    async with ConsolePages(stack) as pages:
        wrong = await pages.sign_in(OWNER, "not the password")
        unknown = await pages.sign_in("nobody@example.com", "not the password")
        assert wrong.status_code == unknown.status_code == 401
        assert "Wrong email or password." in wrong.text
        assert wrong.text.replace(OWNER, "") == unknown.text.replace("nobody@example.com", "")
        assert "rigway_console=" not in wrong.headers.get("set-cookie", "")
        assert (await pages.client.get("/console/rigs")).status_code == 303


async def test_the_form_throttles_one_address_trying_many_emails(
    tmp_path: Path, database_url: str
) -> None:
    async with (
        running_stack(
            tmp_path / "state",
            database_url,
            rigs=0,
            clock=FakeClock(),
            sign_in_rate_limit_per_address="2/minute",
        ) as stack,
        ConsolePages(stack) as pages,
    ):
        await add_owner(stack, OWNER)
        tries = [await pages.sign_in(f"guess{index}@example.com") for index in range(2)]
        throttled = await pages.sign_in(OWNER)
    assert [answer.status_code for answer in tries] == [401, 401]
    assert throttled.status_code == 429
    assert "Too many sign-in attempts" in throttled.text
    assert "rigway_console=" not in throttled.headers.get("set-cookie", "")


async def test_a_forged_forwarded_for_does_not_escape_the_address_limit(
    tmp_path: Path, database_url: str
) -> None:
    # No trusted proxies (the default): X-Forwarded-For from a local peer is not believed.
    async with (
        running_stack(
            tmp_path / "state",
            database_url,
            rigs=0,
            clock=FakeClock(),
            sign_in_rate_limit_per_address="2/minute",
        ) as stack,
        ConsolePages(stack) as pages,
    ):
        await add_owner(stack, OWNER)
        answers = []
        for index in range(3):
            pages.client.headers["X-Forwarded-For"] = f"203.0.113.{index + 1}"
            answers.append(await pages.sign_in(f"guess{index}@example.com"))
    assert [answer.status_code for answer in answers] == [401, 401, 429]


async def test_sign_in_sets_an_http_only_strict_cookie_under_console(stack: Stack) -> None:
    async with ConsolePages(stack) as pages:
        answer = await pages.sign_in(OWNER)
        assert answer.status_code == 303
        assert answer.headers["location"] == "/console/rigs"
        cookie = next(
            c for c in answer.headers.get_list("set-cookie") if c.startswith("rigway_console=")
        )
        flags = {part.strip().lower() for part in cookie.split(";")[1:]}
        assert {"httponly", "samesite=strict", "path=/console", "max-age=3600"} <= flags
        assert "secure" not in flags  # plain http: a Secure cookie would be dropped
        assert (await pages.client.get("/console/rigs")).status_code == 200


async def test_cookies_are_secure_when_the_request_came_over_https(stack: Stack) -> None:
    # The stack trusts X-Forwarded-Proto from 127.0.0.1, as it would from a TLS proxy.
    https = {"X-Forwarded-Proto": "https"}
    async with ConsolePages(stack) as pages:
        form = await pages.client.get("/console/sign-in", headers=https)
        pre_session = form.headers["set-cookie"]
        assert "secure" in pre_session.lower()
        # The client's jar keeps Secure cookies off plain http, so send it by hand.
        pages.client.cookies.clear()
        cookie = pre_session.split(";")[0]
        fields = {"csrf_token": csrf_of(form), "email": OWNER, "password": PASSWORD}
        answer = await pages.client.post(
            "/console/sign-in", data=fields, headers={**https, "Cookie": cookie}
        )
        assert answer.status_code == 303
        session = next(
            c for c in answer.headers.get_list("set-cookie") if c.startswith("rigway_console=")
        )
        assert "secure" in {part.strip().lower() for part in session.split(";")}


async def test_every_page_without_a_session_redirects_to_sign_in(stack: Stack) -> None:
    rig_id = stack.rig_ids[0]
    session_id = await stack.start_session()
    gets = [
        "/console",
        "/console/rigs",
        "/console/sessions",
        "/console/keys",
        "/console/webhooks",
        f"/console/rigs/{rig_id}/screenshot",
        f"/console/rigs/{rig_id}/unpair",
    ]
    posts = [
        f"/console/sessions/{session_id}/kill",
        f"/console/rigs/{rig_id}/api-access",
        "/console/keys",
        f"/console/keys/{await _key_id(stack)}/revoke",
    ]
    async with ConsolePages(stack) as anonymous:
        for path in gets:
            answer = await anonymous.client.get(path)
            assert answer.status_code == 303, path
            assert answer.headers["location"].startswith("/console/"), path
        for path in posts:
            answer = await anonymous.client.post(path, data={"enabled": "false"})
            assert (answer.status_code, answer.headers["location"]) == (
                303,
                "/console/sign-in",
            ), path
    assert (await stack.client.get(f"/v1/sessions/{session_id}")).json()["status"] == "active"
    assert (await stack.client.get(f"/v1/rigs/{rig_id}")).json()["api_access_enabled"] is True


async def test_expired_or_forged_cookie_redirects_and_is_cleared(stack: Stack) -> None:
    settings = stack.services.settings
    key = load_signing_key(settings.state_dir / KEY_FILE_NAME)
    two_hours_ago = datetime.now(UTC) - timedelta(hours=2)
    issuer, audience = settings.resolved_console_issuer(), settings.console_audience
    expired = issue_console_token(
        "usr_x", stack.account_id, issuer, audience, 60, key, two_hours_ago
    )
    assert stack.services.identity is not None
    valid = stack.services.identity.issue("usr_x", stack.account_id)
    forged = valid[:-4] + ("AAAA" if not valid.endswith("AAAA") else "BBBB")
    async with ConsolePages(stack) as pages:
        for token in (expired, forged, "not-a-jwt"):
            answer = await pages.client.get(
                "/console/keys", headers={"Cookie": f"rigway_console={token}"}
            )
            assert answer.status_code == 303
            assert answer.headers["location"] == "/console/sign-in"
            assert 'rigway_console=""' in answer.headers["set-cookie"]


# ---- CSRF ----


async def test_post_without_or_with_a_wrong_csrf_token_is_refused(
    stack: Stack, owner: ConsolePages, intruder: ConsolePages
) -> None:
    revoke = f"/console/keys/{await _key_id(stack)}/revoke"
    api_access = f"/console/rigs/{stack.rig_ids[0]}/api-access"
    for token in (None, "", "0" * 64, "é", await intruder.csrf()):
        fields = (
            {"enabled": "false"} if token is None else {"enabled": "false", "csrf_token": token}
        )
        for path in (revoke, api_access):
            answer = await owner.client.post(path, data=fields)
            assert answer.status_code == 403, (path, token)
            assert "did not come from this console" in answer.text
    assert (await stack.client.get("/v1/rigs")).status_code == 200  # the key still works
    assert (await stack.client.get(f"/v1/rigs/{stack.rig_ids[0]}")).json()["api_access_enabled"]


async def test_cross_origin_post_is_refused_even_with_the_right_token(
    stack: Stack, owner: ConsolePages
) -> None:
    answer = await owner.client.post(
        f"/console/keys/{await _key_id(stack)}/revoke",
        data={"csrf_token": await owner.csrf()},
        headers={"Sec-Fetch-Site": "cross-site"},
    )
    assert answer.status_code == 403
    assert (await stack.client.get("/v1/rigs")).status_code == 200


async def test_sign_in_post_without_its_pre_session_cookie_is_refused(stack: Stack) -> None:
    async with ConsolePages(stack) as pages:
        form = await pages.client.get("/console/sign-in")
        pages.client.cookies.clear()
        fields = {"email": OWNER, "password": PASSWORD, "csrf_token": csrf_of(form)}
        answer = await pages.client.post("/console/sign-in", data=fields)
        assert answer.status_code == 403
        assert "rigway_console=" not in answer.headers.get("set-cookie", "")


# ---- tenant isolation ----


async def test_another_accounts_console_gets_404_for_its_sessions_keys_and_rigs(
    stack: Stack, intruder: ConsolePages
) -> None:
    rig_id = stack.rig_ids[0]
    session_id = await stack.start_session()
    attempts = [
        ("POST", f"/console/sessions/{session_id}/kill"),
        ("POST", f"/console/keys/{await _key_id(stack)}/revoke"),
        ("POST", f"/console/rigs/{rig_id}/api-access"),
        ("POST", f"/console/rigs/{rig_id}/rename"),
        ("POST", f"/console/rigs/{rig_id}/unpair"),
        ("GET", f"/console/rigs/{rig_id}/unpair"),
        ("GET", f"/console/rigs/{rig_id}/screenshot"),
    ]
    for method, path in attempts:
        if method == "GET":
            answer = await intruder.client.get(path)
        else:
            answer = await intruder.post(path, enabled="false", name="mine now")
        assert answer.status_code == 404, path
        assert "not yours" in answer.text
    assert (await stack.client.get(f"/v1/sessions/{session_id}")).json()["status"] == "active"
    rig = (await stack.client.get(f"/v1/rigs/{rig_id}")).json()
    assert (rig["name"], rig["api_access_enabled"]) == ("rig-1", True)
    assert session_id not in (await intruder.client.get("/console/sessions")).text


# ---- owner actions ----


async def test_created_key_is_shown_once_then_listed_by_prefix(
    stack: Stack, owner: ConsolePages
) -> None:
    created = await owner.post(
        "/console/keys", name="research agent", environment="test", scopes=["sessions"]
    )
    assert created.status_code == 201
    assert created.headers["cache-control"] == "no-store"
    secret = created.text.split('id="new-key">')[1].split("<")[0]
    assert secret.startswith("rgw_test_sk_")
    listing = await owner.client.get("/console/keys")
    assert secret[:20] in listing.text
    assert secret not in listing.text


async def test_kill_ends_the_session_as_owner_kill(stack: Stack, owner: ConsolePages) -> None:
    session_id = await stack.start_session()
    assert session_id in (await owner.client.get("/console/sessions")).text
    killed = await owner.post(f"/console/sessions/{session_id}/kill")
    assert (killed.status_code, killed.headers["location"]) == (
        303,
        "/console/sessions?notice=session_killed",
    )
    ended = (await stack.client.get(f"/v1/sessions/{session_id}")).json()
    assert (ended["status"], ended["ended_reason"]) == ("ended", "owner_kill")


async def test_screenshot_is_an_uncached_jpeg_at_most_640_wide(
    stack: Stack, owner: ConsolePages
) -> None:
    await stack.start_session()
    rigs_page = await owner.client.get("/console/rigs")
    path = f"/console/rigs/{stack.rig_ids[0]}/screenshot"
    assert f'src="{path}"' in rigs_page.text
    shot = await owner.client.get(path)
    assert shot.status_code == 200
    assert shot.headers["content-type"] == "image/jpeg"
    assert shot.headers["cache-control"] == "no-store"
    assert shot.content[:2] == b"\xff\xd8"
    assert _jpeg_width(shot.content) == 640


async def test_rig_name_is_escaped_and_api_access_toggles(
    stack: Stack, owner: ConsolePages
) -> None:
    rig_id = stack.rig_ids[0]
    renamed = await owner.post(f"/console/rigs/{rig_id}/rename", name="<script>x</script>")
    assert renamed.status_code == 303
    page = await owner.client.get("/console/rigs")
    assert "&lt;script&gt;x&lt;/script&gt;" in page.text
    assert "<script>x" not in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    await owner.post(f"/console/rigs/{rig_id}/api-access", enabled="false")
    refused = await stack.client.post("/v1/sessions", json={"rig_id": rig_id})
    assert refused.status_code == 403


async def test_pairing_code_page_shows_a_code_that_pairs_a_rig(
    stack: Stack, owner: ConsolePages
) -> None:
    answer = await owner.post("/console/rigs/pairing-code")
    assert answer.status_code == 201
    code = answer.text.split('id="pairing-code">')[1].split("<")[0]
    assert f"rigway agent pair --gateway http://127.0.0.1:8080 --code {code}<" in answer.text
    assert ">rigway agent run<" in answer.text  # it finds what pair kept
    paired = await stack.services.rigs.pair(code, name="new rig", os="", gpu="")
    assert paired.rig_id in (await owner.client.get("/console/rigs")).text


async def test_webhook_secret_is_shown_once_and_bad_urls_are_explained(
    stack: Stack, owner: ConsolePages
) -> None:
    events = ["session.started", "session.ended"]
    refused = await owner.post("/console/webhooks", url="http://example.com/hook", events=events)
    assert refused.status_code == 400
    assert "webhook url" in refused.text
    no_events = await owner.post("/console/webhooks", url="https://93.184.216.34/hook")
    assert no_events.status_code == 400
    assert "events: List should have at least 1 item" in no_events.text
    assert await stack.services.webhooks.list(stack.account_id) == []
    created = await owner.post("/console/webhooks", url="https://93.184.216.34/h", events=events)
    assert created.status_code == 201
    secret = created.text.split('id="new-secret">')[1].split("<")[0]
    assert secret.startswith("whsec_")
    assert secret not in (await owner.client.get("/console/webhooks")).text


async def test_unpair_asks_first_then_ends_the_live_session(
    stack: Stack, owner: ConsolePages
) -> None:
    rig_id = stack.rig_ids[0]
    session_id = await stack.start_session()
    confirm = await owner.client.get(f"/console/rigs/{rig_id}/unpair")
    assert confirm.status_code == 200
    assert "Its live session ends now." in confirm.text
    unpaired = await owner.post(f"/console/rigs/{rig_id}/unpair")
    assert unpaired.headers["location"] == "/console/rigs?notice=rig_unpaired"
    ended = (await stack.client.get(f"/v1/sessions/{session_id}")).json()
    assert ended["ended_reason"] == "unpaired"
    assert rig_id not in (await owner.client.get("/console/rigs")).text


async def test_wake_of_an_offline_rig_without_a_mac_explains_why(
    stack: Stack, owner: ConsolePages
) -> None:
    rig_id = stack.rig_ids[0]
    await stack.stop_agent(rig_id)
    async with stack.services.db.begin() as db:
        rig = await db.get(Rig, rig_id)
        assert rig is not None
        rig.mac = None  # deterministic: no magic packet leaves this machine
    page = await owner.client.get("/console/rigs")
    assert f'action="/console/rigs/{rig_id}/wake"' in page.text
    answer = await owner.post(f"/console/rigs/{rig_id}/wake")
    assert answer.status_code == 409
    assert "no MAC address is known for this rig" in answer.text


def _jpeg_width(jpeg: bytes) -> int:
    """The width in the first SOF segment."""
    index = 2
    while index < len(jpeg):
        marker, length = jpeg[index + 1], int.from_bytes(jpeg[index + 2 : index + 4], "big")
        if 0xC0 <= marker <= 0xC3:
            return int.from_bytes(jpeg[index + 7 : index + 9], "big")
        index += 2 + length
    raise AssertionError("no SOF segment")
