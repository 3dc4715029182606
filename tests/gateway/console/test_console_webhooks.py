"""Webhooks in the console over real HTTP: a test event sent on demand to a real HTTPS
receiver, the newest deliveries listed with status and error, and the way to allow
private targets shown where the form is and where a private target is refused."""

from __future__ import annotations

import json
import re
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trustme

from rigway.gateway.webhooks.schemas import CreateWebhookIn
from rigway.webhooks import verify
from tests.e2e.harness import Stack, running_stack
from tests.gateway.console.pages import ConsolePages, add_owner
from tests.gateway.webhooks.receiver import Behaviour, HttpsReceiver

pytestmark = pytest.mark.postgres

OWNER = "owner@example.com"
SETTING = "RIGWAY_WEBHOOK_ALLOW_PRIVATE_TARGETS=true"


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


def _receiver(ca: trustme.CA, behaviour: Behaviour) -> HttpsReceiver:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost").configure_cert(context)
    return HttpsReceiver(context, behaviour)


@pytest.fixture
async def stack(tmp_path: Path, database_url: str, ca: trustme.CA) -> AsyncIterator[Stack]:
    ca_bundle = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_bundle))
    async with running_stack(
        tmp_path / "state",
        database_url,
        rigs=0,
        webhook_allow_private_targets=True,
        webhook_ca_bundle=str(ca_bundle),
    ) as running:
        await add_owner(running, OWNER)
        yield running


@pytest.fixture
async def owner(stack: Stack) -> AsyncIterator[ConsolePages]:
    async with ConsolePages(stack) as pages:
        yield await pages.signed_in(OWNER)


async def _webhook(stack: Stack, receiver: HttpsReceiver) -> tuple[str, str]:
    """A webhook to `receiver` for session.ended only: its id and secret."""
    url = f"https://localhost:{receiver.port}/hook"
    created = await stack.services.webhooks.create(
        stack.account_id, CreateWebhookIn(url=url, events=["session.ended"])
    )
    return created.webhook.id, created.webhook.secret


def _delivery_rows(page_text: str) -> list[str]:
    if 'id="deliveries"' not in page_text:
        return []
    body = page_text.split('id="deliveries"', 1)[1].split("</table>", 1)[0]
    return re.findall(r"<tr id=\"delivery-[^\"]+\">(.*?)</tr>", body, flags=re.DOTALL)


async def test_test_event_reaches_the_receiver_signed_and_is_listed(
    stack: Stack, owner: ConsolePages, ca: trustme.CA
) -> None:
    async with _receiver(ca, "ok") as receiver:
        webhook_id, secret = await _webhook(stack, receiver)
        sent = await owner.post(f"/console/webhooks/{webhook_id}/test")
        [request] = receiver.requests
    assert (sent.status_code, sent.headers["location"]) == (
        303,
        "/console/webhooks?notice=test_event_delivered",
    )
    payload = verify(request.body, request.headers, secret)  # signed like any delivery
    assert payload["type"] == "webhook.test"
    assert payload["data"]["webhook_id"] == webhook_id
    page = await owner.client.get(sent.headers["location"])
    assert "The test event was delivered" in page.text
    [row] = _delivery_rows(page.text)
    assert "webhook.test" in row
    assert ">204<" in row


async def test_a_refused_test_event_shows_its_status_and_error(
    stack: Stack, owner: ConsolePages, ca: trustme.CA
) -> None:
    async with _receiver(ca, "error") as receiver:
        webhook_id, _secret = await _webhook(stack, receiver)
        sent = await owner.post(f"/console/webhooks/{webhook_id}/test")
    assert sent.headers["location"] == "/console/webhooks?notice=test_event_failed"
    [row] = _delivery_rows((await owner.client.get("/console/webhooks")).text)
    assert ">500<" in row
    assert "receiver answered status 500" in row


async def test_only_the_newest_twenty_deliveries_are_listed(
    stack: Stack, owner: ConsolePages, ca: trustme.CA
) -> None:
    async with _receiver(ca, "ok") as receiver:
        webhook_id, _secret = await _webhook(stack, receiver)
        for _ in range(21):
            assert (await owner.post(f"/console/webhooks/{webhook_id}/test")).status_code == 303
        delivery_ids = [json.loads(request.body)["id"] for request in receiver.requests]
    page = (await owner.client.get("/console/webhooks")).text
    rows = _delivery_rows(page)
    assert len(rows) == 20
    assert f'id="delivery-{delivery_ids[0]}"' not in page
    assert f'id="delivery-{delivery_ids[-1]}"' in page


async def test_a_webhook_with_deliveries_deletes_cleanly(
    stack: Stack, owner: ConsolePages, ca: trustme.CA
) -> None:
    async with _receiver(ca, "ok") as receiver:
        webhook_id, _secret = await _webhook(stack, receiver)
        await owner.post(f"/console/webhooks/{webhook_id}/test")
    deleted = await owner.post(f"/console/webhooks/{webhook_id}/delete")
    assert deleted.status_code == 303
    assert _delivery_rows((await owner.client.get("/console/webhooks")).text) == []


async def test_another_account_cannot_send_a_test_to_my_webhook(
    stack: Stack, ca: trustme.CA
) -> None:
    other_account = await stack.services.accounts.create("other account")
    await add_owner(stack, "intruder@example.com", other_account)
    async with _receiver(ca, "ok") as receiver, ConsolePages(stack) as intruder:
        webhook_id, _secret = await _webhook(stack, receiver)
        await intruder.signed_in("intruder@example.com")
        refused = await intruder.post(f"/console/webhooks/{webhook_id}/test")
        assert receiver.requests == []
    assert refused.status_code == 404


async def test_the_form_shows_private_targets_are_allowed_here(owner: ConsolePages) -> None:
    page = (await owner.client.get("/console/webhooks")).text
    assert SETTING in page
    assert "never for production" in page


async def test_a_private_target_is_refused_with_the_way_to_allow_it(
    tmp_path: Path, database_url: str
) -> None:
    async with running_stack(tmp_path / "state", database_url, rigs=0) as stack:
        await add_owner(stack, OWNER)
        async with ConsolePages(stack) as owner:
            await owner.signed_in(OWNER)
            form = (await owner.client.get("/console/webhooks")).text
            refused = await owner.post(
                "/console/webhooks", url="https://localhost:8443/hook", events=["session.ended"]
            )
    assert SETTING in form
    assert refused.status_code == 400
    assert "loopback" in refused.text
    assert SETTING in refused.text
