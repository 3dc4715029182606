"""Webhook secrets, signatures and headers."""

from __future__ import annotations

import hashlib
import hmac
import re

from rigway.gateway.webhooks.signing import delivery_headers, new_webhook_secret, signature_header
from rigway.webhooks import verify


def test_new_secret_is_whsec_and_64_hex() -> None:
    assert re.fullmatch(r"whsec_[0-9a-f]{64}", new_webhook_secret())


def test_new_secrets_differ() -> None:
    assert new_webhook_secret() != new_webhook_secret()


def test_signature_keyed_with_whole_secret_over_timestamp_dot_body() -> None:
    secret, body = "whsec_abc", b'{"type":"session.ended"}'
    expected = hmac.new(b"whsec_abc", b"1700000000." + body, hashlib.sha256).hexdigest()

    assert signature_header(secret, 1700000000, body) == f"sha256={expected}"


def test_headers_exactly_as_specified() -> None:
    headers = delivery_headers("session.ended", "dlv_1", 1700000000, "sha256=00")

    assert headers == {
        "Content-Type": "application/json",
        "X-Service-Event": "session.ended",
        "X-Service-Delivery": "dlv_1",
        "X-Service-Timestamp": "1700000000",
        "X-Service-Signature": "sha256=00",
    }


def test_signed_headers_verify_with_sdk() -> None:
    secret, body = new_webhook_secret(), b'{"id":"dlv_1","type":"session.started"}'
    signature = signature_header(secret, 1700000000, body)
    headers = delivery_headers("session.started", "dlv_1", 1700000000, signature)

    assert verify(body, headers, secret, now=1700000010) == {
        "id": "dlv_1",
        "type": "session.started",
    }
