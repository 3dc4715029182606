"""Webhook secrets, signatures and delivery headers (docs/api.md, "Webhook deliveries").

The signature is `sha256=` + hex HMAC-SHA256 over `f"{timestamp}."` + the raw body, keyed
with the whole secret string, `whsec_` included (docs/api.md, webhooks). Receivers
verify it with `rigway.webhooks.verify`.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = [
    "SECRET_PREFIX",
    "delivery_headers",
    "new_webhook_secret",
    "signature_header",
]

SECRET_PREFIX = "whsec_"  # noqa: S105 (a prefix, not a secret)
_SECRET_BYTES = 32


def new_webhook_secret() -> str:
    """A new secret: `whsec_` + 64 lower-case hex characters (32 random bytes).

    Hex rather than base64url: no `-` or `_` inside the value, so a double-click selects
    the whole secret and nothing needs escaping in a shell or a .env file.
    """
    return SECRET_PREFIX + secrets.token_hex(_SECRET_BYTES)


def signature_header(secret: str, timestamp: int, raw_body: bytes) -> str:
    """The X-Service-Signature value for a body signed at `timestamp` (Unix seconds)."""
    signed = f"{timestamp}.".encode("ascii") + raw_body
    digest = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def delivery_headers(
    event: str, delivery_id: str, timestamp: int, signature: str
) -> dict[str, str]:
    """Exactly the headers the specification names for a delivery."""
    return {
        "Content-Type": "application/json",
        "X-Service-Event": event,
        "X-Service-Delivery": delivery_id,
        "X-Service-Timestamp": str(timestamp),
        "X-Service-Signature": signature,
    }
