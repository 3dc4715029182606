"""Deliveries to a real local HTTPS receiver (trustme CA), with a resolver the test controls."""

from __future__ import annotations

import json
import ssl
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path

import pytest
import trustme

from rigway.gateway.webhooks.delivery import DeliveryResult, deliver
from rigway.gateway.webhooks.signing import (
    delivery_headers,
    new_webhook_secret,
    signature_header,
)
from rigway.gateway.webhooks.ssrf import check_webhook_url
from rigway.webhooks import verify
from tests.gateway.webhooks.fakes import FakeResolver
from tests.gateway.webhooks.receiver import Behaviour, HttpsReceiver

RECEIVER_NAME = "receiver.test"
PUBLIC_V4 = "93.184.216.34"

ReceiverFactory = Callable[..., AbstractAsyncContextManager[HttpsReceiver]]


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture(scope="module")
def ca_bundle(ca: trustme.CA, tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("ca") / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def receiver_factory(ca: trustme.CA) -> ReceiverFactory:
    def make(
        behaviour: Behaviour = "ok", cert_names: tuple[str, ...] = (RECEIVER_NAME, "localhost")
    ) -> HttpsReceiver:
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert(*cert_names).configure_cert(context)
        return HttpsReceiver(context, behaviour)

    return make


@pytest.fixture
async def receiver(receiver_factory: ReceiverFactory) -> AsyncIterator[HttpsReceiver]:
    async with receiver_factory() as running:
        yield running


def loopback_resolver() -> FakeResolver:
    return FakeResolver({RECEIVER_NAME: ["127.0.0.1"]})


def url_of(receiver: HttpsReceiver, path: str = "/hooks/rigway?source=test") -> str:
    return f"https://{RECEIVER_NAME}:{receiver.port}{path}"


def signed_event(secret: str) -> tuple[bytes, dict[str, str]]:
    payload = {
        "type": "session.started",
        "id": "dlv_123",
        "created_at": "2026-11-20T10:00:00Z",
        "data": {"session_id": "ses_1", "rig_id": "rig_1", "mode": "desktop", "status": "active"},
    }
    body = json.dumps(payload).encode("utf-8")
    timestamp = int(time.time())
    signature = signature_header(secret, timestamp, body)
    return body, delivery_headers("session.started", "dlv_123", timestamp, signature)


async def deliver_to(
    receiver: HttpsReceiver,
    ca_bundle: str | None,
    *,
    timeout_s: float = 5.0,
    max_response_bytes: int = 64 * 1024,
) -> DeliveryResult:
    body, headers = signed_event(new_webhook_secret())
    return await deliver(
        url_of(receiver),
        body,
        headers,
        resolver=loopback_resolver(),
        allow_private=True,
        ca_bundle=ca_bundle,
        timeout_s=timeout_s,
        max_response_bytes=max_response_bytes,
    )


async def test_signed_delivery_verifies_at_receiver(
    receiver: HttpsReceiver, ca_bundle: str
) -> None:
    secret = new_webhook_secret()
    body, headers = signed_event(secret)
    before = datetime.now(UTC)

    result = await deliver(
        url_of(receiver),
        body,
        headers,
        resolver=loopback_resolver(),
        allow_private=True,
        ca_bundle=ca_bundle,
    )

    assert (result.status, result.error) == (204, None)
    assert result.delivered_at >= before
    [request] = receiver.requests
    assert (request.method, request.path) == ("POST", "/hooks/rigway?source=test")
    assert verify(request.body, request.headers, secret)["id"] == "dlv_123"
    assert request.headers["X-Service-Event"] == "session.started"


async def test_delivery_keeps_name_in_host_header_and_sni(
    receiver: HttpsReceiver, ca_bundle: str
) -> None:
    # The name does not resolve through real DNS: arriving at all proves the pinned IP.
    await deliver_to(receiver, ca_bundle)

    [request] = receiver.requests
    assert request.headers["Host"] == f"{RECEIVER_NAME}:{receiver.port}"
    assert receiver.sni_names == [RECEIVER_NAME]


async def test_dns_flip_to_loopback_sends_no_request(
    receiver: HttpsReceiver, ca_bundle: str
) -> None:
    resolver = FakeResolver({RECEIVER_NAME: [PUBLIC_V4]})
    await check_webhook_url(url_of(receiver), resolver=resolver, allow_private=False)
    resolver.answers[RECEIVER_NAME] = ["127.0.0.1"]
    body, headers = signed_event(new_webhook_secret())

    result = await deliver(
        url_of(receiver), body, headers, resolver=resolver, allow_private=False, ca_bundle=ca_bundle
    )

    assert result.status is None
    assert result.error is not None
    assert result.error.startswith("refused")
    assert (receiver.connections, receiver.requests) == (0, [])


async def test_dns_flip_to_private_network_sends_no_request(
    receiver: HttpsReceiver, ca_bundle: str
) -> None:
    resolver = FakeResolver({RECEIVER_NAME: [PUBLIC_V4]})
    await check_webhook_url(url_of(receiver), resolver=resolver, allow_private=False)
    resolver.answers[RECEIVER_NAME] = ["10.20.30.40"]
    body, headers = signed_event(new_webhook_secret())

    result = await deliver(
        url_of(receiver), body, headers, resolver=resolver, allow_private=False, ca_bundle=ca_bundle
    )

    assert result.error == "refused: webhook url resolves to a private address"
    assert receiver.connections == 0


async def test_redirect_recorded_as_failure_and_not_followed(
    receiver_factory: ReceiverFactory, ca_bundle: str
) -> None:
    async with receiver_factory("redirect") as receiver:
        result = await deliver_to(receiver, ca_bundle)

    assert (result.status, result.error) == (302, "redirect not followed (status 302)")
    assert [r.path for r in receiver.requests] == ["/hooks/rigway?source=test"]


async def test_server_error_recorded_with_status(
    receiver_factory: ReceiverFactory, ca_bundle: str
) -> None:
    async with receiver_factory("error") as receiver:
        result = await deliver_to(receiver, ca_bundle)

    assert (result.status, result.error) == (500, "receiver answered status 500")


async def test_slow_receiver_hits_deadline(
    receiver_factory: ReceiverFactory, ca_bundle: str
) -> None:
    async with receiver_factory("slow") as receiver:
        started = time.monotonic()
        result = await deliver_to(receiver, ca_bundle, timeout_s=0.3)
        elapsed = time.monotonic() - started

    assert (result.status, result.error) == (None, "timed out after 0.3 s")
    assert len(receiver.requests) == 1
    assert elapsed < 3.0


async def test_oversized_response_body_read_is_capped(
    receiver_factory: ReceiverFactory, ca_bundle: str
) -> None:
    # The receiver announces 100 MiB, sends 256 KiB and stalls: reading it all would
    # end in the timeout, so a 200 without error proves the read stopped at the cap.
    async with receiver_factory("huge") as receiver:
        result = await deliver_to(receiver, ca_bundle, timeout_s=3.0, max_response_bytes=1024)

    assert (result.status, result.error) == (200, None)


async def test_certificate_for_another_name_refused(
    receiver_factory: ReceiverFactory, ca_bundle: str
) -> None:
    async with receiver_factory(cert_names=("other.test",)) as receiver:
        result = await deliver_to(receiver, ca_bundle)

    assert result.status is None
    assert result.error is not None
    assert "connection failed" in result.error
    assert receiver.requests == []


async def test_private_ca_untrusted_without_bundle(receiver: HttpsReceiver) -> None:
    result = await deliver_to(receiver, None)

    assert result.status is None
    assert result.error is not None
    assert "CERTIFICATE_VERIFY_FAILED" in result.error
    assert receiver.requests == []


async def test_missing_ca_bundle_reported_not_raised(
    receiver: HttpsReceiver, tmp_path: Path
) -> None:
    result = await deliver_to(receiver, str(tmp_path / "missing.pem"))

    assert result.status is None
    assert result.error is not None
    assert result.error.startswith("webhook CA bundle unusable")


async def test_connection_refused_reported_not_raised(ca_bundle: str) -> None:
    body, headers = signed_event(new_webhook_secret())
    result = await deliver(
        f"https://{RECEIVER_NAME}:1/",
        body,
        headers,
        resolver=loopback_resolver(),
        allow_private=True,
        ca_bundle=ca_bundle,
    )

    assert result.status is None
    assert result.error is not None
    assert result.error.startswith("connection failed")
